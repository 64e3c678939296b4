/**
 * What a sync job reads from an external system, the same for every platform: `verify` the
 * credentials, then `page` through one entity within a time window (last change in
 * [from, to)), each page already mapped to our contracts. The cursor is opaque to the job: it
 * stores it as its checkpoint and hands it back to resume.
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
      const pageNo = cursor ? Number(cursor) : 1
      const q = { page: pageNo, perPage: Math.min(size, MAX_PAGE_SIZE.commerce_platform), updatedFrom: window.from, updatedTo: window.to }
      const p = entity === 'orders' ? await client.orders(q) : entity === 'customers' ? await client.customers(q) : await client.products(q)
      const out = emptyPage()
      out.received = p.items.length
      out.total = p.total
      out.next = pageNo < p.pages && p.items.length > 0 ? String(pageNo + 1) : null
      for (const raw of p.items) {
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
      const offset = cursor ? Number(cursor) : 0
      const q = { offset, limit: Math.min(size, MAX_PAGE_SIZE.marketplace), updatedFrom: window.from, updatedTo: window.to }
      const p = entity === 'orders' ? await client.orders(s.id, q) : entity === 'customers' ? await client.customers(s.id, q) : { items: [], total: 0 }
      const out = emptyPage()
      out.received = p.items.length
      out.total = p.total
      out.next = p.items.length > 0 && offset + p.items.length < p.total ? String(offset + p.items.length) : null
      for (const raw of p.items) {
        if (entity === 'orders') collect(marketplace.mapOrder(raw, ctx), out.orders, out.invalid)
        else collect(marketplace.mapCustomer(raw, ctx), out.customers, out.invalid)
      }
      return out
    },
  }
}

function collect<T>(m: commerce.Mapped<T>, into: T[], invalid: SourcePage['invalid']): void {
  if (m.ok) into.push(m.value)
  else invalid.push({ externalId: m.externalId, reason: m.reason })
}
