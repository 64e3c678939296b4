import type { Store } from '../../common/store/clickhouse.ts'
import { unescapeTsv } from '../../common/store/tsv.ts'
import type { CustomerAggregates } from './order-facts.ts'
import { utcDay } from './order-facts.ts'
import type { TenantModel } from './model.ts'
import type { ProfileRecord } from './profiles.ts'

/**
 * ClickHouse I/O of the feature pipeline: the partition state store, tenant models, the inputs
 * of a model refresh and the daily segment snapshot. Every query binds its parameters.
 */

/** An order's latest fact as the state store restores it (its event id is not read back: the merge never compares it). */
export interface StoredFact {
  tenantId: number
  customerId: number
  orderId: string
  version: number
  placedAt: number
  cents: number
  cancelled: boolean
}

export interface StoredCustomer {
  tenantId: number
  customerId: number
  email: string
  emailVersion: number
  segment: string | null
  rfmScore: string | null
  /** Highest row version stored: the next row of the customer must be above it. */
  version: number
  /** Its latest row is a delete marker (absorbed into another customer's profile). */
  deleted: boolean
}

async function rows<T>(store: Store, query: string, params: Record<string, unknown>): Promise<T[]> {
  const rs = await store.query({ query, query_params: params, format: 'JSONCompactEachRow' })
  return (await rs.json()) as T[]
}

// The latest fact of each order by the stream's rule (order-facts.ts' `newer`): the highest version,
// then cancelled, the larger total, the later placement. TabSeparated: a partition has millions.
// A customer's facts come together, so a reader can keep the customer it is filling.
const LATEST_FACTS = `SELECT tenant_id, customer_id, order_id, f.1, toUnixTimestamp64Milli(f.2), f.3, f.4
     FROM (SELECT tenant_id, customer_id, order_id,
                  argMax(tuple(version, placed_at, total_cents, cancelled), tuple(version, cancelled, total_cents, placed_at)) AS f
           FROM feature_order_facts WHERE %WHERE%
           GROUP BY tenant_id, customer_id, order_id)
     ORDER BY tenant_id, customer_id`

/**
 * Facts a restore reads per query, about. Embedded chdb hands a query's whole result over at once
 * (one buffer, then one batch of rows): a partition of 2.5 million orders read in one query raised
 * the RSS by 1.8 GB for a moment (and its rows left the old generation fragmented), in slices of
 * 250,000 by 0.4 GB, of 100,000 by 0.24 GB, for 4.0 s against 3.6 s (slices of 50,000: 0.15 GB,
 * 4.5 s).
 */
export const FACTS_PER_READ = 100_000

/**
 * The latest fact of every order of a partition, handed over one at a time (a partition can hold
 * millions), a customer's together. Read in slices of about `perRead` stored facts: small tenants
 * together, a large one in equal ranges of its customer ids (the table's key, so each slice reads
 * its own granules). Ids far from even spread only make some slices larger.
 */
export async function eachPartitionFact(store: Store, partition: number, onFact: (f: StoredFact) => void, perRead = FACTS_PER_READ): Promise<number> {
  const tenants = await rows<[string, string, string, string]>(
    store,
    // Ids as text: exact past 2^53, so that no range misses a customer.
    `SELECT toString(tenant_id), toString(count()), toString(min(customer_id)), toString(max(customer_id)) FROM feature_order_facts WHERE partition = {p:UInt16} GROUP BY tenant_id ORDER BY tenant_id`,
    { p: partition },
  )
  let n = 0
  let group: bigint[] = []
  let size = 0
  const readGroup = async () => {
    if (group.length) n += await eachFact(store, 'partition = {p:UInt16} AND tenant_id IN {ts:Array(UInt64)}', { p: partition, ts: group }, onFact)
    group = []
    size = 0
  }
  for (const [tenant, count, min, max] of tenants) {
    const facts = Number(count)
    if (facts <= perRead) {
      if (size + facts > perRead) await readGroup()
      group.push(BigInt(tenant))
      size += facts
      continue
    }
    await readGroup()
    const lo = BigInt(min)
    const hi = BigInt(max)
    const width = (hi - lo) / BigInt(Math.ceil(facts / perRead)) + 1n
    for (let from = lo; from <= hi; from += width) {
      const to = from + width - 1n < hi ? from + width - 1n : hi
      n += await eachFact(store, 'partition = {p:UInt16} AND tenant_id = {t:UInt64} AND customer_id BETWEEN {lo:UInt64} AND {hi:UInt64}', { p: partition, t: tenant, lo: from.toString(), hi: to.toString() }, onFact)
    }
  }
  await readGroup()
  return n
}

/** The latest fact of every order of some customers of a tenant (profile members another consumer owns). */
export async function loadCustomerFacts(store: Store, tenantId: number, customerIds: readonly number[]): Promise<StoredFact[]> {
  const out: StoredFact[] = []
  if (customerIds.length) await eachFact(store, 'tenant_id = {t:UInt64} AND customer_id IN {ids:Array(UInt64)}', { t: tenantId, ids: customerIds }, (f) => out.push(f))
  return out
}

async function eachFact(store: Store, where: string, params: Record<string, unknown>, onFact: (f: StoredFact) => void): Promise<number> {
  const rs = await store.query({ query: LATEST_FACTS.replace('%WHERE%', where), query_params: params, format: 'TabSeparated' })
  // Read as one text and cut in place: no row object or array of fields per fact, which by a
  // slice's hundred thousand would outlive the young generation and be left as holes in the old one.
  const text = await rs.text()
  let n = 0
  for (let at = 0; at < text.length; n++) {
    let end = text.indexOf('\n', at)
    if (end < 0) end = text.length
    const t1 = text.indexOf('\t', at)
    const t2 = text.indexOf('\t', t1 + 1)
    const t3 = text.indexOf('\t', t2 + 1)
    const t4 = text.indexOf('\t', t3 + 1)
    const t5 = text.indexOf('\t', t4 + 1)
    const t6 = text.indexOf('\t', t5 + 1)
    // Seven fields on the line (a field's tabs and newlines are escaped): t1 < … < t6 < end.
    if (t1 < 0 || t2 < t1 || t3 < t2 || t4 < t3 || t5 < t4 || t6 < t5 || t6 > end) throw new Error(`unexpected fact row: ${JSON.stringify(text.slice(at, Math.min(end, at + 200)))}`)
    onFact({
      tenantId: Number(text.slice(at, t1)),
      customerId: Number(text.slice(t1 + 1, t2)),
      orderId: unescapeTsv(text.slice(t2 + 1, t3)),
      version: Number(text.slice(t3 + 1, t4)),
      placedAt: Number(text.slice(t4 + 1, t5)),
      cents: Number(text.slice(t5 + 1, t6)),
      cancelled: text.charCodeAt(t6 + 1) === 49 /* '1' */,
    })
    at = end + 1
  }
  return n
}

/** What a consumer must remember about each customer of a partition besides its orders. */
export async function loadPartitionCustomers(store: Store, partition: number): Promise<StoredCustomer[]> {
  const out = await rows<[number, number, [string, number, string | null, string | null, number], number]>(
    store,
    `SELECT tenant_id, customer_id, argMax(tuple(email, email_version, segment, rfm_score, is_deleted), version), max(version)
     FROM customer_features WHERE partition = {p:UInt16}
     GROUP BY tenant_id, customer_id`,
    { p: partition },
  )
  return out.map(([tenantId, customerId, [email, emailVersion, segment, rfmScore, deleted], version]) => ({
    tenantId,
    customerId,
    email,
    emailVersion: Number(emailVersion),
    segment,
    rfmScore,
    version: Number(version),
    deleted: Number(deleted) === 1,
  }))
}

/** The profile records a consumer folded for the profiles of a partition (its membership state store). */
export async function loadPartitionProfiles(store: Store, partition: number): Promise<ProfileRecord[]> {
  const out = await rows<[number, number, [number[], number | null, string, number]]>(
    store,
    `SELECT tenant_id, profile_id, argMax(tuple(members, absorbed_into, event_id, version), tuple(version, event_id))
     FROM feature_profiles WHERE partition = {p:UInt16}
     GROUP BY tenant_id, profile_id`,
    { p: partition },
  )
  return out.map(([tenantId, profileId, [members, absorbedInto, eventId, at]]) => ({
    tenantId: Number(tenantId),
    profileId: Number(profileId),
    members: members.map(Number),
    absorbedInto: absorbedInto === null ? null : Number(absorbedInto),
    eventId,
    at: Number(at),
  }))
}

export function profileRow(partition: number, r: ProfileRecord) {
  return { partition, tenant_id: r.tenantId, profile_id: r.profileId, members: r.members, absorbed_into: r.absorbedInto, event_id: r.eventId, version: r.at }
}

export async function loadModels(store: Store, tenantIds?: number[]): Promise<Map<number, TenantModel>> {
  const filter = tenantIds ? 'WHERE tenant_id IN {ids:Array(UInt64)}' : ''
  const out = await rows<[number, string]>(store, `SELECT tenant_id, argMax(model, version) FROM tenant_models ${filter} GROUP BY tenant_id`, tenantIds ? { ids: tenantIds } : {})
  return new Map(out.map(([t, m]) => [t, JSON.parse(m) as TenantModel]))
}

export async function saveModel(store: Store, tenantId: number, model: TenantModel): Promise<void> {
  await store.insert({
    table: 'tenant_models',
    values: [{ tenant_id: tenantId, version: model.version, fitted_at: new Date(model.version).toISOString(), customers: model.customers, model: JSON.stringify(model) }],
    format: 'JSONEachRow',
  })
}

/**
 * Claims the refresh of a tenant's model for one tick interval (`slot`) among the feature
 * consumers sharing the store: inserts this owner's claim, stamped by the store's clock, and
 * reads which claim came first. True for that one owner. The stamp is taken when the insert
 * starts and the row is seen once it commits, so two claims whose inserts overlap (a few
 * milliseconds) can both read themselves first: then two consumers refresh the same data and the
 * later version stands, harmless. One insert and one read per due tenant and tick.
 */
export async function claimModelRefresh(store: Store, tenantId: number, slot: number, owner: string): Promise<boolean> {
  await store.command({
    query: 'INSERT INTO model_refresh_claims SELECT {t:UInt64}, {s:UInt64}, {o:String}, now64(6)',
    query_params: { t: tenantId, s: slot, o: owner },
  })
  const [first] = await rows<[string]>(
    store,
    'SELECT argMin(owner, (claimed_at, owner)) FROM model_refresh_claims WHERE tenant_id = {t:UInt64} AND slot = {s:UInt64}',
    { t: tenantId, s: slot },
  )
  return first?.[0] === owner
}

/** The aggregates of every customer of a tenant with a counting order, as the feature rows hold them. */
export async function tenantAggregates(store: Store, tenantId: number): Promise<CustomerAggregates[]> {
  const out = await rows<[number, number, number | null, number | null, number, number, number, number]>(
    store,
    // orderCount is the number of counting orders (the history's length); `frequency` counts purchase days.
    `SELECT length(order_times), toInt64(monetary * 100), toUnixTimestamp64Milli(first_order_at), toUnixTimestamp64Milli(last_order_at),
            purchase_days, repeat_purchases, repeat_span_days, repeat_avg_value
     FROM customer_features FINAL WHERE tenant_id = {t:UInt64} AND notEmpty(order_times)`,
    { t: tenantId },
  )
  return out.map(([orderCount, cents, first, last, purchaseDays, x, tx, zbar]) => ({
    orderCount,
    monetaryCents: Number(cents),
    firstOrderAt: first === null ? null : Number(first),
    lastOrderAt: last === null ? null : Number(last),
    purchaseDays,
    firstDay: first === null ? null : utcDay(Number(first)),
    lastDay: last === null ? null : utcDay(Number(last)),
    repeatPurchases: x,
    repeatSpanDays: tx,
    repeatAvgCents: zbar * 100,
  }))
}

/**
 * The segment snapshot of the given tenants for the day of `dayMs` (their reference date),
 * idempotent per tenant, day and segment; versioned by the wall clock, so the latest write wins.
 */
export async function writeSegmentSnapshot(store: Store, tenantIds: number[], dayMs: number, computedAtMs: number = Date.now()): Promise<void> {
  if (!tenantIds.length) return
  await store.command({
    query: `INSERT INTO segment_daily (tenant_id, day, segment, customers, monetary, avg_recency, avg_frequency, avg_monetary, computed_at)
            SELECT tenant_id, toDate(fromUnixTimestamp64Milli({day:Int64}, 'UTC')), segment, count(), sum(monetary),
                   avg(recency_days), avg(frequency), avg(monetary), fromUnixTimestamp64Milli({now:Int64}, 'UTC')
            FROM customer_features FINAL
            WHERE tenant_id IN {ids:Array(UInt64)} AND segment IS NOT NULL
            GROUP BY tenant_id, segment`,
    query_params: { ids: tenantIds, day: dayMs, now: computedAtMs },
  })
}
