/**
 * Client of the marketplace (services/simulators/marketplace/README.md documents the API): OAuth
 * client credentials for an access token and a refresh token; the access token is refreshed
 * before it expires and once more when an answer says it expired; refresh tokens are single-use.
 * Orders and buyers are searched by last update, ascending (`sort=date_asc`), with offset paging.
 */
import { z } from 'zod'
import { ConnectorError, requestJson, type HttpOptions } from '../http.ts'
import type { MarketplaceCredentials } from '../types.ts'

const tokenSchema = z.looseObject({ access_token: z.string(), expires_in: z.number(), refresh_token: z.string().optional(), user_id: z.coerce.number().optional() })
const meSchema = z.looseObject({ id: z.coerce.number(), nickname: z.string(), site_id: z.string(), status: z.looseObject({ site_status: z.string() }).optional() })
const searchSchema = z.looseObject({ results: z.array(z.unknown()), paging: z.looseObject({ total: z.number().int(), offset: z.number().int(), limit: z.number().int() }) })

export type MarketplaceUser = z.output<typeof meSchema>

export interface SearchQuery {
  offset: number
  limit: number
  updatedFrom?: number | null
  updatedTo?: number | null
}

const errorMessage = (body: unknown) => {
  const b = body as { error?: unknown; message?: unknown } | null
  return b && typeof b.message === 'string' ? `${String(b.error ?? 'error')}: ${b.message}` : null
}

/** Refresh this long before the token's stated expiry. */
const EXPIRY_MARGIN_MS = 60_000

export class MarketplaceClient {
  private readonly baseUrl: string
  private token: { access: string; refresh: string | null; expiresAt: number; userId: number | null } | null = null

  constructor(baseUrl: string, private readonly creds: MarketplaceCredentials, private readonly http: HttpOptions = {}, private readonly now: () => number = Date.now) {
    this.baseUrl = baseUrl.replace(/\/+$/, '')
  }

  /** Client-credentials grant: fails with INVALID_CREDENTIALS when the platform refuses the application. */
  async authenticate(): Promise<void> {
    await this.grant({ grant_type: 'client_credentials', client_id: this.creds.client_id, client_secret: this.creds.client_secret, redirect_uri: this.creds.redirect_uri })
  }

  private async grant(form: Record<string, string>): Promise<void> {
    let body: unknown
    try {
      body = await requestJson({ method: 'POST', url: `${this.baseUrl}/oauth/token`, form, what: 'marketplace token', errorMessage }, this.http)
    } catch (err) {
      // The token endpoint answers 400 invalid_client / invalid_grant for rejected credentials.
      if (err instanceof ConnectorError && err.status === 400) throw new ConnectorError('INVALID_CREDENTIALS', err.message, 400)
      throw err
    }
    const t = tokenSchema.safeParse(body)
    if (!t.success) throw new ConnectorError('BAD_RESPONSE', 'marketplace token: unexpected answer')
    this.token = { access: t.data.access_token, refresh: t.data.refresh_token ?? null, expiresAt: this.now() + t.data.expires_in * 1000, userId: t.data.user_id ?? null }
  }

  private async refresh(): Promise<void> {
    const refresh = this.token?.refresh
    if (refresh) {
      try {
        return await this.grant({ grant_type: 'refresh_token', client_id: this.creds.client_id, client_secret: this.creds.client_secret, refresh_token: refresh })
      } catch (err) {
        if (!(err instanceof ConnectorError) || err.code !== 'INVALID_CREDENTIALS') throw err
        // A used or revoked refresh token: start over with the application's credentials.
      }
    }
    await this.authenticate()
  }

  private async accessToken(): Promise<string> {
    if (!this.token) await this.authenticate()
    else if (this.token.expiresAt - EXPIRY_MARGIN_MS <= this.now()) await this.refresh()
    return this.token!.access
  }

  private async get(path: string, what: string, query: Record<string, string> = {}): Promise<unknown> {
    const qs = new URLSearchParams(query).toString()
    const call = async () =>
      requestJson({ url: `${this.baseUrl}${path}${qs ? `?${qs}` : ''}`, headers: { authorization: `Bearer ${await this.accessToken()}` }, what: `marketplace ${what}`, errorMessage }, this.http)
    try {
      return await call()
    } catch (err) {
      // Expired early (clock skew, revoked): refresh once and repeat.
      if (!(err instanceof ConnectorError) || err.code !== 'INVALID_CREDENTIALS') throw err
      await this.refresh()
      return call()
    }
  }

  /** The seller the application acts for. */
  async me(): Promise<MarketplaceUser> {
    const r = meSchema.safeParse(await this.get('/users/me', 'user'))
    if (!r.success) throw new ConnectorError('BAD_RESPONSE', 'marketplace user: unexpected answer')
    return r.data
  }

  async orders(sellerId: number, q: SearchQuery): Promise<{ items: unknown[]; total: number }> {
    const query = { seller: String(sellerId), offset: String(q.offset), limit: String(q.limit), sort: 'date_asc', ...range('order.date_last_updated', q) }
    return this.search('/orders/search', `orders at offset ${q.offset}`, query)
  }

  async customers(sellerId: number, q: SearchQuery): Promise<{ items: unknown[]; total: number }> {
    const query = { seller: String(sellerId), offset: String(q.offset), limit: String(q.limit), sort: 'date_asc', ...range('date_last_updated', q) }
    return this.search('/customers/search', `customers at offset ${q.offset}`, query)
  }

  private async search(path: string, what: string, query: Record<string, string>): Promise<{ items: unknown[]; total: number }> {
    const r = searchSchema.safeParse(await this.get(path, what, query))
    if (!r.success) throw new ConnectorError('BAD_RESPONSE', `marketplace ${what}: unexpected answer`)
    return { items: r.data.results, total: r.data.paging.total }
  }
}

function range(field: string, q: SearchQuery): Record<string, string> {
  const out: Record<string, string> = {}
  if (q.updatedFrom != null) out[`${field}.from`] = new Date(q.updatedFrom).toISOString()
  if (q.updatedTo != null) out[`${field}.to`] = new Date(q.updatedTo).toISOString()
  return out
}
