/**
 * What a sync job reads from an external system, the same for every platform: `verify` the
 * credentials, then `page` through one entity within a time window (last change in
 * [from, to)), each page already mapped to our contracts. The cursor is opaque to the job: it
 * stores it as its checkpoint and hands it back to resume. Listings are read by keyset on
 * (last change, id), never by offset (see "keyset paging" below).
 */
import { CommercePlatformClient } from './commerce-platform/client.ts'
import * as commerce from './commerce-platform/mapping.ts'
import { ConnectorError, type HttpOptions } from './http.ts'
import { MarketplaceClient } from './marketplace/client.ts'
import * as marketplace from './marketplace/mapping.ts'
import type { MappedCustomer, MappedOrder, MappedProduct } from './mapping.ts'
import { validateCredentials, type ConnectorConfig } from './validate.ts'
import { SYNCABLE_ENTITIES, type CommerceCredentials, type ConnectorEndpoints, type Credentials, type Entity, type IntegrationType, type MarketplaceCredentials } from './types.ts'

export interface SyncWindow {
  /** Inclusive; null: from the beginning. */
  from: number | null
  /** Exclusive. */
  to: number
}

export interface SourcePage {
  products: MappedProduct[]
  customers: MappedCustomer[]
  orders: MappedOrder[]
  /** Records that could not be mapped (missing fields, bad times). */
  invalid: { externalId: string | null; reason: string }[]
  /** Raw records on the page. */
  received: number
  /** The platform's count of the whole listing, when it gives one. */
  total: number | null
  /** null: this was the last page. */
  next: string | null
}

export interface SyncSource {
  readonly type: IntegrationType
  readonly entities: readonly Entity[]
  /** Checks the stored credentials with the platform; throws a ConnectorError (INVALID_CREDENTIALS…) when they fail. */
  verify(): Promise<void>
  page(entity: Entity, window: SyncWindow, cursor: string | null, size: number, products: ReadonlyMap<string, string>): Promise<SourcePage>
}

export interface SourceOptions {
  tenantId: number
  endpoints: ConnectorEndpoints
  http?: HttpOptions
  now?: () => number
}

/** Largest page each platform serves. */
export const MAX_PAGE_SIZE: Record<IntegrationType, number> = { commerce_platform: 100, marketplace: 50, search_ads: 1000, social_ads: 100 }

const emptyPage = (): SourcePage => ({ products: [], customers: [], orders: [], invalid: [], received: 0, total: null, next: null })

export function createSyncSource(type: IntegrationType, creds: Credentials, config: ConnectorConfig, opts: SourceOptions): SyncSource {
  switch (type) {
    case 'commerce_platform':
      return commerceSource(creds as CommerceCredentials, opts)
    case 'marketplace':
      return marketplaceSource(creds as MarketplaceCredentials, config, opts)
    default:
      // The ads platforms are validated, not synced: their sync checks the credentials only.
      return {
        type,
        entities: SYNCABLE_ENTITIES[type],
        verify: () => verifyWith(type, creds, config, opts),
        page: async () => emptyPage(),
      }
  }
}

async function verifyWith(type: IntegrationType, creds: Credentials, config: ConnectorConfig, opts: SourceOptions): Promise<void> {
  const r = await validateCredentials(type, creds, config, { endpoints: opts.endpoints, http: opts.http, now: opts.now })
  if (r.ok) return
  if (r.kind === 'unavailable') throw r.error ?? new ConnectorError('UNAVAILABLE', r.message)
  throw new ConnectorError('INVALID_CREDENTIALS', r.message)
}

function commerceSource(creds: CommerceCredentials, opts: SourceOptions): SyncSource {
  const client = new CommercePlatformClient(opts.endpoints.commercePlatform, creds, opts.http)
  const ctx = { tenantId: opts.tenantId, account: creds.account_name }
  return {
    type: 'commerce_platform',
    entities: SYNCABLE_ENTITIES.commerce_platform,
    verify: () => verifyWith('commerce_platform', creds, {}, opts),
    async page(entity, window, cursor, size, products) {
      const ks = parseCursor(cursor)
      const r = keysetRequest(window, ks, size, MAX_PAGE_SIZE.commerce_platform)
      const pageNo = r.skip / r.perPage + 1
      const q = { page: pageNo, perPage: r.perPage, updatedFrom: r.from, updatedTo: window.to }
      const p = entity === 'orders' ? await client.orders(q) : entity === 'customers' ? await client.customers(q) : await client.products(q)
      const keyOf = COMMERCE_KEYS[entity]
      const { fresh, next } = keysetStep(ks, p.items, p.items.length >= r.perPage && pageNo < p.pages, keyOf, `commerce platform ${entity}`)
      const out = emptyPage()
      out.received = fresh.length
      out.total = p.total
      out.next = p.items.length < r.perPage || pageNo >= p.pages ? null : next
      for (const raw of fresh) {
        if (entity === 'orders') collect(commerce.mapOrder(raw, ctx, products), out.orders, out.invalid)
        else if (entity === 'customers') collect(commerce.mapCustomer(raw, ctx), out.customers, out.invalid)
        else collect(commerce.mapProduct(raw), out.products, out.invalid)
      }
      return out
    },
  }
}

function marketplaceSource(creds: MarketplaceCredentials, config: ConnectorConfig, opts: SourceOptions): SyncSource {
  const client = new MarketplaceClient(opts.endpoints.marketplace, creds, opts.http, opts.now)
  let seller: { id: number; country: string | null } | null = null
  const sellerOf = async () => {
    if (!seller) {
      const me = await client.me()
      if (config.site_id && config.site_id !== me.site_id) throw new ConnectorError('INVALID_CREDENTIALS', `the seller is on site ${me.site_id}, not ${config.site_id}`)
      seller = { id: me.id, country: marketplace.countryOfSite(me.site_id) }
    }
    return seller
  }
  return {
    type: 'marketplace',
    entities: SYNCABLE_ENTITIES.marketplace,
    verify: async () => {
      await client.authenticate()
      await sellerOf()
    },
    async page(entity, window, cursor, size) {
      const s = await sellerOf()
      const ctx = { tenantId: opts.tenantId, account: String(s.id), country: s.country }
      const ks = parseCursor(cursor)
      const r = keysetRequest(window, ks, size, MAX_PAGE_SIZE.marketplace)
      const q = { offset: r.skip, limit: r.perPage, updatedFrom: r.from, updatedTo: window.to }
      const p = entity === 'orders' ? await client.orders(s.id, q) : entity === 'customers' ? await client.customers(s.id, q) : { items: [], total: 0 }
      const { fresh, next } = keysetStep(ks, p.items, p.items.length >= r.perPage && r.skip + p.items.length < p.total, MARKETPLACE_KEY, `marketplace ${entity}`)
      const out = emptyPage()
      out.received = fresh.length
      out.total = p.total
      out.next = p.items.length < r.perPage || r.skip + p.items.length >= p.total ? null : next
      for (const raw of fresh) {
        if (entity === 'orders') collect(marketplace.mapOrder(raw, ctx), out.orders, out.invalid)
        else collect(marketplace.mapCustomer(raw, ctx), out.customers, out.invalid)
      }
      return out
    },
  }
}

// ---- keyset paging ------------------------------------------------------------------------------
//
// Listings are read in ascending (last change, id) order and each page starts where the previous
// one ended: `updated_from` = the last change time read (inclusive), skipping the ids already read
// at exactly that time. Offset or page-number paging would skip a record whenever one before it
// changed during the sync (it leaves the window, everything after it moves up a place) while the
// watermark still moved past it. A record that changes during the sync leaves this window and is
// read by the next incremental sync (its new change time is after this window's end).
//
// Only when more records share one millisecond than a page holds does the cursor page through
// them by position (`skip`); a record among those that changes meanwhile can shift one past us.

/** The cursor: the last change time read and the ids read at exactly that time. */
interface Keyset {
  t: number
  ids: string[]
}

/** A record's (last change, id), or null when it has none the listing could be ordered by. */
type KeyOf = (raw: unknown) => { t: number; id: string } | null

const field = (raw: unknown, name: string): unknown => (raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>)[name] : undefined)

function keyBy(timeField: string, idField: string): KeyOf {
  return (raw) => {
    const time = field(raw, timeField)
    const id = field(raw, idField)
    const t = typeof time === 'string' ? Date.parse(time) : Number.NaN
    if (!Number.isFinite(t) || (typeof id !== 'string' && typeof id !== 'number')) return null
    return { t, id: String(id) }
  }
}

const COMMERCE_KEYS: Record<Entity, KeyOf> = { orders: keyBy('lastChange', 'orderId'), customers: keyBy('updatedIn', 'id'), products: keyBy('updatedAt', 'skuId') }
const MARKETPLACE_KEY = keyBy('last_updated', 'id')

/**
 * A stored cursor. Anything else (a page number or offset checkpointed before keyset paging)
 * starts the entity over from the window's start: what is read again is published again as
 * identical events, which consumers count once.
 */
function parseCursor(cursor: string | null): Keyset | null {
  if (!cursor) return null
  try {
    const c = JSON.parse(cursor) as Partial<Keyset>
    if (typeof c === 'object' && c !== null && Number.isFinite(c.t) && Array.isArray(c.ids) && c.ids.every((x) => typeof x === 'string')) return { t: c.t!, ids: c.ids }
  } catch {
    // not ours: start over
  }
  return null
}

/** The next request: from the cursor's time, a page that holds the ids read at that time and `size` more. */
function keysetRequest(window: SyncWindow, ks: Keyset | null, size: number, max: number): { from: number | null; perPage: number; skip: number } {
  const base = Math.max(1, Math.min(size, max))
  if (!ks) return { from: window.from, perPage: base, skip: 0 }
  const perPage = Math.min(max, base + ks.ids.length)
  if (ks.ids.length < perPage) return { from: ks.t, perPage, skip: 0 }
  return { from: ks.t, perPage: base, skip: Math.floor(ks.ids.length / base) * base }
}

/** The records of a page not read before, and the cursor after it. */
function keysetStep(ks: Keyset | null, items: unknown[], full: boolean, keyOf: KeyOf, what: string): { fresh: unknown[]; next: string } {
  const seen = new Set(ks?.ids ?? [])
  const fresh: unknown[] = []
  let t = ks?.t ?? null
  let ids = ks?.ids ?? []
  let keyed = 0
  for (const raw of items) {
    const k = keyOf(raw)
    if (k && ks && k.t === ks.t && seen.has(k.id)) continue
    fresh.push(raw)
    if (!k) continue
    keyed++
    if (t === null || k.t > t) {
      t = k.t
      ids = [k.id]
    } else if (k.t === t && !ids.includes(k.id)) ids = [...ids, k.id]
  }
  // Without a single record that says when it changed the cursor cannot move: give up rather than loop.
  if (full && keyed === 0) throw new ConnectorError('BAD_RESPONSE', `${what}: a page without last-change times; cannot page on`)
  // A full page of records already read (a listing whose order is not stable) would be asked for again and again.
  if (full && fresh.length === 0 && ks && t === ks.t && ids.length === ks.ids.length) throw new ConnectorError('BAD_RESPONSE', `${what}: the listing does not advance past ${new Date(ks.t).toISOString()}`)
  return { fresh, next: JSON.stringify({ t: t ?? 0, ids }) }
}

function collect<T>(m: commerce.Mapped<T>, into: T[], invalid: SourcePage['invalid']): void {
  if (m.ok) into.push(m.value)
  else invalid.push({ externalId: m.externalId, reason: m.reason })
}
