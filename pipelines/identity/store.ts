/**
 * The identity lane's tables (schemas/clickhouse/011_identity.sql) and what it reads of the
 * `customers` projection. Every value is a bound parameter.
 */
import { insertJsonRows, type Store } from '../../common/store/clickhouse.ts'
import { nextSeq, nextVersion } from '../../common/store/versions.ts'
import { iso } from '../../common/time.ts'
import { identifierKey, identifiersOf, IDENTIFIER_KINDS, type IdentifierKind } from './identifiers.ts'
import { DEFAULT_IDENTITY_SETTINGS, type Exclusion, type IdentitySettings, type SourceCustomer } from './graph.ts'

export class IdentityStore {
  constructor(
    private readonly store: Store,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Every customer of the tenant (or `only` these) with its identifiers, from the latest profile
   * of each. First seen: the profile's created_at, else its first order (neither: last, and the
   * smaller id decides); facts of the data, so the same customers resolve the same way whatever
   * order their events arrived in.
   */
  async sourceCustomers(tenantId: number, only?: readonly number[]): Promise<SourceCustomer[]> {
    const these = only ? 'AND customer_id IN {ids:Array(UInt64)}' : ''
    const rs = await this.store.query({
      // First seen never reads updated_at: it moves with every update, and the profile id with it.
      query: `SELECT c.customer_id AS customer_id, c.email AS email, c.phone AS phone, c.national_id AS national_id, c.source_ids AS source_ids,
                     toUnixTimestamp64Milli(least(coalesce(c.created_at, toDateTime64('2299-12-31', 3, 'UTC')), coalesce(o.first_at, toDateTime64('2299-12-31', 3, 'UTC')))) AS first_seen
              FROM (SELECT customer_id, email, phone, national_id, source_ids, created_at FROM customers FINAL WHERE tenant_id = {t:UInt64} ${these}) AS c
              LEFT JOIN (SELECT customer_id, min(placed_at) AS first_at FROM orders WHERE tenant_id = {t:UInt64} ${these} GROUP BY customer_id) AS o ON o.customer_id = c.customer_id
              SETTINGS join_use_nulls = 1`,
      query_params: { t: tenantId, ids: only ?? [] },
      format: 'JSONEachRow',
    })
    const rows = await rs.json<{ customer_id: string; email: string | null; phone: string | null; national_id: string | null; source_ids: { source: string; id: string }[] | [string, string][]; first_seen: string }>()
    return rows.map((r) => ({
      customerId: Number(r.customer_id),
      firstSeenAt: Number(r.first_seen),
      identifiers: identifiersOf({
        email: r.email,
        phone: r.phone,
        national_id: r.national_id,
        source_ids: (r.source_ids ?? []).map((s) => (Array.isArray(s) ? { source: s[0], id: s[1] } : s)),
      }),
    }))
  }

  /** The customers a profile holds now. */
  async membersOf(tenantId: number, profileId: number): Promise<number[]> {
    const rs = await this.store.query({
      query: 'SELECT customer_id FROM customer_profiles FINAL WHERE tenant_id = {t:UInt64} AND profile_id = {p:UInt64} ORDER BY customer_id',
      query_params: { t: tenantId, p: profileId },
      format: 'JSONCompactEachRow',
    })
    return (await rs.json<[string]>()).map(([c]) => Number(c))
  }

  /** The stored profile of each customer of the tenant that has one. */
  async profiles(tenantId: number): Promise<Map<number, number>> {
    const rs = await this.store.query({
      query: 'SELECT customer_id, profile_id FROM customer_profiles FINAL WHERE tenant_id = {t:UInt64}',
      query_params: { t: tenantId },
      format: 'JSONCompactEachRow',
    })
    return new Map((await rs.json<[string, string]>()).map(([c, p]) => [Number(c), Number(p)]))
  }

  async writeProfiles(tenantId: number, assignments: readonly [customerId: number, profileId: number][]): Promise<void> {
    if (!assignments.length) return
    const at = iso(this.now())
    const version = nextVersion()
    for (let i = 0; i < assignments.length; i += 200_000) {
      await insertJsonRows(this.store, 'customer_profiles', assignments.slice(i, i + 200_000).map(([customer_id, profile_id]) => ({ tenant_id: tenantId, customer_id, profile_id, updated_at: at, version })))
    }
  }

  async exclusions(tenantId: number): Promise<Exclusion[]> {
    const rs = await this.store.query({
      query: 'SELECT customer_id, identifier FROM identity_exclusions FINAL WHERE tenant_id = {t:UInt64} AND active = 1',
      query_params: { t: tenantId },
      format: 'JSONCompactEachRow',
    })
    return (await rs.json<[string, string]>()).map(([c, identifier]) => ({ customerId: Number(c), identifier }))
  }

  async exclude(tenantId: number, e: Exclusion): Promise<void> {
    await this.store.insert({
      table: 'identity_exclusions',
      format: 'JSONEachRow',
      values: [{ tenant_id: tenantId, customer_id: e.customerId, identifier: e.identifier, created_at: iso(this.now()), active: 1, version: nextSeq() }],
    })
  }

  async settings(tenantId: number): Promise<IdentitySettings> {
    const rs = await this.store.query({
      query: 'SELECT merge_kinds, max_customers_per_identifier FROM identity_settings FINAL WHERE tenant_id = {t:UInt64}',
      query_params: { t: tenantId },
      format: 'JSONEachRow',
    })
    const [row] = await rs.json<{ merge_kinds: string[]; max_customers_per_identifier: number }>()
    if (!row) return DEFAULT_IDENTITY_SETTINGS
    return {
      ...DEFAULT_IDENTITY_SETTINGS,
      mergeKinds: row.merge_kinds.filter((k): k is IdentifierKind => (IDENTIFIER_KINDS as readonly string[]).includes(k)),
      maxCustomersPerIdentifier: Number(row.max_customers_per_identifier),
    }
  }

  async putSettings(tenantId: number, s: IdentitySettings): Promise<void> {
    await this.store.insert({
      table: 'identity_settings',
      format: 'JSONEachRow',
      values: [{ tenant_id: tenantId, merge_kinds: [...s.mergeKinds], max_customers_per_identifier: s.maxCustomersPerIdentifier, updated_at: iso(this.now()), version: nextSeq() }],
    })
  }

  /**
   * The tenant's last resolution: what it refused to link (too many customers carry them), its
   * store-clock start (0: none recorded) and the settings version it applied; null when never resolved.
   */
  async lastResolution(tenantId: number): Promise<{ blocked: { identifier: string; customers: number }[]; ingestMark: number; settingsVersion: number; customers: number } | null> {
    const rs = await this.store.query({
      query: 'SELECT blocked, toUnixTimestamp64Milli(ingest_mark) AS ingest_mark, settings_version, customers FROM identity_resolutions FINAL WHERE tenant_id = {t:UInt64}',
      query_params: { t: tenantId },
      format: 'JSONEachRow',
    })
    const [row] = await rs.json<{ blocked: [string, string][] | { identifier: string; customers: string }[]; ingest_mark: string; settings_version: string; customers: string }>()
    if (!row) return null
    return {
      blocked: row.blocked.map((b) => (Array.isArray(b) ? { identifier: b[0], customers: Number(b[1]) } : { identifier: b.identifier, customers: Number(b.customers) })),
      ingestMark: Number(row.ingest_mark),
      settingsVersion: Number(row.settings_version),
      customers: Number(row.customers),
    }
  }

  /**
   * `startedAt`: before the resolution read anything, so a change during it makes the tenant due
   * again; `ingestMark`: the same instant on the store's clock, from which the next resolution
   * reads the customers written since.
   */
  async recordResolution(
    tenantId: number,
    r: { startedAt: number; ingestMark: number; settingsVersion: number; mode: 'full' | 'incremental'; customers: number; profiles: number; blocked: { identifier: string; customers: number }[] },
  ): Promise<void> {
    await this.store.insert({
      table: 'identity_resolutions',
      format: 'JSONEachRow',
      values: [{
        tenant_id: tenantId, resolved_at: iso(r.startedAt), customers: r.customers, profiles: r.profiles, blocked: r.blocked.map((b) => ({ identifier: b.identifier, customers: b.customers })),
        ingest_mark: iso(r.ingestMark), settings_version: r.settingsVersion, mode: r.mode, version: nextSeq(),
      }],
    })
  }

  async customerCount(tenantId: number): Promise<number> {
    const rs = await this.store.query({ query: 'SELECT uniqExact(customer_id) FROM customers WHERE tenant_id = {t:UInt64}', query_params: { t: tenantId }, format: 'JSONCompactEachRow' })
    return Number((await rs.json<[string]>())[0]![0])
  }

  async profileCount(tenantId: number): Promise<number> {
    const rs = await this.store.query({ query: 'SELECT uniqExact(profile_id) FROM customer_profiles FINAL WHERE tenant_id = {t:UInt64}', query_params: { t: tenantId }, format: 'JSONCompactEachRow' })
    return Number((await rs.json<[string]>())[0]![0])
  }

  /** The store's clock, epoch ms: the projections' ingested_at is written by it. */
  async storeNow(): Promise<number> {
    const rs = await this.store.query({ query: 'SELECT toUnixTimestamp64Milli(now64(3))', format: 'JSONCompactEachRow' })
    return Number((await rs.json<[string]>())[0]![0])
  }

  /** The version of the tenant's identity settings (0: the defaults, never set). */
  async settingsVersion(tenantId: number): Promise<number> {
    const rs = await this.store.query({ query: 'SELECT max(version) FROM identity_settings WHERE tenant_id = {t:UInt64}', query_params: { t: tenantId }, format: 'JSONCompactEachRow' })
    return Number((await rs.json<[string]>())[0]?.[0] ?? 0)
  }

  /** Customers with a customers or orders row written at or after `sinceMs` (store clock), and those with an admin's split. */
  async changedCustomers(tenantId: number, sinceMs: number): Promise<number[]> {
    const rs = await this.store.query({
      query: `SELECT customer_id FROM customers WHERE tenant_id = {t:UInt64} AND ingested_at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')
              UNION DISTINCT SELECT customer_id FROM orders WHERE tenant_id = {t:UInt64} AND ingested_at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')
              UNION DISTINCT SELECT customer_id FROM identity_exclusions FINAL WHERE tenant_id = {t:UInt64}`,
      query_params: { t: tenantId, since: sinceMs },
      format: 'JSONCompactEachRow',
    })
    return [...new Set((await rs.json<[string]>()).map(([c]) => Number(c)))].sort((a, b) => a - b)
  }

  /** The identifiers the index holds for these customers (every customer of the tenant when `only` is absent). */
  async keysOf(tenantId: number, only?: readonly number[]): Promise<Map<number, Set<string>>> {
    const these = only ? 'AND customer_id IN {ids:Array(UInt64)}' : ''
    const rs = await this.store.query({
      query: `SELECT customer_id, identifier FROM identity_keys FINAL WHERE tenant_id = {t:UInt64} AND active = 1 ${these}`,
      query_params: { t: tenantId, ids: only ?? [] },
      format: 'JSONCompactEachRow',
    })
    const out = new Map<number, Set<string>>()
    for (const [c, k] of await rs.json<[string, string]>()) {
      const id = Number(c)
      if (!out.has(id)) out.set(id, new Set())
      out.get(id)!.add(k)
    }
    return out
  }

  /**
   * Writes the customers' identifiers to the index; those a customer no longer carries (per
   * `stored`) are deactivated. Returns how many carriers each identifier gained.
   */
  async writeKeys(tenantId: number, customers: readonly SourceCustomer[], stored: ReadonlyMap<number, ReadonlySet<string>>): Promise<Map<string, number>> {
    const version = nextVersion()
    const rows: { tenant_id: number; identifier: string; customer_id: number; active: number; version: number }[] = []
    const gained = new Map<string, number>()
    for (const c of customers) {
      const now = new Set(c.identifiers.map(identifierKey))
      const was = stored.get(c.customerId) ?? new Set<string>()
      for (const k of now) {
        if (was.has(k)) continue
        rows.push({ tenant_id: tenantId, identifier: k, customer_id: c.customerId, active: 1, version })
        gained.set(k, (gained.get(k) ?? 0) + 1)
      }
      for (const k of was) if (!now.has(k)) rows.push({ tenant_id: tenantId, identifier: k, customer_id: c.customerId, active: 0, version })
    }
    for (let i = 0; i < rows.length; i += 200_000) await insertJsonRows(this.store, 'identity_keys', rows.slice(i, i + 200_000))
    return gained
  }

  /**
   * How many customers of the tenant carry each identifier, and who, for those carried by at most
   * `limit` (a blocked identifier links nobody, so its carriers are not needed).
   */
  async carriersOf(tenantId: number, keys: readonly string[], limit: number): Promise<{ counts: Map<string, number>; carriers: Map<string, number[]> }> {
    const counts = new Map<string, number>()
    const carriers = new Map<string, number[]>()
    for (let i = 0; i < keys.length; i += 50_000) {
      const rs = await this.store.query({
        query: `SELECT identifier, count() AS n, groupArray({cap:UInt32})(customer_id) AS who
                FROM identity_keys FINAL WHERE tenant_id = {t:UInt64} AND identifier IN {keys:Array(String)} AND active = 1
                GROUP BY identifier`,
        query_params: { t: tenantId, keys: keys.slice(i, i + 50_000), cap: limit + 1 },
        format: 'JSONCompactEachRow',
      })
      for (const [k, n, who] of await rs.json<[string, string, string[]]>()) {
        counts.set(k, Number(n))
        if (Number(n) <= limit) carriers.set(k, who.map(Number))
      }
    }
    return { counts, carriers }
  }

  /** Every member of the stored profiles of these customers, with its profile (the customers themselves included when stored). */
  async profileMembers(tenantId: number, customerIds: readonly number[]): Promise<Map<number, number>> {
    const rs = await this.store.query({
      query: `SELECT customer_id, profile_id FROM customer_profiles FINAL WHERE tenant_id = {t:UInt64}
                AND profile_id IN (SELECT profile_id FROM customer_profiles FINAL WHERE tenant_id = {t:UInt64} AND customer_id IN {ids:Array(UInt64)})`,
      query_params: { t: tenantId, ids: customerIds },
      format: 'JSONCompactEachRow',
    })
    return new Map((await rs.json<[string, string]>()).map(([c, p]) => [Number(c), Number(p)]))
  }

  /** Tenants whose data changed since their last resolution (or never resolved). */
  async tenantsToResolve(limit = 100): Promise<number[]> {
    const rs = await this.store.query({
      query: `SELECT d.tenant_id AS tenant_id FROM (SELECT tenant_id, max(changed_at) AS changed FROM tenant_data_changes GROUP BY tenant_id) AS d
              LEFT JOIN (SELECT tenant_id, argMax(resolved_at, version) AS resolved FROM identity_resolutions GROUP BY tenant_id) AS r ON r.tenant_id = d.tenant_id
              WHERE r.resolved IS NULL OR d.changed >= r.resolved
              ORDER BY r.resolved ASC NULLS FIRST, d.tenant_id LIMIT {n:UInt32}
              SETTINGS join_use_nulls = 1`,
      query_params: { n: limit },
      format: 'JSONCompactEachRow',
    })
    return (await rs.json<[string]>()).map(([t]) => Number(t))
  }
}
