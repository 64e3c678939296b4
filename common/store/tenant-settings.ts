import type { Store } from './clickhouse.ts'
import { nextSeq } from './versions.ts'
import { iso } from '../time.ts'
import { resolveReference, type Reference, type ReferenceSetting } from '../reference-date.ts'
import { lruCache } from '../lru.ts'

/**
 * Tenant settings (`tenants`, migration 009): name, currency and reference date. A tenant without
 * a row has the defaults: no name (shown as `Tenant {id}`), no currency yet (its first order sets
 * it), reference date `now`.
 */
export interface TenantSettings {
  tenant_id: number
  tenant_name: string | null
  currency: string | null
  reference_date: ReferenceSetting
  /** ISO time of the last change; null for a tenant that never had one. */
  updated_at: string | null
}

export const defaultSettings = (tenantId: number): TenantSettings => ({ tenant_id: tenantId, tenant_name: null, currency: null, reference_date: 'now', updated_at: null })

export const displayName = (s: TenantSettings): string => s.tenant_name ?? `Tenant ${s.tenant_id}`

interface Row {
  tenant_id: number
  tenant_name: string | null
  currency: string | null
  reference_date: string
  updated_ms: number
}

export class TenantSettingsStore {
  constructor(
    private readonly store: Store,
    private readonly now: () => number = Date.now,
  ) {}

  async getMany(tenantIds: readonly number[]): Promise<Map<number, TenantSettings>> {
    const out = new Map<number, TenantSettings>()
    for (const t of tenantIds) out.set(t, defaultSettings(t))
    if (!tenantIds.length) return out
    const rs = await this.store.query({
      query: `SELECT tenant_id, tenant_name, currency, reference_date, toUnixTimestamp64Milli(updated_at) AS updated_ms
              FROM tenants FINAL WHERE tenant_id IN {t:Array(UInt64)}`,
      query_params: { t: tenantIds },
      format: 'JSONEachRow',
    })
    for (const r of await rs.json<Row>()) {
      const id = Number(r.tenant_id)
      out.set(id, { tenant_id: id, tenant_name: r.tenant_name, currency: r.currency, reference_date: r.reference_date as ReferenceSetting, updated_at: iso(Number(r.updated_ms)) })
    }
    return out
  }

  async get(tenantId: number): Promise<TenantSettings> {
    return (await this.getMany([tenantId])).get(tenantId)!
  }

  /** Writes the whole settings row (a new version); returns what is stored. */
  async put(s: Omit<TenantSettings, 'updated_at'>): Promise<TenantSettings> {
    const at = this.now()
    await this.store.insert({
      table: 'tenants',
      values: [{ tenant_id: s.tenant_id, tenant_name: s.tenant_name, currency: s.currency, reference_date: s.reference_date, updated_at: iso(at), version: nextSeq() }],
      format: 'JSONEachRow',
    })
    return { ...s, updated_at: iso(at) }
  }

  /** The currency of the tenant's stored orders (its earliest), for tenants from before settings existed; null without orders. */
  async storedCurrency(tenantId: number): Promise<string | null> {
    const rs = await this.store.query({
      query: 'SELECT argMin(currency, placed_at) AS c, count() AS n FROM orders WHERE tenant_id = {t:UInt64}',
      query_params: { t: tenantId },
      format: 'JSONEachRow',
    })
    const [row] = await rs.json<{ c: string; n: number }>()
    return row && Number(row.n) > 0 ? row.c : null
  }

  /**
   * The tenant's currency, set first when it has none: to its stored orders' currency (a tenant
   * from before settings existed), else to `candidate` (its first order's). Returns the currency
   * read back after the write: a caller whose candidate lost a race learns the winner. Callers in
   * one process serialise adoptions (the ingest API does); across processes the later write wins.
   */
  async currencyOrAdopt(tenantId: number, candidate: string): Promise<string> {
    const s = await this.get(tenantId)
    if (s.currency) return s.currency
    await this.put({ ...s, currency: (await this.storedCurrency(tenantId)) ?? candidate })
    return (await this.get(tenantId)).currency ?? candidate
  }

  /** The latest order event time of each tenant (its data's end); absent for a tenant without orders. */
  async dataEnd(tenantIds: readonly number[]): Promise<Map<number, number>> {
    const out = new Map<number, number>()
    if (!tenantIds.length) return out
    const rs = await this.store.query({
      query: `SELECT tenant_id, toUnixTimestamp64Milli(max(updated_at)) AS ms FROM orders WHERE tenant_id IN {t:Array(UInt64)} GROUP BY tenant_id`,
      query_params: { t: tenantIds },
      format: 'JSONEachRow',
    })
    for (const r of await rs.json<{ tenant_id: number; ms: number }>()) out.set(Number(r.tenant_id), Number(r.ms))
    return out
  }

  /** Each tenant's reference now: its setting resolved against the wall clock and its data's end. */
  async references(tenantIds: readonly number[], wallMs: number = this.now()): Promise<Map<number, Reference>> {
    const [settings, ends] = await Promise.all([this.getMany(tenantIds), this.dataEnd(tenantIds)])
    const out = new Map<number, Reference>()
    for (const t of tenantIds) out.set(t, resolveReference(settings.get(t)!.reference_date, { wallMs, dataEndMs: ends.get(t) ?? null }))
    return out
  }

  async reference(tenantId: number, wallMs: number = this.now()): Promise<Reference> {
    return (await this.references([tenantId], wallMs)).get(tenantId)!
  }
}

/**
 * Tenants' currencies for the consumers of the order topic: an order in another currency than its
 * tenant's is dead-lettered (`currency_mismatch`); a tenant without one adopts its first order's.
 * A tenant's currency cannot change once it has orders (the settings API refuses), so it is kept
 * for `ttlMs`, in an LRUCache of at most `maxTenants` (the least recently used tenant is dropped
 * first when it is full).
 */
/** A tenant's currency as the cache holds it: the lookup, and its answer once it has one. */
interface HeldCurrency {
  currency: Promise<string>
  settled?: string
}

export class TenantCurrencies {
  private readonly known
  /** Adoptions of this process, one at a time: the second of two racing first orders sees the first's. */
  private adopting: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly settings: TenantSettingsStore,
    now: () => number = Date.now,
    /** A currency changes only while its tenant has no orders (the settings API refuses otherwise); kept this long. */
    private readonly ttlMs = 60_000,
    maxTenants = 10_000,
  ) {
    this.known = lruCache<number, HeldCurrency>({ max: maxTenants, ttlMs, now })
  }

  /** The tenant's set currency, from the cache or the settings; null while it has none. */
  async current(tenantId: number): Promise<string | null> {
    const hit = this.known.get(tenantId)
    if (hit) return hit.currency
    const s = await this.settings.get(tenantId)
    if (s.currency) this.remember(tenantId, Promise.resolve(s.currency))
    return s.currency
  }

  /** The tenant's currency, adopting `candidate` when it has none. */
  of(tenantId: number, candidate: string): Promise<string> {
    const hit = this.known.get(tenantId)
    if (hit) return hit.currency
    const p = this.adopting.then(() => this.settings.currencyOrAdopt(tenantId, candidate))
    this.adopting = p.catch(() => undefined)
    this.remember(tenantId, p)
    p.catch(() => this.known.delete(tenantId))
    return p
  }

  /** The tenant's currency when this cache holds it already (no promise to wait for), else undefined: then `of`. */
  settled(tenantId: number): string | undefined {
    return this.known.get(tenantId)?.settled
  }

  forget(tenantId: number): void {
    this.known.delete(tenantId)
  }

  private remember(tenantId: number, currency: Promise<string>): void {
    if (this.ttlMs <= 0) return
    const entry: HeldCurrency = { currency }
    currency.then((c) => (entry.settled = c), () => undefined)
    this.known.set(tenantId, entry)
  }
}
