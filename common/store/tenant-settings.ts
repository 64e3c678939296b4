import type { Store } from './clickhouse.ts'
import { nextSeq } from './versions.ts'
import { iso } from '../time.ts'
import { resolveReference, type Reference, type ReferenceSetting } from '../reference-date.ts'

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

  /**
   * The tenant's currency, set to `candidate` first when it has none (the first order's currency).
   * Two writers racing on an unset currency both write; the later version wins and orders of the
   * loser's currency are refused from then on.
   */
  async currencyOrAdopt(tenantId: number, candidate: string): Promise<string> {
    const s = await this.get(tenantId)
    if (s.currency) return s.currency
    await this.put({ ...s, currency: candidate })
    return candidate
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
 * for the life of the process.
 */
export class TenantCurrencies {
  private readonly known = new Map<number, Promise<string>>()

  constructor(private readonly settings: TenantSettingsStore) {}

  /** The tenant's currency, adopting `candidate` when it has none. */
  of(tenantId: number, candidate: string): Promise<string> {
    let p = this.known.get(tenantId)
    if (!p) {
      p = this.settings.currencyOrAdopt(tenantId, candidate)
      this.known.set(tenantId, p)
      p.catch(() => this.known.delete(tenantId))
    }
    return p
  }
}
