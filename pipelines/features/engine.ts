import { customerKey } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import type { EventLog, LogRecord, OutRecord } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import type { Logger } from '../../common/logger.ts'
import type { PipelineDefinition } from '../../common/runtime/pipeline.ts'
import { decodeInputEvent, type InputEvent } from '../ingest/index.ts'
import type { TransactionModelName } from './clv/index.ts'
import { aggregate, EMPTY_AGGREGATES, factOf, mergeFact, orderHistory, utcDay, type CustomerAggregates, type OrderFact } from './order-facts.ts'
import { clvFeatures, computeFeatures, DEFAULT_FEATURE_OPTIONS, sameFeatures, type ClvPart, type FeatureOptions, type FeatureValues } from './features.ts'
import { buildTenantModel, type TenantModel } from './model.ts'
import { factRow, featureRow, featuresEvent, segmentChangedEvent, segmentChangeRow, type CustomerIdentity } from './rows.ts'
import { loadModels, loadPartitionCustomers, loadPartitionFacts, saveModel, tenantAggregates, writeSegmentSnapshot } from './feature-store.ts'
import { TenantCurrencies, TenantSettingsStore } from '../../common/store/tenant-settings.ts'
import { resolveReference, type Reference } from '../../common/reference-date.ts'
import { segmentChangesEmitted } from './metrics.ts'

export const FEATURES_GROUP = 'cdp-features'

/** One customer's state, owned by the partition its key hashes to. */
interface CustomerState {
  id: CustomerIdentity
  orders: Map<string, OrderFact>
  agg: CustomerAggregates
  /** The order cutoff `agg` was folded with (the tenant's reference; Infinity: every order). */
  aggCutoff: number
  /** Segment and score last written and published: the "previous" of the next change. */
  emitted: { segment: string | null; rfmScore: string | null }
  last: FeatureValues | null
  clv: { key: string; part: ClvPart | null } | null
  dirtyOrders: Set<string>
  dirty: boolean
  /** Version of the customer's last stored row; the next one must be higher, whatever the clocks. */
  rowVersion: number
}

export interface FeatureEngineOptions {
  store: Store
  log: EventLog
  codec: EventCodec
  logger: Logger
  /** Partition count of the input topics (the state store is keyed by partition). */
  partitions: number
  name?: string
  now?: () => number
  features?: FeatureOptions
  clvModel?: TransactionModelName
  /** A tenant's CLV is refitted when its fit is older than this (ms; default 1 h). */
  refitIntervalMs?: number
  /** Quintile thresholds younger than this are reused by the tick (ms; default 30 s). */
  boundaryMaxAgeMs?: number
}

/**
 * The stateful feature consumer. Per assigned partition it holds every customer's order facts in
 * memory (restored from ClickHouse when the partition is first seen, or when the offsets show
 * that another consumer processed it meanwhile), folds each batch into them, recomputes the
 * touched customers and, before the offsets are committed: publishes their feature snapshots and
 * segment changes, then writes facts, feature rows and segment changes to ClickHouse. A crash in
 * between redelivers the batch; the fold is idempotent, so nothing counts twice.
 */
export class FeatureEngine {
  readonly name: string
  private readonly customers = new Map<string, CustomerState>()
  private readonly loaded = new Set<number>()
  /** Partitions this consumer owns (from the log's assignment); null until the first one. */
  private assigned: Set<number> | null = null
  private readonly nextOffset = new Map<string, bigint>()
  private readonly models = new Map<number, TenantModel>()
  /** Each tenant's reference date (the "today" its customers age against), refreshed by the tick. */
  private readonly refs = new Map<number, Reference>()
  /** Each tenant's latest order time seen (stored or folded): its `data_end`. */
  private readonly dataEnds = new Map<number, number>()
  private readonly settings: TenantSettingsStore
  private readonly currencies: TenantCurrencies
  private readonly now: () => number
  private readonly opts: FeatureOptions
  private readonly clvModel: TransactionModelName
  private readonly refitMs: number
  private readonly boundaryMaxAgeMs: number
  private chain: Promise<unknown> = Promise.resolve()

  constructor(private readonly deps: FeatureEngineOptions) {
    this.name = deps.name ?? FEATURES_GROUP
    this.now = deps.now ?? Date.now
    this.opts = deps.features ?? DEFAULT_FEATURE_OPTIONS
    this.clvModel = deps.clvModel ?? 'mbgnbd'
    this.refitMs = deps.refitIntervalMs ?? 3600_000
    this.boundaryMaxAgeMs = deps.boundaryMaxAgeMs ?? 30_000
    this.settings = new TenantSettingsStore(deps.store, this.now)
    this.currencies = new TenantCurrencies(this.settings)
  }

  /** Batches and ticks take turns: both read and write the same state. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn)
    this.chain = run.catch(() => {})
    return run
  }

  definition(): PipelineDefinition<InputEvent> {
    return {
      name: this.name,
      topics: [TOPICS.orders.name, TOPICS.customers.name],
      process: async (record, codec) => {
        await this.exclusive(() => this.observe(record))
        return decodeInputEvent(record, codec, this.now(), this.currencies)
      },
      sink: (items) => this.exclusive(() => this.apply(items)),
      onAssign: (assignment) => void this.exclusive(async () => this.assign(assignment.map((a) => a.partition))),
    }
  }

  /**
   * A rebalance: state of revoked partitions is dropped (their new owner restores it, and this
   * consumer's tick must not rescore customers it no longer owns); newly assigned partitions are
   * restored by the next batch or tick, so quiet customers still age.
   */
  private assign(partitions: number[]): void {
    const keep = new Set(partitions)
    for (const p of this.loaded) if (!keep.has(p)) this.unload(p)
    this.assigned = keep
    this.deps.logger.info({ pipeline: this.name, partitions: [...keep].sort((a, b) => a - b) }, 'partitions assigned')
  }

  private unload(p: number): void {
    for (const [k, c] of this.customers) if (c.id.partition === p) this.customers.delete(k)
    for (const k of this.nextOffset.keys()) if (k.endsWith(`:${p}`)) this.nextOffset.delete(k)
    this.loaded.delete(p)
  }

  /**
   * Restores a partition's state the first time it is seen, and again when its offsets jumped
   * forward (another consumer owned it meanwhile and our copy is stale). A rewind (redelivery)
   * needs nothing: folding an event twice changes nothing.
   */
  private async observe(record: LogRecord): Promise<void> {
    const key = `${record.topic}:${record.partition}`
    const offset = BigInt(record.offset)
    const expected = this.nextOffset.get(key)
    if (!this.loaded.has(record.partition) || (expected !== undefined && offset > expected)) await this.loadPartition(record.partition)
    this.nextOffset.set(key, offset + 1n)
  }

  private async loadPartition(p: number): Promise<void> {
    const started = Date.now()
    this.unload(p)
    const [facts, stored] = await Promise.all([loadPartitionFacts(this.deps.store, p), loadPartitionCustomers(this.deps.store, p)])
    for (const s of stored) {
      const c = this.customer(s.tenantId, s.customerId, p)
      c.id.email = s.email
      c.id.emailVersion = s.emailVersion
      c.emitted = { segment: s.segment, rfmScore: s.rfmScore }
      c.rowVersion = s.version
    }
    for (const f of facts) this.customer(f.tenantId, f.customerId, p).orders.set(f.orderId, f)
    for (const c of this.customers.values()) if (c.id.partition === p) this.refold(c, this.refs.get(c.id.tenantId)?.cutoffMs ?? Infinity)
    this.loaded.add(p)
    this.deps.logger.info({ pipeline: this.name, partition: p, orders: facts.length, customers: stored.length, ms: Date.now() - started }, 'partition state restored')
  }

  private customer(tenantId: number, customerId: number, partition: number): CustomerState {
    const key = customerKey(tenantId, customerId)
    let c = this.customers.get(key)
    if (!c) {
      c = {
        id: { tenantId, customerId, partition, email: '', emailVersion: 0 },
        orders: new Map(),
        agg: EMPTY_AGGREGATES,
        aggCutoff: Infinity,
        emitted: { segment: null, rfmScore: null },
        last: null,
        clv: null,
        dirtyOrders: new Set(),
        dirty: false,
        rowVersion: 0,
      }
      this.customers.set(key, c)
    }
    return c
  }

  private async apply(items: { record: LogRecord; value: InputEvent }[]): Promise<void> {
    const touched = new Set<CustomerState>()
    const latest = new Map<number, number>()
    for (const { record, value } of items) {
      const e = value.event
      const c = this.customer(e.tenant_id, e.customer_id, record.partition)
      if (value.kind === 'order') {
        if (mergeFact(c.orders, value.event.order_id, factOf(value.event))) this.refold(c, c.aggCutoff)
        c.dirtyOrders.add(value.event.order_id)
        latest.set(e.tenant_id, Math.max(latest.get(e.tenant_id) ?? 0, e.occurred_at))
      } else {
        const ev = value.event
        // Latest profile wins by event time, ties by the larger email, whatever the arrival order.
        const email = ev.email ?? ''
        if (ev.occurred_at > c.id.emailVersion || (ev.occurred_at === c.id.emailVersion && email > c.id.email)) {
          c.id.email = email
          c.id.emailVersion = ev.occurred_at
        }
      }
      c.dirty = true
      touched.add(c)
    }
    // A tenant aged to its data's end moves with its newest order.
    await this.references(latest.keys(), this.now())
    for (const [t, ms] of latest) {
      const end = Math.max(this.dataEnds.get(t) ?? -Infinity, ms)
      this.dataEnds.set(t, end)
      const r = this.refs.get(t)
      if (r?.setting === 'data_end' && r.ms !== end) this.refs.set(t, { ...r, ms: end })
    }
    await this.flush([...touched], this.now(), true)
  }

  private refold(c: CustomerState, cutoff: number): void {
    c.agg = aggregate(c.orders.values(), cutoff)
    c.aggCutoff = cutoff
  }

  /** The tenants' references: cached, else read (settings and data end) once. */
  private async references(tenantIds: Iterable<number>, now: number, reload = false): Promise<void> {
    const missing = [...tenantIds].filter((t) => reload || !this.refs.has(t))
    if (!missing.length) return
    const [settings, ends] = await Promise.all([this.settings.getMany(missing), this.settings.dataEnd(missing)])
    for (const t of missing) {
      // The data's end as this consumer knows it: the stored orders' (the projection may lag) or a newer one it folded.
      const end = Math.max(ends.get(t) ?? -Infinity, this.dataEnds.get(t) ?? -Infinity)
      if (Number.isFinite(end)) this.dataEnds.set(t, end)
      this.refs.set(t, resolveReference(settings.get(t)!.reference_date, { wallMs: now, dataEndMs: this.dataEnds.get(t) ?? null }))
    }
  }

  private referenceOf(tenantId: number, now: number): Reference {
    const r = this.refs.get(tenantId)
    if (!r) return { setting: 'now', source: 'setting', ms: now, cutoffMs: Infinity }
    // The wall clock moves between ticks.
    return r.setting === 'now' ? { ...r, ms: now } : r
  }

  /** The tenant's model: cached, else stored, else fitted on the customers this consumer holds. */
  private async model(tenantId: number, now: number, ref: Reference): Promise<TenantModel | null> {
    const cached = this.models.get(tenantId)
    if (cached) return cached
    const stored = (await loadModels(this.deps.store, [tenantId])).get(tenantId)
    if (stored) {
      this.models.set(tenantId, stored)
      return stored
    }
    const aggs: CustomerAggregates[] = []
    for (const c of this.customers.values()) if (c.id.tenantId === tenantId) aggs.push(this.aggregates(c, ref))
    const m = buildTenantModel(aggs, now, { clvModel: this.clvModel, refitClv: true, referenceMs: ref.ms })
    await saveModel(this.deps.store, tenantId, m)
    this.models.set(tenantId, m)
    return m
  }

  /** Row versions grow per customer across restarts and clock differences (microsecond-scaled time, else +1). */
  private version(c: CustomerState, now: number): number {
    return Math.max(now * 1000, c.rowVersion + 1)
  }

  /** A customer's aggregates under the tenant's order cutoff (refolded when the cutoff moved). */
  private aggregates(c: CustomerState, ref: Reference): CustomerAggregates {
    if (c.aggCutoff !== ref.cutoffMs) this.refold(c, ref.cutoffMs)
    return c.agg
  }

  private valuesOf(c: CustomerState, model: TenantModel | null, ref: Reference): FeatureValues {
    const agg = this.aggregates(c, ref)
    let part: ClvPart | null = null
    if (model?.clv && agg.orderCount > 0) {
      const key = `${model.clv.fittedAt}:${utcDay(ref.ms)}:${ref.cutoffMs}`
      if (!c.clv || c.clv.key !== key || c.dirty) c.clv = { key, part: clvFeatures(agg, model.clv, utcDay(ref.ms), this.opts) }
      part = c.clv.part
    }
    return computeFeatures(agg, model, ref.ms, this.opts, part)
  }

  /**
   * Recomputes customers and publishes and stores what changed. `touched` customers (their
   * events are in the batch) are always written; others only when a value moved.
   */
  private async flush(customers: CustomerState[], now: number, touched: boolean): Promise<{ changed: number; segmentChanges: number }> {
    const tenants = new Set(customers.map((c) => c.id.tenantId))
    await this.references(tenants, now)
    const models = new Map<number, TenantModel | null>()
    const refs = new Map<number, Reference>()
    for (const t of tenants) {
      refs.set(t, this.referenceOf(t, now))
      models.set(t, await this.model(t, now, refs.get(t)!))
    }
    const facts: ReturnType<typeof factRow>[] = []
    const rows: ReturnType<typeof featureRow>[] = []
    const featureRecords: Promise<OutRecord>[] = []
    const changes: ReturnType<typeof segmentChangedEvent>[] = []
    const updates: { c: CustomerState; v: FeatureValues; version: number }[] = []
    for (const c of customers) {
      const ref = refs.get(c.id.tenantId)!
      const v = this.valuesOf(c, models.get(c.id.tenantId) ?? null, ref)
      const moved = !c.last || !sameFeatures(c.last, v)
      if (!touched && !moved && !c.dirty) continue
      for (const orderId of c.dirtyOrders) facts.push(factRow(c.id, orderId, c.orders.get(orderId)!))
      const version = this.version(c, now)
      rows.push(featureRow(c.id, c.agg, orderHistory(c.orders.values(), ref.cutoffMs), v, now, version))
      const key = customerKey(c.id.tenantId, c.id.customerId)
      if (moved) featureRecords.push(this.deps.codec.encode(TOPICS.customerFeatures.name, featuresEvent(c.id, c.agg, v, now)).then((value) => ({ key, value })))
      if (v.segment !== c.emitted.segment) changes.push(segmentChangedEvent(c.id, c.emitted, v, now))
      updates.push({ c, v, version })
    }
    if (!updates.length) return { changed: 0, segmentChanges: 0 }
    // Publish before storing: a crash in between re-publishes (at least once) instead of losing a change.
    const changeRecords = await Promise.all(changes.map(async (e) => ({ key: customerKey(e.tenant_id, e.customer_id), value: await this.deps.codec.encode(TOPICS.segmentChanges.name, e) })))
    await Promise.all([
      changeRecords.length ? this.deps.log.send(TOPICS.segmentChanges.name, changeRecords) : undefined,
      featureRecords.length ? Promise.all(featureRecords).then((r) => this.deps.log.send(TOPICS.customerFeatures.name, r)) : undefined,
    ])
    await Promise.all([
      facts.length ? this.deps.store.insert({ table: 'feature_order_facts', values: facts, format: 'JSONEachRow' }) : undefined,
      this.deps.store.insert({ table: 'customer_features', values: rows, format: 'JSONEachRow' }),
      changes.length ? this.deps.store.insert({ table: 'segment_changes', values: changes.map(segmentChangeRow), format: 'JSONEachRow' }) : undefined,
    ])
    for (const { c, v, version } of updates) {
      c.rowVersion = version
      c.emitted = { segment: v.segment, rfmScore: v.rfm_score }
      c.last = v
      c.dirtyOrders.clear()
      c.dirty = false
    }
    for (const e of changes) segmentChangesEmitted.inc({ pipeline: this.name, to: e.segment ?? 'none' })
    return { changed: updates.length, segmentChanges: changes.length }
  }

  /**
   * The punctuator: time moves recency and churn while customers are quiet, and quintile
   * thresholds drift as data arrive. Refreshes the models of the tenants this consumer holds
   * (thresholds from every stored customer of the tenant, CLV refitted when due), rescores
   * every customer held, emits the resulting segment changes and writes today's snapshot.
   */
  tick(): Promise<{ tenants: number; changed: number; segmentChanges: number }> {
    return this.exclusive(async () => {
      const now = this.now()
      for (const p of this.assigned ?? []) if (!this.loaded.has(p)) await this.loadPartition(p)
      const tenants = [...new Set([...this.customers.values()].map((c) => c.id.tenantId))]
      if (!tenants.length) return { tenants: 0, changed: 0, segmentChanges: 0 }
      // Settings may have changed (PUT .../settings): read every tenant's reference again.
      const before = new Map(tenants.map((t) => [t, this.refs.get(t)]))
      await this.references(tenants, now, true)
      const stored = await loadModels(this.deps.store, tenants)
      for (const t of tenants) {
        const ref = this.referenceOf(t, now)
        const prev = before.get(t)
        const moved = !prev || prev.setting !== ref.setting || prev.cutoffMs !== ref.cutoffMs
        const current = newest(stored.get(t), this.models.get(t))
        const sameDay = (current?.clv?.referenceDay ?? utcDay(ref.ms)) === utcDay(ref.ms)
        if (current && !moved && sameDay && now - current.version < this.boundaryMaxAgeMs) {
          this.models.set(t, current)
          continue
        }
        // A new cutoff changes every aggregate: score against the consumer's refolded customers
        // rather than the stored rows, which still hold the old cutoff.
        const aggs = moved && prev ? [...this.customers.values()].filter((c) => c.id.tenantId === t).map((c) => this.aggregates(c, ref)) : await tenantAggregates(this.deps.store, t)
        const clv = current?.clv
        const refit = !clv || moved || now - clv.fittedAt >= this.refitMs || aggs.length >= 2 * clv.customers
        const m = buildTenantModel(aggs, now, { clvModel: this.clvModel, refitClv: refit, previous: current, referenceMs: ref.ms })
        await saveModel(this.deps.store, t, m)
        this.models.set(t, m)
      }
      const r = await this.flush([...this.customers.values()], now, false)
      for (const t of tenants) await writeSegmentSnapshot(this.deps.store, [t], this.referenceOf(t, now).ms, now)
      return { tenants: tenants.length, ...r }
    })
  }

  /** Forgets cached models, so the next batch or tick reads what a processing run stored. */
  invalidateModel(tenantId: number): void {
    this.models.delete(tenantId)
  }

}

function newest(a: TenantModel | undefined, b: TenantModel | undefined): TenantModel | undefined {
  if (!a) return b
  if (!b) return a
  return a.version >= b.version ? a : b
}
