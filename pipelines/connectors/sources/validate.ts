/**
 * Credential validation against the external system, per integration type: done before an
 * integration is stored or its credentials change, by endpoint 6, and by every sync job before
 * it fetches anything. The answer says whether the platform rejected the credentials (400 to the
 * caller) or could not be asked (unavailable), and describes the account when they work.
 */
import { CommercePlatformClient } from './commerce-platform/client.ts'
import { ConnectorError, type HttpOptions } from './http.ts'
import { MarketplaceClient } from './marketplace/client.ts'
import { SearchAdsClient } from './search-ads/client.ts'
import { fromAdsError, socialAdsClient, tokenProblem } from './social-ads.ts'
import {
  appKeyMatches,
  type AccountInfo,
  type CommerceCredentials,
  type ConnectorEndpoints,
  type Credentials,
  type IntegrationType,
  type MarketplaceCredentials,
  type SearchAdsCredentials,
  type SocialAdsCredentials,
} from './types.ts'

export interface ConnectorDeps {
  endpoints: ConnectorEndpoints
  http?: HttpOptions
  now?: () => number
}

/** The parts of an integration's configuration the connectors read. */
export interface ConnectorConfig {
  api_version?: string
  site_id?: string
}

export type ValidationResult =
  | {
      ok: true
      /** The account's display name at the platform (stored as account_name when the type has none of its own). */
      accountName: string | null
      /** Platform-specific description of the account; never holds a secret. */
      account: Record<string, unknown>
    }
  | {
      ok: false
      /** rejected: the platform said no (400 to the caller); unavailable: it could not be asked. */
      kind: 'rejected' | 'unavailable'
      code: string
      message: string
      /** The connector error behind it, when there was one (keeps retry_after of a rate limit). */
      error?: ConnectorError
    }

export function commerceAccountInfo(a: { id: string; accountName: string; isActive: boolean; hosts: string[]; resources: Partial<Record<'catalog' | 'orders' | 'masterdata' | 'payments', boolean>> }): AccountInfo {
  return {
    account_name: a.accountName,
    account_id: a.id,
    is_active: a.isActive,
    hosts: a.hosts,
    apis_available: { catalog: !!a.resources.catalog, orders: !!a.resources.orders, masterdata: !!a.resources.masterdata, payments: !!a.resources.payments },
  }
}

function failure(err: unknown): ValidationResult {
  const e = err instanceof ConnectorError ? err : new ConnectorError('UNAVAILABLE', (err as Error).message)
  const rejected = e.code === 'INVALID_CREDENTIALS' || e.code === 'FORBIDDEN' || e.code === 'NOT_FOUND'
  return { ok: false, kind: rejected ? 'rejected' : 'unavailable', code: rejected ? 'INVALID_CREDENTIALS' : e.code, message: e.message, error: e }
}

export async function validateCredentials(type: IntegrationType, creds: Credentials, config: ConnectorConfig, deps: ConnectorDeps): Promise<ValidationResult> {
  try {
    switch (type) {
      case 'commerce_platform':
        return await validateCommerce(creds as CommerceCredentials, deps)
      case 'marketplace':
        return await validateMarketplace(creds as MarketplaceCredentials, config, deps)
      case 'search_ads':
        return await validateSearchAds(creds as SearchAdsCredentials, config, deps)
      case 'social_ads':
        return await validateSocialAds(creds as SocialAdsCredentials, config, deps)
    }
  } catch (err) {
    return failure(err)
  }
}

async function validateCommerce(c: CommerceCredentials, deps: ConnectorDeps): Promise<ValidationResult> {
  if (!appKeyMatches(c.app_key, c.account_name)) return { ok: false, kind: 'rejected', code: 'INVALID_APP_KEY', message: `the app key must have the form appkey-${c.account_name}-{hash}` }
  const a = await new CommercePlatformClient(deps.endpoints.commercePlatform, c, deps.http).account()
  if (a.accountName !== c.account_name) return { ok: false, kind: 'rejected', code: 'INVALID_CREDENTIALS', message: `the credentials belong to account ${a.accountName}, not ${c.account_name}` }
  if (!a.isActive) return { ok: false, kind: 'rejected', code: 'INVALID_CREDENTIALS', message: `account ${a.accountName} is not active` }
  return { ok: true, accountName: a.accountName, account: { ...commerceAccountInfo(a) } }
}

async function validateMarketplace(c: MarketplaceCredentials, config: ConnectorConfig, deps: ConnectorDeps): Promise<ValidationResult> {
  const client = new MarketplaceClient(deps.endpoints.marketplace, c, deps.http, deps.now)
  await client.authenticate()
  const me = await client.me()
  if (config.site_id && config.site_id !== me.site_id) return { ok: false, kind: 'rejected', code: 'INVALID_CREDENTIALS', message: `the seller is on site ${me.site_id}, not ${config.site_id}` }
  return { ok: true, accountName: me.nickname, account: { user_id: me.id, nickname: me.nickname, site_id: me.site_id } }
}

async function validateSearchAds(c: SearchAdsCredentials, config: ConnectorConfig, deps: ConnectorDeps): Promise<ValidationResult> {
  const a = await new SearchAdsClient(deps.endpoints.searchAds, c, deps.http, config.api_version, deps.now).customer()
  return { ok: true, accountName: a.descriptiveName ?? a.id, account: { customer_id: a.id, descriptive_name: a.descriptiveName ?? null, currency_code: a.currencyCode ?? null, time_zone: a.timeZone ?? null } }
}

async function validateSocialAds(c: SocialAdsCredentials, config: ConnectorConfig, deps: ConnectorDeps): Promise<ValidationResult> {
  let info
  try {
    info = await socialAdsClient(deps.endpoints.socialAds, c, config.api_version, deps.http).debugToken()
  } catch (err) {
    throw fromAdsError(err)
  }
  const problem = tokenProblem(info, c.app_id, (deps.now ?? Date.now)())
  if (problem) return { ok: false, kind: 'rejected', code: 'INVALID_CREDENTIALS', message: problem }
  return { ok: true, accountName: info.application, account: { app_id: info.app_id, application: info.application, scopes: info.scopes, expires_at: info.expires_at ? new Date(info.expires_at * 1000).toISOString() : null } }
}
