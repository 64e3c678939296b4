/**
 * State of the marketplace simulator: the registered OAuth applications (client id, secret,
 * redirect URI) and the seller each one acts for, issued access and refresh tokens with their
 * expiry, the seller's data (from the generator), rate-limit windows, faults, the request log.
 * Renders orders and buyers in the marketplace's shapes: numeric ids, money as JSON numbers in
 * pesos, times with the seller's UTC-03:00 offset.
 */
import { randomBytes } from 'node:crypto'
import { fromCents } from '../../../common/decimal.ts'
import { inRange, OrderView, type Dataset, type OrderAt, type SimCustomer, type TimeRange } from '../commerce-platform/dataset.ts'
import { datasetOf, type AccountTruth, type SharedPopulationOption, type TruthRow } from '../commerce-platform/shared-population.ts'
import { PlatformState, type PlatformStateOptions } from '../shared/platform-state.ts'

export interface SeedClient {
  clientId: string
  clientSecret: string
  redirectUri: string
}

export interface SellerOptions {
  userId: number
  nickname: string
  siteId: string
}

export interface IssuedToken {
  clientId: string
  expiresAt: number
}

/** `2024-03-01T09:30:00.000-03:00`: the marketplace answers in the seller's local time. */
export function localIso(ms: number): string {
  return `${new Date(ms - 3 * 3_600_000).toISOString().slice(0, -1)}-03:00`
}

/** Money in pesos as a JSON number, the way the marketplace sends it (e.g. 45000.5). */
const pesos = (cents: number) => Number(fromCents(BigInt(cents)))

export interface MarketplaceStateOptions extends PlatformStateOptions {
  seller: SellerOptions
  tokenTtlMs: number
  maxLimit: number
}

export class MarketplaceState extends PlatformState<MarketplaceStateOptions> {
  readonly clients = new Map<string, SeedClient>()
  readonly accessTokens = new Map<string, IssuedToken>()
  /** Refresh token → client; a refresh token is single-use (rotated on every refresh). */
  readonly refreshTokens = new Map<string, string>()
  private readonly view: OrderView

  /** `sharedTruth`: the person behind each buyer (by customer number), when the dataset is one side of a shared population. */
  constructor(opts: MarketplaceStateOptions, readonly data: Dataset, private readonly sharedTruth: AccountTruth[] | null = null) {
    super(opts)
    this.view = new OrderView(data.orders)
  }

  /** With `overlap`: the marketplace side of a population shared with the commerce-platform simulator. */
  static fromGenerator(opts: MarketplaceState['opts'], gen: { customers: number; seed: string | number; start: Date; end: Date } & SharedPopulationOption): MarketplaceState {
    const { data, truth } = datasetOf('marketplace', { ...gen, shippingShare: 0 })
    return new MarketplaceState(opts, data, truth)
  }

  /** The person behind each buyer, by buyer id; null without a shared population. */
  truth(): TruthRow[] | null {
    if (!this.sharedTruth) return null
    const buyers = new Map(this.data.customers.map((c) => [c.no, c]))
    return this.sharedTruth.map((t) => ({ source: t.source, id: String(this.buyerId(buyers.get(t.customer_id)!)), person_id: t.person_id }))
  }

  addClient(c: SeedClient): void {
    this.clients.set(c.clientId, { ...c })
  }

  // ---- OAuth ---------------------------------------------------------------------------------

  /** The client when id and secret match (and the redirect URI, when one is sent). */
  checkClient(clientId: unknown, clientSecret: unknown, redirectUri: unknown): SeedClient | string {
    const c = typeof clientId === 'string' ? this.clients.get(clientId) : undefined
    if (!c || c.clientSecret !== clientSecret) return 'invalid client_id or client_secret'
    if (redirectUri !== undefined && redirectUri !== c.redirectUri) return 'redirect_uri does not match the one registered for this application'
    return c
  }

  issue(clientId: string) {
    const accessToken = `APP_USR-${this.opts.seller.userId}-${randomBytes(12).toString('hex')}`
    const refreshToken = `TG-${randomBytes(16).toString('hex')}`
    this.accessTokens.set(accessToken, { clientId, expiresAt: this.opts.now() + this.opts.tokenTtlMs })
    this.refreshTokens.set(refreshToken, clientId)
    return {
      access_token: accessToken,
      token_type: 'bearer',
      expires_in: Math.floor(this.opts.tokenTtlMs / 1000),
      scope: 'offline_access read write',
      user_id: this.opts.seller.userId,
      refresh_token: refreshToken,
    }
  }

  /** Uses up a refresh token: the client it belonged to, or null. */
  redeemRefresh(refreshToken: unknown, clientId: unknown): string | null {
    if (typeof refreshToken !== 'string') return null
    const owner = this.refreshTokens.get(refreshToken)
    if (!owner || owner !== clientId) return null
    this.refreshTokens.delete(refreshToken)
    return owner
  }

  /** 'ok', 'expired' or 'invalid'. */
  checkAccess(token: string | null): { status: 'ok'; clientId: string } | { status: 'expired' | 'invalid' } {
    const t = token ? this.accessTokens.get(token) : undefined
    if (!t) return { status: 'invalid' }
    if (t.expiresAt <= this.opts.now()) return { status: 'expired' }
    return { status: 'ok', clientId: t.clientId }
  }

  /** Makes every issued access token expire now (tests of the refresh path). */
  expireAccessTokens(): void {
    for (const t of this.accessTokens.values()) t.expiresAt = this.opts.now()
  }

  // ---- data changes (tests) -----------------------------------------------------------------

  /** Cancels order `id` (a marketplace order id) at `at` (default now): its last update moves there. */
  cancelOrder(id: number, at = this.opts.now()): void {
    const o = this.data.orders.find((x) => orderIdOf(x.seq) === id)
    if (!o) throw new Error(`unknown order ${id}`)
    o.cancelledAt = at
    this.view.invalidate()
  }

  // ---- listings ------------------------------------------------------------------------------

  buyerId(c: SimCustomer): number {
    return c.marketplaceId && /^\d+$/.test(c.marketplaceId) ? Number(c.marketplaceId) : 100_000_000 + c.no
  }

  customersIn(r: TimeRange): SimCustomer[] {
    const now = this.opts.now()
    return this.data.customers.filter((c) => c.registeredAt <= now && inRange(c.updatedAt, r)).sort((a, b) => a.updatedAt - b.updatedAt || a.no - b.no)
  }

  ordersIn(r: { updated: TimeRange; created: TimeRange }): OrderAt[] {
    return this.view.at(this.opts.now()).filter((o) => inRange(o.lastChange, r.updated) && inRange(o.order.placedAt, r.created))
  }

  order(id: number): OrderAt | null {
    return this.view.at(this.opts.now()).find((o) => orderIdOf(o.order.seq) === id) ?? null
  }

  // ---- rendering -----------------------------------------------------------------------------

  renderBuyer(c: SimCustomer) {
    const digits = c.phone?.replace(/\D/g, '') ?? ''
    return {
      id: this.buyerId(c),
      nickname: `${(c.firstName ?? 'USER').split(' ')[0]!.toUpperCase()}${this.buyerId(c) % 100_000}`,
      first_name: c.firstName,
      last_name: c.lastName,
      email: c.email,
      phone: digits ? { area_code: null, number: digits } : null,
      identification: c.document ? { type: c.document.replace(/\D/g, '').length === 11 ? 'CUIL' : 'DNI', number: c.document.replace(/\D/g, '') } : null,
      address: { address: c.street, city: c.city, state: c.province, zip_code: c.postalCode },
      registration_date: localIso(c.registeredAt),
      last_updated: localIso(c.updatedAt),
    }
  }

  renderOrder(v: OrderAt) {
    const o = v.order
    const c = this.data.customers.find((x) => x.no === o.customerNo)!
    const status = v.cancelledAt !== null ? 'cancelled' : 'paid'
    const paid = v.valueCents
    return {
      id: orderIdOf(o.seq),
      status,
      status_detail: null,
      cancel_detail: v.cancelledAt !== null ? { group: 'buyer', code: 'buyer_cancel_express', description: 'Cancelled by the buyer', requested_by: 'buyer', date: localIso(v.cancelledAt) } : null,
      date_created: localIso(o.placedAt),
      date_closed: localIso(o.placedAt),
      last_updated: localIso(v.lastChange),
      total_amount: pesos(paid),
      paid_amount: v.cancelledAt !== null ? 0 : pesos(paid),
      currency_id: 'ARS',
      buyer: { id: this.buyerId(c), nickname: this.renderBuyer(c).nickname, first_name: c.firstName, last_name: c.lastName, email: c.email },
      seller: { id: this.opts.seller.userId },
      order_items: o.items.map((i) => ({
        item: { id: `${this.opts.seller.siteId}${1_000_000_000 + Number(i.sku.split('-')[1])}`, title: i.name, seller_sku: i.sku },
        quantity: i.quantity,
        unit_price: pesos(i.unitCents),
        full_unit_price: pesos(i.unitCents),
        currency_id: 'ARS',
      })),
      payments: [
        {
          id: 90_000_000_000 + o.seq,
          status: v.refund ? 'refunded' : v.cancelledAt !== null ? 'cancelled' : 'approved',
          transaction_amount: pesos(paid),
          transaction_amount_refunded: v.refund ? pesos(v.refund.cents) : 0,
          date_approved: localIso(o.placedAt),
          date_last_modified: localIso(v.refund?.at ?? v.cancelledAt ?? o.placedAt),
        },
      ],
      shipping: { id: 40_000_000_000 + o.seq, status: v.deliveredAt !== null ? 'delivered' : v.cancelledAt !== null ? 'cancelled' : 'ready_to_ship', date_delivered: v.deliveredAt !== null ? localIso(v.deliveredAt) : null },
      tags: [status, ...(v.deliveredAt !== null ? ['delivered'] : [])],
    }
  }

  snapshot() {
    return {
      seller: this.opts.seller,
      clients: [...this.clients.keys()],
      customers: this.data.customers.length,
      orders: this.data.orders.length,
      tokens: { access: this.accessTokens.size, refresh: this.refreshTokens.size, ttl_ms: this.opts.tokenTtlMs },
      faults: this.faults,
      rateLimit: { requests: this.window.limit, windowMs: this.window.windowMs },
      requests: this.requestLog.length,
    }
  }
}

/** Marketplace order ids: 16-digit numbers. */
export const orderIdOf = (seq: number) => 2_000_000_000_000_000 + seq
