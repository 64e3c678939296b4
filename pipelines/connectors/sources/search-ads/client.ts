/**
 * Client of the search-ads platform (services/simulators/search-ads/README.md documents the API):
 * the refresh token is exchanged for a short-lived access token at `/oauth2/token`; every API call
 * carries it with the `developer-token` header, under `/{version}/`. Used to validate and test a
 * tenant's credentials; conversions and customer-match listings are paged with page tokens.
 */
import { z } from 'zod'
import { ConnectorError, requestJson, type HttpOptions } from '../http.ts'
import type { SearchAdsCredentials } from '../types.ts'

export const DEFAULT_SEARCH_ADS_VERSION = 'v17'

const tokenSchema = z.looseObject({ access_token: z.string(), expires_in: z.number() })
const customerSchema = z.looseObject({ id: z.coerce.string(), descriptiveName: z.string().nullish(), currencyCode: z.string().nullish(), timeZone: z.string().nullish(), status: z.string().nullish() })
const listSchema = z.looseObject({ resourceNames: z.array(z.string()).default([]) })
const pageSchema = z.looseObject({ results: z.array(z.unknown()).default([]), nextPageToken: z.string().optional(), totalResultsCount: z.coerce.number().optional() })

export type SearchAdsAccount = z.output<typeof customerSchema>

const errorMessage = (body: unknown) => {
  const b = body as { error?: unknown; error_description?: unknown } | null
  if (!b) return null
  if (typeof b.error === 'string') return `${b.error}${typeof b.error_description === 'string' ? `: ${b.error_description}` : ''}`
  const e = b.error as { status?: unknown; message?: unknown } | undefined
  return e && typeof e.message === 'string' ? `${String(e.status ?? 'ERROR')}: ${e.message}` : null
}

/** Customer ids are 10 digits; people write them with dashes (123-456-7890). */
export const customerIdDigits = (id: string) => id.replace(/[-\s]/g, '')

export class SearchAdsClient {
  private readonly baseUrl: string
  private access: { token: string; expiresAt: number } | null = null

  constructor(
    baseUrl: string,
    private readonly creds: SearchAdsCredentials,
    private readonly http: HttpOptions = {},
    private readonly version = DEFAULT_SEARCH_ADS_VERSION,
    private readonly now: () => number = Date.now,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '')
  }

  private async accessToken(): Promise<string> {
    if (this.access && this.access.expiresAt - 60_000 > this.now()) return this.access.token
    let body: unknown
    try {
      body = await requestJson({ method: 'POST', url: `${this.baseUrl}/oauth2/token`, form: { grant_type: 'refresh_token', refresh_token: this.creds.refresh_token }, what: 'search ads token', errorMessage }, this.http)
    } catch (err) {
      if (err instanceof ConnectorError && err.status === 400) throw new ConnectorError('INVALID_CREDENTIALS', err.message, 400)
      throw err
    }
    const t = tokenSchema.safeParse(body)
    if (!t.success) throw new ConnectorError('BAD_RESPONSE', 'search ads token: unexpected answer')
    this.access = { token: t.data.access_token, expiresAt: this.now() + t.data.expires_in * 1000 }
    return this.access.token
  }

  private async get(path: string, what: string, query: Record<string, string> = {}): Promise<unknown> {
    const qs = new URLSearchParams(query).toString()
    const headers = { authorization: `Bearer ${await this.accessToken()}`, 'developer-token': this.creds.developer_token, 'login-customer-id': customerIdDigits(this.creds.customer_id) }
    return requestJson({ url: `${this.baseUrl}/${this.version}${path}${qs ? `?${qs}` : ''}`, headers, what: `search ads ${what}`, errorMessage }, this.http)
  }

  async accessibleCustomers(): Promise<string[]> {
    const r = listSchema.parse(await this.get('/customers:listAccessibleCustomers', 'accessible customers'))
    return r.resourceNames.map((n) => n.replace(/^customers\//, ''))
  }

  async customer(): Promise<SearchAdsAccount> {
    const r = customerSchema.safeParse(await this.get(`/customers/${customerIdDigits(this.creds.customer_id)}`, 'customer'))
    if (!r.success) throw new ConnectorError('BAD_RESPONSE', 'search ads customer: unexpected answer')
    return r.data
  }

  async conversions(q: { pageSize: number; pageToken?: string | null; dateFrom?: string; dateTo?: string }): Promise<{ items: unknown[]; next: string | null; total: number | null }> {
    return this.page('conversions', q)
  }

  async customerMatchMembers(q: { pageSize: number; pageToken?: string | null; dateFrom?: string; dateTo?: string }): Promise<{ items: unknown[]; next: string | null; total: number | null }> {
    return this.page('customerMatchMembers', q)
  }

  private async page(kind: string, q: { pageSize: number; pageToken?: string | null; dateFrom?: string; dateTo?: string }) {
    const query: Record<string, string> = { pageSize: String(q.pageSize) }
    if (q.pageToken) query.pageToken = q.pageToken
    if (q.dateFrom) query.dateFrom = q.dateFrom
    if (q.dateTo) query.dateTo = q.dateTo
    const r = pageSchema.parse(await this.get(`/customers/${customerIdDigits(this.creds.customer_id)}/${kind}`, kind, query))
    return { items: r.results, next: r.nextPageToken ?? null, total: r.totalResultsCount ?? null }
  }
}
