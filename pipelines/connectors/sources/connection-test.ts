/**
 * Endpoint 7 (test connection): authenticate, then call each API the integration uses with the
 * smallest page, timing every call. `connected` when all answer, `degraded` when some fail,
 * `rejected` when the platform refuses the credentials, `failed` when nothing answers.
 */
import { CommercePlatformClient } from './commerce-platform/client.ts'
import { ConnectorError, formatMs } from './http.ts'
import { MarketplaceClient } from './marketplace/client.ts'
import { SearchAdsClient } from './search-ads/client.ts'
import { fromAdsError, socialAdsClient, tokenProblem } from './social-ads.ts'
import type { CommerceCredentials, Credentials, IntegrationType, MarketplaceCredentials, SearchAdsCredentials, SocialAdsCredentials } from './types.ts'
import type { ConnectorConfig, ConnectorDeps } from './validate.ts'

export interface EndpointResult {
  status: 'ok' | 'error'
  response_time: string
  error?: string
}

export interface ConnectionTest {
  status: 'connected' | 'degraded' | 'failed' | 'rejected'
  response_time: string
  endpoints_tested: Record<string, EndpointResult>
  /** Why the credentials were rejected or nothing answered. */
  message: string | null
}

type Probe = () => Promise<unknown>

async function probe(run: Probe): Promise<EndpointResult & { err?: ConnectorError }> {
  const t0 = performance.now()
  try {
    await run()
    return { status: 'ok', response_time: formatMs(performance.now() - t0) }
  } catch (err) {
    const e = err instanceof ConnectorError ? err : fromAdsError(err)
    return { status: 'error', response_time: formatMs(performance.now() - t0), error: e.message, err: e }
  }
}

/** `auth` runs first: its rejection ends the test; the named probes then run in order. */
async function runProbes(auth: Probe, probes: Record<string, Probe>): Promise<ConnectionTest> {
  const t0 = performance.now()
  const a = await probe(auth)
  if (a.err) {
    const rejected = a.err.code === 'INVALID_CREDENTIALS' || a.err.code === 'FORBIDDEN'
    return { status: rejected ? 'rejected' : 'failed', response_time: formatMs(performance.now() - t0), endpoints_tested: {}, message: a.err.message }
  }
  const endpoints: Record<string, EndpointResult> = {}
  for (const [name, p] of Object.entries(probes)) {
    const { err: _e, ...r } = await probe(p)
    endpoints[name] = r
  }
  const failed = Object.values(endpoints).filter((e) => e.status === 'error').length
  const status = failed === 0 ? 'connected' : failed === Object.keys(endpoints).length ? 'failed' : 'degraded'
  return { status, response_time: formatMs(performance.now() - t0), endpoints_tested: endpoints, message: failed ? `${failed} of ${Object.keys(endpoints).length} endpoints failed` : null }
}

export async function testConnection(type: IntegrationType, creds: Credentials, config: ConnectorConfig, deps: ConnectorDeps): Promise<ConnectionTest> {
  const http = { ...deps.http, maxAttempts: 1 }
  switch (type) {
    case 'commerce_platform': {
      const c = new CommercePlatformClient(deps.endpoints.commercePlatform, creds as CommerceCredentials, http)
      const q = { page: 1, perPage: 1 }
      return runProbes(() => c.account(), { catalog: () => c.products(q), orders: () => c.orders(q), masterdata: () => c.customers(q) })
    }
    case 'marketplace': {
      const c = new MarketplaceClient(deps.endpoints.marketplace, creds as MarketplaceCredentials, http, deps.now)
      let seller = 0
      return runProbes(async () => (seller = (await c.me()).id), { orders: () => c.orders(seller, { offset: 0, limit: 1 }), customers: () => c.customers(seller, { offset: 0, limit: 1 }) })
    }
    case 'search_ads': {
      const c = new SearchAdsClient(deps.endpoints.searchAds, creds as SearchAdsCredentials, http, config.api_version, deps.now)
      return runProbes(() => c.customer(), { conversions: () => c.conversions({ pageSize: 1 }), customer_match: () => c.customerMatchMembers({ pageSize: 1 }) })
    }
    case 'social_ads': {
      const s = creds as SocialAdsCredentials
      const c = socialAdsClient(deps.endpoints.socialAds, s, config.api_version, http)
      return runProbes(
        async () => {
          const problem = tokenProblem(await c.debugToken(), s.app_id, (deps.now ?? Date.now)())
          if (problem) throw new ConnectorError('INVALID_CREDENTIALS', `social ads: ${problem}`)
        },
        { ad_accounts: () => c.listAdAccounts(['id']) },
      )
    }
  }
}
