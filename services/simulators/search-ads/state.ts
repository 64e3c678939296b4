/**
 * State of the search-ads simulator: developer tokens, OAuth refresh tokens and the ad accounts
 * ("customers", 10-digit ids) each may reach, short-lived access tokens, and per account the
 * conversions (orders attributed to ad clicks) and customer-match members derived from the
 * generator's shop. Rate-limit windows, faults and the request log as in the other simulators.
 */
import { createHash, randomBytes } from 'node:crypto'
import { fromCents } from '../../../common/decimal.ts'
import { hashValue } from '../../../pipelines/audience-sync/ads-platform/hashing.ts'
import { buildDataset, inRange, unitHash, type Dataset, type TimeRange } from '../commerce-platform/dataset.ts'
import { PlatformState, type PlatformStateOptions } from '../shared/platform-state.ts'

export interface SeedAccount {
  /** 10 digits (dashes allowed: 123-456-7890). */
  id: string
  descriptiveName?: string
  currencyCode?: string
  timeZone?: string
}

export interface SeedRefreshToken {
  refreshToken: string
  /** Accounts the token's user can reach; default all. */
  customerIds?: string[]
}

export const digits = (id: string) => id.replace(/-/g, '')

/** `2024-03-01 09:30:00+00:00`, the platform's conversion time format. */
export const adsTime = (ms: number) => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')}+00:00`

export interface Conversion {
  orderNo: number
  at: number
  valueCents: number
  gclid: string
}

export interface SearchAdsStateOptions extends PlatformStateOptions {
  accessTokenTtlMs: number
  maxPageSize: number
  oauthClient: { clientId: string; clientSecret: string } | null
}

export class SearchAdsState extends PlatformState<SearchAdsStateOptions> {
  readonly developerTokens = new Set<string>()
  readonly refreshTokens = new Map<string, string[] | null>()
  readonly accessTokens = new Map<string, { refreshToken: string; expiresAt: number }>()
  readonly accounts = new Map<string, Required<SeedAccount>>()
  readonly conversions: Conversion[]

  constructor(opts: SearchAdsStateOptions, readonly data: Dataset, attributedShare: number, seed: string | number) {
    super(opts)
    this.conversions = data.orders
      .filter((o) => unitHash(`${seed}|click|${o.seq}`) < attributedShare)
      .map((o) => ({ orderNo: o.seq, at: o.placedAt, valueCents: o.itemsCents, gclid: `Cj0KCQ${createHash('sha256').update(`${seed}|gclid|${o.seq}`).digest('base64url').slice(0, 40)}` }))
      .sort((a, b) => a.at - b.at || a.orderNo - b.orderNo)
  }

  static fromGenerator(opts: SearchAdsState['opts'], gen: { customers: number; seed: string | number; start: Date; end: Date; attributedShare: number }): SearchAdsState {
    return new SearchAdsState(opts, buildDataset({ ...gen, shippingShare: 0 }), gen.attributedShare, gen.seed)
  }

  addAccount(a: SeedAccount): void {
    const id = digits(a.id)
    if (!/^\d{10}$/.test(id)) throw new Error(`an account id has 10 digits, got '${a.id}'`)
    this.accounts.set(id, { id, descriptiveName: a.descriptiveName ?? `Cuenta ${id}`, currencyCode: a.currencyCode ?? 'ARS', timeZone: a.timeZone ?? 'America/Argentina/Buenos_Aires' })
  }

  addRefreshToken(t: SeedRefreshToken): void {
    this.refreshTokens.set(t.refreshToken, t.customerIds ? t.customerIds.map(digits) : null)
  }

  /** A new access token for a known refresh token, or null. */
  exchange(refreshToken: unknown): { access_token: string; expires_in: number; scope: string; token_type: 'Bearer' } | null {
    if (typeof refreshToken !== 'string' || !this.refreshTokens.has(refreshToken)) return null
    const token = `ya29.sim-${randomBytes(18).toString('base64url')}`
    this.accessTokens.set(token, { refreshToken, expiresAt: this.opts.now() + this.opts.accessTokenTtlMs })
    return { access_token: token, expires_in: Math.floor(this.opts.accessTokenTtlMs / 1000) - 1, scope: 'https://ads.example.com/auth/adwords', token_type: 'Bearer' }
  }

  /** The refresh token behind a live access token; 'expired' or null when there is none. */
  access(token: string | null): string | 'expired' | null {
    const t = token ? this.accessTokens.get(token) : undefined
    if (!t) return null
    return t.expiresAt <= this.opts.now() ? 'expired' : t.refreshToken
  }

  canReach(refreshToken: string, customerId: string): boolean {
    const allowed = this.refreshTokens.get(refreshToken)
    return this.accounts.has(customerId) && (allowed === null || allowed === undefined || allowed.includes(customerId))
  }

  reachable(refreshToken: string): string[] {
    return [...this.accounts.keys()].filter((id) => this.canReach(refreshToken, id))
  }

  conversionsIn(r: TimeRange): Conversion[] {
    const now = this.opts.now()
    return this.conversions.filter((c) => c.at <= now && inRange(c.at, r))
  }

  /** Customer-match members: hashed e-mail and phone of customers who bought after a click. */
  membersIn(r: TimeRange) {
    const first = new Map<number, number>()
    for (const c of this.conversionsIn({})) {
      const o = this.data.orders[c.orderNo - 1]
      if (o && !first.has(o.customerNo)) first.set(o.customerNo, c.at)
    }
    return [...first.entries()]
      .filter(([, at]) => inRange(at, r))
      .sort((a, b) => a[1] - b[1] || a[0] - b[0])
      .map(([no, at]) => {
        const c = this.data.customers[no - 1]!
        return { hashedEmail: hashValue('EMAIL', c.email) || null, hashedPhoneNumber: hashValue('PHONE', c.phone) || null, addedDateTime: adsTime(at) }
      })
  }

  renderConversion(c: Conversion, customerId: string) {
    return {
      resourceName: `customers/${customerId}/conversions/${c.orderNo}`,
      orderId: `ORD-${c.orderNo}`,
      gclid: c.gclid,
      conversionAction: `customers/${customerId}/conversionActions/900001`,
      conversionDateTime: adsTime(c.at),
      conversionValue: Number(fromCents(BigInt(c.valueCents))),
      currencyCode: 'ARS',
    }
  }

  snapshot() {
    return {
      accounts: [...this.accounts.values()],
      developerTokens: this.developerTokens.size,
      refreshTokens: this.refreshTokens.size,
      conversions: this.conversions.length,
      faults: this.faults,
      rateLimit: { requests: this.window.limit, windowMs: this.window.windowMs },
      requests: this.requestLog.length,
    }
  }
}
