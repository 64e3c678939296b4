import { customerKey, type ProfileChanged, type SegmentChanged } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { encodingInsertFor, InsertRows, insertJsonRows, NO_MERGE_ON_INSERT, type EncodingInsert, type Store } from '../../common/store/clickhouse.ts'
import type { EventLog, LogRecord } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { EncodedRecords } from '../../common/eventlog/encoded-records.ts'
import { WRITE_BUFFERS } from '../../common/buffer-pool.ts'
import type { Logger } from '../../common/logger.ts'
import type { PipelineDefinition, StepResult } from '../../common/runtime/pipeline.ts'
import { decodeInputEvent, decodeRecord, type InputEvent } from '../ingest/index.ts'
import { ok, processEach, processRecord } from '../../common/runtime/pipeline.ts'
import { decodedOffMain } from '../../common/runtime/metrics.ts'
import { CUSTOMER, InputsThread, LEFT, ORDER, replyText, STRIDE, type InputsReply } from './input-thread.ts'
import type { TransactionModelName } from './clv/index.ts'
import { CountedOrders, EMPTY_AGGREGATES, factOf, utcDay, type CustomerAggregates, type OrderFact } from './order-facts.ts'
import { bookAppend, BookBuilder, emptyBook, gatherBook, orderKey, sameBook, type OrderBook } from './order-book.ts'
import { ClvMemo, clvFeatures, computeFeatures, DEFAULT_FEATURE_OPTIONS, featuresDigest, type FeatureOptions, type FeatureValues } from './features.ts'
import type { TenantModel } from './model.ts'
import { buildTenantModelParallel } from './parallel-fit.ts'
import { customerPartition, deletedFeatureRow, FACT_ROW_COLUMNS, factRowValues, FEATURE_ROW_COLUMNS, featureRowValues, featuresEvent, SEGMENT_CHANGE_COLUMNS, segmentChangedEvent, segmentChangeRowValues, type CustomerIdentity } from './rows.ts'
import { claimModelRefresh, eachPartitionFact, loadCustomerFacts, loadModels, loadPartitionCustomers, loadPartitionProfiles, profileRow, saveModel, tenantAggregates, writeSegmentSnapshot } from './feature-store.ts'
import { ProfileMemberships, type ProfileRecord } from './profiles.ts'
import { TenantCurrencies, TenantSettingsStore } from '../../common/store/tenant-settings.ts'
import { resolveReference, type Reference } from '../../common/reference-date.ts'
import { modelRefreshes, segmentChangesEmitted } from './metrics.ts'
import { randomUUID } from 'node:crypto'
import { claimantId } from '../../common/jobs/lease.ts'
import { WriteTurns, type Storing } from '../../common/runtime/write-turns.ts'
import { CustomerTable, type Customer } from './customer-table.ts'
import { idTexts, type IdTexts, type PendingFact } from './pending-facts.ts'
import { WriteUpdates } from './write-updates.ts'
import { heldForPair, inputKey } from './input-pairs.ts'

export const FEATURES_GROUP = 'cdp-features'

/**
 * Customers scored, published and stored per write. Their rows are held as encoded bytes until the
 * write's inserts, so a tick over a million customers holds about 30 MB at a time; fewer, larger
 * inserts leave chdb less to merge (10,000 a chunk took 4 % more of the stream's time).
 */
const FLUSH_CHUNK = 30_000

/**
 * Purchase curves (ClvMemo, one per x and T) the stream's writes keep between batches (about 200
 * bytes each: 10 MB). Customers written again later, or others with the same x and T, find them there.
 */
const STREAM_MEMO_CURVES = 50_000

/**
 * A batch of at least THREAD_WAIT_FROM records that comes while the decode thread loads waits for it
 * up to THREAD_WAIT_MS (DecodeThread.whenReady): decoded here, 20,000 records took 100 ms of the
 * consumer's thread, while it restored its partitions; the thread loads in 100–250 ms.
 */
const THREAD_WAIT_FROM = 1_000
const THREAD_WAIT_MS = 1_000

/**
 * How long a write waits at most for the batches its waiting ones pair with (pairedBatchComing),
 * when every one waits: the decode thread reads a batch of 20,000 records in 100–200 ms on two
 * cores. Past it, they are written as they are.
 */
const PAIR_WAIT_MS = 1_000

/**
 * Batches of a partition the consumer handles at once (PipelineDefinition.batchesInFlight): the
 * next one is read, decoded and published while the one before is being stored. With one, a
 * partition read nothing while its batch's rows were inserted, and an order arriving meanwhile
 * waited for that before its segment change could be published: at a thousand orders a second,
 * about half of the 90 ms it took from order to change (docs/analytics-performance.md,
 * "Streaming", stop 49). Records are still observed in offset order (inOrder).
 */
const BATCHES_IN_FLIGHT = 2

/** Adds `by` to a key's count, dropping the key at 0. */
function count(counts: Map<number, number>, key: number, by: number): void {
  const n = (counts.get(key) ?? 0) + by
  if (n) counts.set(key, n)
  else counts.delete(key)
}

/**
 * What the consumer folds, made as soon as a record is decoded: of an input event only the fields
 * the fold reads, so the decoded event (its items, its strings) dies young instead of being copied
 * by every scavenge while its batch waits its turn; and the identity lane's profile records.
 */
export type EngineInput =
  | { kind: 'order'; tenantId: number; customerId: number; orderId: string; occurredAt: number; fact: OrderFact }
  | { kind: 'customer'; tenantId: number; customerId: number; email: string; occurredAt: number }
  | { kind: 'profile'; event: ProfileChanged }
  /**
   * The records of a batch the decode thread read (input-thread.ts), kept as its reply: one value,
   * held by each of those records (`keep`), so the main thread makes no object per record.
   */
  | { kind: 'inputs'; partition: number; reply: InputsReply; keep: Uint8Array }

/** An input event as the fold keeps it. */
export function engineInput(v: InputEvent): EngineInput {
  const e = v.event
  return v.kind === 'order'
    ? { kind: 'order', tenantId: e.tenant_id, customerId: e.customer_id, orderId: v.event.order_id, occurredAt: e.occurred_at, fact: factOf(v.event) }
    : { kind: 'customer', tenantId: e.tenant_id, customerId: e.customer_id, email: v.event.email ?? '', occurredAt: e.occurred_at }
}

const cutForFold = (r: StepResult<InputEvent>): StepResult<EngineInput> => (r.kind === 'ok' ? ok(engineInput(r.value)) : r)

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
  /** The tick interval: a tenant's model is refreshed at most once per interval across the group's consumers (default 2 × boundaryMaxAgeMs). */
  refreshIntervalMs?: number
  /** Customers scored, published and stored at a time when a flush (a tick's, above all) has more (default 30,000). */
  flushChunk?: number
  /** false: input records are decoded on the main thread, not on the decode thread (tests of that path). */
  decodeThread?: boolean
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
  /**
   * A source customer, owned by the partition its key hashes to: a slot of the consumer's
   * CustomerTable (customer-table.ts), which holds its orders, identity, and what was last written.
   * A customer that is a profile (its own, or the surviving customer of a merge) carries the
   * features of the profile, which fold the orders of all its members. One absorbed into another's
   * profile has none. The aggregates and the CLV part are computed from the orders when the
   * customer is scored, not kept (docs/features.md, "State in memory").
   */
  private readonly customers = new CustomerTable()
  private readonly loaded = new Set<number>()
  /** Partitions this consumer owns (from the log's assignment); null until the first one. */
  private assigned: Set<number> | null = null
  /**
   * The partitions this consumer may write for outside a batch, updated the moment the group
   * changes (empty from the start of a rebalance to the next assignment; null: never assigned,
   * as a consumer driven without a log). A tick holds the state for a while; when the group moves
   * a partition meanwhile, the tick must not publish or store that partition's customers, which
   * the new owner is already scoring (a stale change published last would contradict the row).
   */
  private owned: Set<number> | null = null
  /** Bumped at every change of `owned`: a tick that saw another value writes nothing (a partition lost and regained meanwhile had its state replaced). */
  private ownershipEpoch = 0
  /** The next offset expected, by partition and topic (a number: exact below 2^53, far beyond any log's offsets). */
  private readonly nextOffset = new Map<number, Map<string, number>>()
  /** Purchase curves of the customers the stream's writes scored, under their fit (bounded: STREAM_MEMO_CURVES). */
  private readonly memo = new ClvMemo(STREAM_MEMO_CURVES)
  /** The orders of the profile being scored (gather): one instance, reused. */
  private readonly counted = new CountedOrders()
  private readonly models = new Map<number, TenantModel>()
  /** Each tenant's reference date (the "today" its customers age against), refreshed by the tick. */
  private readonly refs = new Map<number, Reference>()
  /** Each tenant's latest order time seen (stored or folded): its `data_end`. */
  private readonly dataEnds = new Map<number, number>()
  /** The profiles of the partitions held (the fold of their profile-change records). */
  private readonly memberships = new ProfileMemberships()
  /** Order facts of profile members whose partition this consumer does not hold, read from the state store. */
  private readonly foreign = new Map<string, OrderBook>()
  /** Profile records folded since the last write, persisted with the batch that folded them. */
  private pendingProfiles: { partition: number; record: ProfileRecord }[] = []
  /** Profiles whose members' orders changed outside a batch (a partition restored), with their slot's generation: written with the next one. */
  private readonly stale = new Map<Customer, number>()
  private readonly settings: TenantSettingsStore
  private readonly currencies: TenantCurrencies
  private readonly now: () => number
  private readonly opts: FeatureOptions
  private readonly clvModel: TransactionModelName
  private readonly refitMs: number
  private readonly boundaryMaxAgeMs: number
  private readonly refreshIntervalMs: number
  /** This consumer among the group's, in model refresh claims. */
  private readonly owner = claimantId(randomUUID())
  private chain: Promise<unknown> = Promise.resolve()
  /**
   * A batch's fold and write, in turn with the other batches and the ticks (write-turns.ts):
   * batches of other partitions that arrive while one is written wait together and are then
   * folded and written as one (one insert per table, not one per batch). At a thousand events a
   * second the four partitions' small batches had queued behind each other, each paying the
   * inserts' fixed cost. An order or customer batch whose pair (pairedBatchComing) is still being
   * decoded waits for it while other batches are written: under a backlog a customer's record and
   * its orders, read in step (alignTopics), are then folded and scored in one write, not two
   * (docs/analytics-performance.md, "Streaming", stop 41).
   */
  private readonly writes = new WriteTurns<{ record: LogRecord; value: EngineInput }>((items) => this.apply(items), (fn) => this.exclusive(fn), null, {
    waits: (items, waiting) => this.pairedBatchComing(items, waiting),
    waitMs: PAIR_WAIT_MS,
  })
  /** The processing of each topic-partition's last batch (inOrder) until it settles. */
  private readonly processed = new Map<string, Promise<unknown>>()
  /** Batches of the input topics being processed (decoded, checked), by inputKey. */
  private readonly processing = new Map<number, number>()
  /** Of those, the ones waiting for a turn of their own (observeInTurn), by inputKey. */
  private readonly inTurnQueue = new Map<number, number>()
  /** Rebalances queued on `chain` that have not dropped their state yet: records then wait their turn (observeNow). */
  private assignsPending = 0
  /**
   * Decodes and checks order and customer records while this thread folds and writes (input-thread.ts):
   * on two cores the decode took a sixth of the main thread (docs/analytics-performance.md, "Streaming").
   */
  private readonly inputs: InputsThread | null
  /** The inserts of writes whose turn has ended (write()), until they are stored or rolled back. */
  private readonly storing = new Set<Promise<void>>()
  /** The inserts of the last write (write()): the next one waits for them before it starts its own. */
  private inserting: Promise<void> | null = null
  /** How the writes encode feature rows and facts (InsertRows), looked up once; null: kept as values. */
  private encodings: Promise<RowEncodings> | null = null

  constructor(private readonly deps: FeatureEngineOptions) {
    this.name = deps.name ?? FEATURES_GROUP
    this.now = deps.now ?? Date.now
    this.opts = deps.features ?? DEFAULT_FEATURE_OPTIONS
    this.clvModel = deps.clvModel ?? 'mbgnbd'
    this.refitMs = deps.refitIntervalMs ?? 3600_000
    this.boundaryMaxAgeMs = deps.boundaryMaxAgeMs ?? 30_000
    this.refreshIntervalMs = deps.refreshIntervalMs ?? 2 * this.boundaryMaxAgeMs
    if (deps.flushChunk !== undefined && !(Number.isInteger(deps.flushChunk) && deps.flushChunk > 0)) throw new RangeError(`flushChunk must be a positive integer, got ${deps.flushChunk}`)
    this.settings = new TenantSettingsStore(deps.store, this.now)
    this.currencies = new TenantCurrencies(this.settings)
    this.inputs = deps.decodeThread === false ? null : new InputsThread()
  }

  /** Batches and ticks take turns: both read and write the same state. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn)
    this.chain = run.catch(() => {})
    return run
  }

  /** The decode thread has loaded and takes the batches (until then they are decoded on the main thread). */
  get decodeThreadReady(): boolean {
    return this.inputs?.ready ?? false
  }

  definition(): PipelineDefinition<EngineInput> {
    // Loaded while the consumer joins.
    this.inputs?.start()
    const def: PipelineDefinition<EngineInput> = {
      name: this.name,
      topics: [TOPICS.orders.name, TOPICS.customers.name, TOPICS.profileChanges.name],
      alignTopics: [TOPICS.orders.name, TOPICS.customers.name],
      // A record's bytes are read while its batch is decoded (here, or copied for the decode thread); the fold keeps fields.
      recordBytesEndWithBatch: true,
      batchesInFlight: BATCHES_IN_FLIGHT,
      // A decode-thread part's records share one value (takeInputs), which the fold reads once.
      sinkRuns: true,
      process: (record, codec) => {
        // Most records need no state loaded: seen at once, decoded while another partition's batch
        // is being written. The others wait their turn with batches and ticks.
        if (this.observeNow(record)) return this.decode(record, codec)
        return this.observeInTurn(record).then(() => this.decode(record, codec))
      },
      processMany: async (records, codec) => {
        const key = records.length ? inputKey(records[0]!) : null
        if (key === null) return this.inOrder(records, () => this.inputsOf(def, records, codec))
        count(this.processing, key, 1)
        try {
          return await this.inOrder(records, () => this.inputsOf(def, records, codec))
        } finally {
          count(this.processing, key, -1)
          this.writes.wake()
        }
      },
      close: async () => {
        // Restores, batches and ticks in their turns finish before the store can close.
        await this.chain
        await this.inputs?.close()
      },
      sink: (items) => this.writes.submit(items),
      onAssign: (assignment) => {
        // Owned at once (a tick running now must not write for partitions just lost); state is
        // dropped in turn with batches and ticks.
        this.owned = new Set(assignment.map((a) => a.partition))
        this.ownershipEpoch++
        this.assignsPending++
        void this.exclusive(async () => {
          this.assignsPending--
          this.assign(assignment.map((a) => a.partition))
        })
        // Restored at once, each in its own turn, rather than by the first record of each: the
        // first batches are then fetched and decoded while the state loads, and folded without
        // waiting for one restore after another. One that fails is tried again by its first record.
        for (const p of new Set(assignment.map((a) => a.partition))) {
          void this.exclusive(async () => {
            if (this.assigned?.has(p) && !this.loaded.has(p)) await this.loadPartition(p)
          }).catch((err: unknown) => this.deps.logger.warn({ pipeline: this.name, partition: p, err: (err as Error).message }, 'restoring an assigned partition failed; its first record tries again'))
        }
      },
      onRebalancing: () => {
        this.owned = new Set()
        this.ownershipEpoch++
      },
    }
    return def
  }

  /**
   * Processes a batch after the batch of its topic and partition before it (BATCHES_IN_FLIGHT): its
   * records are then observed in offset order, which observeNow's jump check relies on (a record
   * past the next expected offset means another consumer folded the ones between).
   */
  private inOrder<T>(records: readonly LogRecord[], fn: () => Promise<T>): Promise<T> {
    const first = records[0]
    if (!first) return fn()
    const key = `${first.topic}:${first.partition}`
    const before = this.processed.get(key)
    // After a batch that failed, the next fails too: the log reads both again from the first
    // (partition-flow.ts), and folded ahead of it, this one's records would look like a jump.
    const run = before
      ? before.then(fn, () => {
          throw new Error(`the batch before this one of ${key} failed: this one comes again after it`)
        })
      : fn()
    this.processed.set(key, run)
    const forget = () => {
      if (this.processed.get(key) === run) this.processed.delete(key)
    }
    run.then(forget, forget)
    return run
  }

  /** A batch's inputs: read by the decode thread where it can, else here record by record. */
  private async inputsOf(def: PipelineDefinition<EngineInput>, records: readonly LogRecord[], codec: EventCodec): Promise<StepResult<EngineInput>[]> {
    const topic = records[0]?.topic
    const setup = { orders: codec.expectedType(TOPICS.orders.name), customers: codec.expectedType(TOPICS.customers.name) }
    if (!this.inputs || topic === TOPICS.profileChanges.name || !setup.orders || !setup.customers) return processEach(def, records, codec)
    // Still loading (its first batches): a large batch waits for it a while, a small one is decoded here.
    if (!this.inputs.ready && (records.length < THREAD_WAIT_FROM || !(await this.inputs.whenReady(THREAD_WAIT_MS)))) {
      this.inputs.start()
      return processEach(def, records, codec)
    }
    let reply: InputsReply
    try {
      // A partition's order and customer batches one after the other: they are written together (pairedBatchComing).
      reply = await this.inputs.run(records, codec.registry, { orders: setup.orders, customers: setup.customers }, this.now(), records[0]?.partition)
    } catch {
      // The thread failed (the next batch starts another): this batch is decoded here.
      return processEach(def, records, codec)
    }
    return this.takeInputs(def, records, codec, reply)
  }

  /**
   * observe() in turn with batches and ticks. Meanwhile the batch it is part of is not waited for
   * by a write (pairedBatchComing), which would hold the turn it waits for.
   */
  private async observeInTurn(record: LogRecord): Promise<void> {
    const key = inputKey(record)
    if (key !== null) {
      count(this.inTurnQueue, key, 1)
      this.writes.wake()
    }
    try {
      await this.exclusive(() => this.observe(record))
    } finally {
      if (key !== null) count(this.inTurnQueue, key, -1)
    }
  }

  /** A waiting batch held back for one still being processed, to be written together (input-pairs.ts). */
  private pairedBatchComing(items: { record: LogRecord }[], waiting: readonly { record: LogRecord }[][]): boolean {
    const key = items.length ? inputKey(items[0]!.record) : null
    if (key === null) return false
    // A batch waiting for a turn of its own (observeInTurn) is not waited for: this turn holds it.
    const coming = (k: number) => (this.processing.get(k) ?? 0) > 0 && !this.inTurnQueue.has(k)
    return heldForPair(key, coming, waiting.map((w) => (w.length ? inputKey(w[0]!.record) : null)))
  }

  /**
   * A batch's results from the decode thread's reply, record by record in log order as `process`
   * gives them: each record observed (its partition's state restored first when needed), an order
   * kept where its tenant's currency agrees; a record the thread left, or of another currency, is
   * processed here, which says why.
   */
  private async takeInputs(def: PipelineDefinition<EngineInput>, records: readonly LogRecord[], codec: EventCodec, reply: InputsReply): Promise<StepResult<EngineInput>[]> {
    const n = records.length
    const out: StepResult<EngineInput>[] = new Array(n)
    const keep = new Uint8Array(n)
    const kept = ok<EngineInput>({ kind: 'inputs', partition: records[0]?.partition ?? 0, reply, keep })
    const { kind, nums } = reply
    let handled = 0
    // The last tenant's settled currency: a batch is mostly one tenant's, and the cache's lookup is an LRU's.
    let lastTenant = NaN
    let lastCurrency: string | undefined
    for (let i = 0; i < n; i++) {
      const record = records[i]!
      const k = kind[i]!
      // Money of one tenant is in one currency (checkInputEvent's rule; a lookup that fails fails the batch).
      const tenantId = nums[i * STRIDE]!
      const currency = k === ORDER ? reply.currencies[reply.currencyOf[i]!]! : null
      if (currency !== null && tenantId !== lastTenant) {
        lastCurrency = this.currencies.settled(tenantId) ?? (await this.currencies.of(tenantId, currency))
        lastTenant = tenantId
      }
      if (k === LEFT || (currency !== null && lastCurrency !== currency)) {
        const r = processRecord(def, record, codec)
        out[i] = r instanceof Promise ? await r : r
        continue
      }
      if (!this.observeNow(record)) await this.observeInTurn(record)
      keep[i] = 1
      handled++
      out[i] = kept
    }
    decodedOffMain.inc({ pipeline: this.name }, handled)
    return out
  }

  /**
   * A rebalance: state of revoked partitions is dropped (their new owner restores it, and this
   * consumer's tick must not rescore customers it no longer owns); newly assigned partitions are
   * restored at once (onAssign), else by the next batch or tick, so quiet customers still age.
   */
  private assign(partitions: number[]): void {
    const keep = new Set(partitions)
    for (const p of this.loaded) if (!keep.has(p)) this.unload(p)
    this.assigned = keep
    this.deps.logger.info({ pipeline: this.name, partitions: [...keep].sort((a, b) => a - b) }, 'partitions assigned')
  }

  private unload(p: number): void {
    this.customers.dropPartition(p)
    this.nextOffset.delete(p)
    this.memberships.forget((r) => this.partitionOf(r.tenantId, r.profileId) === p)
    this.loaded.delete(p)
  }

  private partitionOf(tenantId: number, customerId: number): number {
    return customerPartition(tenantId, customerId, this.deps.partitions)
  }

  /** The customer's partition is this consumer's now (`owned`): what a write outside a batch may write. */
  private ownedNow(c: Customer): boolean {
    return this.owned === null || this.owned.has(this.customers.partition(c))
  }

  /** Every customer of the write is owned now (ownedNow). */
  private ownsAll(updates: WriteUpdates): boolean {
    for (let i = 0; i < updates.length; i++) if (!this.ownedNow(updates.customer(i))) return false
    return true
  }

  /** A customer with its own row: not absorbed into another's profile. */
  private isProfile(c: Customer): boolean {
    return this.memberships.isProfile(this.customers.tenantId(c), this.customers.customerId(c))
  }

  /**
   * The orders a profile's features fold, placed by `cutoffMs`: its members', from memory where this
   * consumer holds them, else from the state store. Gathered into one reused CountedOrders, valid
   * until the next call.
   */
  private gather(c: Customer, cutoffMs: number): CountedOrders {
    const g = this.counted.reset(cutoffMs)
    const S = this.customers
    const t = S.tenantId(c)
    const id = S.customerId(c)
    if (!this.memberships.record(t, id)) {
      // No profile record names it (membersOf: the customer alone).
      S.gatherOrders(c, g)
      return g
    }
    for (const m of this.memberships.membersOf(t, id)) {
      if (m === id) S.gatherOrders(c, g)
      else if (this.loaded.has(this.partitionOf(t, m))) {
        const member = S.get(t, m)
        if (member !== undefined) S.gatherOrders(member, g)
      } else gatherBook(this.foreign.get(customerKey(t, m)) ?? emptyBook(), g)
    }
    return g
  }

  /** Members of these profiles that live in partitions this consumer has not loaded. */
  private foreignMembers(profiles: Iterable<Customer>): Map<number, Set<number>> {
    const out = new Map<number, Set<number>>()
    for (const c of profiles) {
      const t = this.customers.tenantId(c)
      const id = this.customers.customerId(c)
      for (const m of this.memberships.membersOf(t, id)) {
        if (m === id || this.loaded.has(this.partitionOf(t, m))) continue
        if (!out.has(t)) out.set(t, new Set())
        out.get(t)!.add(m)
      }
    }
    return out
  }

  /**
   * Reads the stored facts of foreign members (`all`: every one of these profiles', else those not
   * read yet); returns the profiles whose foreign facts changed.
   */
  private async readForeign(profiles: Customer[], all: boolean): Promise<Set<Customer>> {
    const changed = new Set<string>()
    // Members in partitions this consumer holds are read from memory: load those partitions first.
    for (const [t, members] of this.foreignMembers(profiles)) {
      for (const m of members) {
        const q = this.partitionOf(t, m)
        if (this.assigned?.has(q) && !this.loaded.has(q)) await this.loadPartition(q)
      }
    }
    for (const [t, members] of this.foreignMembers(profiles)) {
      const ids = [...members].filter((m) => all || !this.foreign.has(customerKey(t, m)))
      if (!ids.length) continue
      const byCustomer = new Map<number, OrderBook>(ids.map((m) => [m, emptyBook()]))
      await this.storedWrites()
      for (const f of await loadCustomerFacts(this.deps.store, t, ids)) {
        const book = byCustomer.get(f.customerId)
        if (book) bookAppend(book, orderKey(f.orderId), f)
      }
      for (const [m, next] of byCustomer) {
        const k = customerKey(t, m)
        if (!sameBook(this.foreign.get(k), next)) changed.add(k)
        this.foreign.set(k, next)
      }
    }
    const S = this.customers
    return new Set(profiles.filter((c) => S.live(c) && this.memberships.membersOf(S.tenantId(c), S.customerId(c)).some((m) => changed.has(customerKey(S.tenantId(c), m)))))
  }

  private decode(record: LogRecord, codec: EventCodec): StepResult<EngineInput> | Promise<StepResult<EngineInput>> {
    if (record.topic !== TOPICS.profileChanges.name) {
      const r = decodeInputEvent(record, codec, this.now(), this.currencies)
      return r instanceof Promise ? r.then(cutForFold) : cutForFold(r)
    }
    const r = decodeRecord<ProfileChanged>(record, codec)
    const profile = (d: StepResult<ProfileChanged>): StepResult<EngineInput> => (d.kind === 'ok' ? ok({ kind: 'profile' as const, event: d.value }) : d)
    return r instanceof Promise ? r.then(profile) : profile(r)
  }

  /**
   * `observe` without waiting for the batches and ticks before it, when it has nothing to restore:
   * the partition's state is loaded, the record follows the offsets seen (or repeats one), and no
   * rebalance is waiting its turn to drop state. False when the record must wait its turn.
   * Records of one partition come one after another, so the next offset is never raced.
   */
  private observeNow(record: LogRecord): boolean {
    if (this.assignsPending > 0 || !this.loaded.has(record.partition)) return false
    const offsets = this.offsetsOf(record.partition)
    const offset = Number(record.offset)
    const expected = offsets.get(record.topic)
    if (expected !== undefined && offset > expected) return false
    offsets.set(record.topic, offset + 1)
    return true
  }

  /**
   * The offsets a restored partition's records are expected from: the group's committed ones. A
   * partition restored before any of its records came (at its assignment, or by the tick) would
   * otherwise have none, and should another consumer fold and commit its records while this one
   * lost it unawares (a session that expired, then the partition given back), observe() would not
   * see the jump and would fold onto a stale copy.
   */
  private async startingOffsets(p: number): Promise<void> {
    const offsets = this.offsetsOf(p)
    for (const topic of [TOPICS.orders.name, TOPICS.customers.name, TOPICS.profileChanges.name]) {
      if (offsets.has(topic)) continue
      const committed = (await this.deps.log.committedOffsets(this.name, topic)).find((o) => o.partition === p)
      // Nothing committed: the group starts at the log's beginning (a topic whose first records are
      // gone by retention costs one restore more at its first record).
      offsets.set(topic, committed && committed.offset !== '-1' ? Number(committed.offset) : 0)
    }
  }

  private offsetsOf(partition: number): Map<string, number> {
    let offsets = this.nextOffset.get(partition)
    if (!offsets) this.nextOffset.set(partition, (offsets = new Map()))
    return offsets
  }

  /**
   * Restores a partition's state the first time it is seen, and again when its offsets jumped
   * forward (another consumer owned it meanwhile and our copy is stale). A rewind (redelivery)
   * needs nothing: folding an event twice changes nothing.
   */
  private async observe(record: LogRecord): Promise<void> {
    const offset = Number(record.offset)
    const expected = this.nextOffset.get(record.partition)?.get(record.topic)
    if (!this.loaded.has(record.partition) || (expected !== undefined && offset > expected)) await this.loadPartition(record.partition)
    this.offsetsOf(record.partition).set(record.topic, offset + 1)
  }

  private async loadPartition(p: number): Promise<void> {
    await this.storedWrites()
    const started = Date.now()
    // Profiles held in other partitions may count members of this one, read from the store until
    // now: their aggregates before and after the load tell which ones this load moved.
    const S = this.customers
    const cutoffOf = (c: Customer) => this.refs.get(S.tenantId(c))?.cutoffMs ?? Infinity
    const held = new Map<Customer, string>()
    for (const c of S.all()) {
      if (S.partition(c) !== p && this.memberships.hasOthers(S.tenantId(c), S.customerId(c))) held.set(c, JSON.stringify(this.aggregates(c, cutoffOf(c))))
    }
    this.unload(p)
    const [stored, profiles] = await Promise.all([loadPartitionCustomers(this.deps.store, p), loadPartitionProfiles(this.deps.store, p)])
    for (const s of stored) {
      const c = this.customer(s.tenantId, s.customerId, p)
      S.setEmail(c, s.email, s.emailVersion)
      S.setEmitted(c, s.segment, s.rfmScore)
      S.setRowVersion(c, s.version)
      S.setDeleted(c, s.deleted)
    }
    // Streamed: a partition's facts are never all in memory as objects at once. A customer's
    // facts come together: it is looked up once, and its book laid down once, at its size.
    let filling: Customer | null = null
    const books = new BookBuilder()
    const filled = () => {
      if (filling !== null) S.appendOrders(filling, books)
    }
    const facts = await eachPartitionFact(this.deps.store, p, (f) => {
      if (filling === null || S.customerId(filling) !== f.customerId || S.tenantId(filling) !== f.tenantId) {
        filled()
        filling = this.customer(f.tenantId, f.customerId, p)
      }
      books.add(orderKey(f.orderId), f)
    })
    filled()
    for (const r of profiles) {
      this.memberships.apply(r)
      this.customer(r.tenantId, r.profileId, p)
    }
    this.loaded.add(p)
    await this.startingOffsets(p)
    // This partition's profiles may count members elsewhere, and profiles elsewhere members here.
    const multi = S.all().filter((c) => this.memberships.hasOthers(S.tenantId(c), S.customerId(c)))
    await this.readForeign(multi, false)
    for (const [c, before] of held) {
      // A profile held before whose members here were read from the store: rescored with the next write.
      if (S.live(c) && before !== JSON.stringify(this.aggregates(c, cutoffOf(c)))) {
        S.setDirty(c, true)
        this.stale.set(c, S.gen(c))
      }
    }
    this.deps.logger.info({ pipeline: this.name, partition: p, orders: facts, customers: stored.length, ms: Date.now() - started }, 'partition state restored')
  }

  private customer(tenantId: number, customerId: number, partition: number): Customer {
    return this.customers.get(tenantId, customerId) ?? this.customers.add(tenantId, customerId, partition)
  }

  private async apply(items: { record: LogRecord; value: EngineInput }[]): Promise<Storing> {
    const f: Folding = { touched: new Set(), latest: new Map(), profiles: new Set() }
    const { touched, latest, profiles } = f
    // A part read by the decode thread is held by each of its records: folded once.
    const parts = new Set<EngineInput>()
    for (const { record, value } of items) {
      if (value.kind === 'profile') {
        const e = value.event
        const r: ProfileRecord = { tenantId: e.tenant_id, profileId: e.profile_id, members: e.members, absorbedInto: e.absorbed_into, at: e.occurred_at, eventId: e.event_id }
        // Keyed tenant:profile like the customer's events, so it is on the partition of the profile's own customer.
        const c = this.customer(e.tenant_id, e.profile_id, record.partition)
        if (this.memberships.apply(r)) this.pendingProfiles.push({ partition: record.partition, record: r })
        this.customers.setDirty(c, true)
        touched.add(c)
        profiles.add(c)
        continue
      }
      if (value.kind === 'inputs') {
        if (parts.has(value)) continue
        parts.add(value)
        const reply = value.reply
        // What the part's pending facts read their ids from: the reply's text alone, not its other arrays (pending-facts.ts).
        const ids: IdTexts = { text: reply.text, textEnds: reply.textEnds }
        const { kind, nums, cancelled } = reply
        for (let i = 0; i < value.keep.length; i++) {
          if (!value.keep[i]) continue
          const at = i * STRIDE
          const tenantId = nums[at]!
          const customerId = nums[at + 1]!
          const owner = this.ownerOf(tenantId, customerId)
          if (owner && !this.loaded.has(owner.partition)) await this.loadPartition(owner.partition)
          const c = this.touch(f, tenantId, customerId, value.partition, owner)
          if (kind[i] === CUSTOMER) this.foldEmail(c, replyText(reply, 2 * i), nums[at + 2]!)
          else {
            // The ids stay in the reply's text until a write stores the fact (pending-facts.ts).
            const fact = { version: nums[at + 3]!, placedAt: nums[at + 4]!, cents: nums[at + 5]!, cancelled: cancelled[i] === 1 }
            this.foldOrder(f, c, nums[at + 6]!, fact, ids, 2 * i, nums[at + 2]!)
          }
        }
        continue
      }
      const owner = this.ownerOf(value.tenantId, value.customerId)
      if (owner && !this.loaded.has(owner.partition)) await this.loadPartition(owner.partition)
      const c = this.touch(f, value.tenantId, value.customerId, record.partition, owner)
      if (value.kind === 'order') this.foldOrder(f, c, orderKey(value.orderId), value.fact, idTexts(value.orderId, value.fact.eventId), 0, value.occurredAt)
      else this.foldEmail(c, value.email, value.occurredAt)
    }
    await this.readForeign([...profiles], false)
    for (const [c, gen] of this.stale) if (this.customers.live(c) && this.customers.gen(c) === gen) touched.add(c)
    this.stale.clear()
    // A tenant aged to its data's end moves with its newest order.
    await this.references(latest.keys(), this.now())
    for (const [t, ms] of latest) {
      const end = Math.max(this.dataEnds.get(t) ?? -Infinity, ms)
      this.dataEnds.set(t, end)
      const r = this.refs.get(t)
      if (r?.setting === 'data_end' && r.ms !== end) this.refs.set(t, { ...r, ms: end })
    }
    return this.flush([...touched], this.now(), true)
  }

  /** The profile a customer's orders count for, when it is another customer's held by this consumer (its partition loaded before the fold); else null. */
  private ownerOf(tenantId: number, customerId: number): { customerId: number; partition: number } | null {
    const owner = this.memberships.profileOf(tenantId, customerId)
    if (owner === undefined || owner === customerId) return null
    const partition = this.partitionOf(tenantId, owner)
    return this.assigned?.has(partition) !== false ? { customerId: owner, partition } : null
  }

  /** The customer an input is about, touched, and its profile's owner (ownerOf) with it. */
  private touch(f: Folding, tenantId: number, customerId: number, partition: number, owner: { customerId: number; partition: number } | null): Customer {
    const c = this.customer(tenantId, customerId, partition)
    if (owner) {
      const o = this.customer(tenantId, owner.customerId, owner.partition)
      this.customers.setDirty(o, true)
      f.touched.add(o)
      f.profiles.add(o)
    }
    this.customers.setDirty(c, true)
    f.touched.add(c)
    return c
  }

  /** Folds an order's fact (its order's id text j of `ids`, its event's j + 1). */
  private foldOrder(f: Folding, c: Customer, key: number, fact: Omit<OrderFact, 'eventId'>, ids: IdTexts, j: number, occurredAt: number): void {
    const S = this.customers
    if (S.mergeOrder(c, key, fact)) {
      f.profiles.add(c)
      // Newer than the book's, so newer than any fact pending for the order.
      S.addPendingFact(c, key, ids, j, fact)
    }
    const t = S.tenantId(c)
    f.latest.set(t, Math.max(f.latest.get(t) ?? 0, occurredAt))
  }

  /** Latest profile wins by event time, ties by the larger email, whatever the arrival order. */
  private foldEmail(c: Customer, email: string, occurredAt: number): void {
    const S = this.customers
    const version = S.emailVersion(c)
    if (occurredAt > version || (occurredAt === version && email > S.email(c))) S.setEmail(c, email, occurredAt)
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

  /**
   * The tenant's model for a write of `customers`: cached, else stored, else fitted on the
   * customers this consumer holds. A model fitted from no buyer (a write of customer records whose
   * orders come in a later one) says nothing of the tenant and scores no one: it is not stored, and
   * is used only until a write brings a buyer, which fits again. Kept, it would have scored the
   * tenant's buyers without segments until the next refresh.
   */
  private async model(tenantId: number, now: number, ref: Reference, customers: readonly Customer[]): Promise<TenantModel | null> {
    let buyer: boolean | undefined
    const usable = (m: TenantModel | undefined) => m !== undefined && (m.boundaries !== null || !(buyer ??= this.hasBuyer(tenantId, customers, ref)))
    const cached = this.models.get(tenantId)
    if (usable(cached)) return cached!
    const stored = (await loadModels(this.deps.store, [tenantId])).get(tenantId)
    if (usable(stored)) {
      this.models.set(tenantId, stored!)
      return stored!
    }
    const aggs: CustomerAggregates[] = []
    for (const c of this.customers.all()) if (this.customers.tenantId(c) === tenantId && this.isProfile(c)) aggs.push(this.aggregates(c, ref.cutoffMs))
    const m = await buildTenantModelParallel(aggs, now, { clvModel: this.clvModel, refitClv: true, referenceMs: ref.ms }, this.deps.logger)
    await this.keepModel(tenantId, m)
    return m
  }

  /** A model just fitted: cached, and stored unless it has no buyer (model()). */
  private async keepModel(tenantId: number, m: TenantModel): Promise<void> {
    if (m.boundaries !== null) await saveModel(this.deps.store, tenantId, m)
    this.models.set(tenantId, m)
  }

  /** Some of `customers` of the tenant is a profile with a counting order. */
  private hasBuyer(tenantId: number, customers: readonly Customer[], ref: Reference): boolean {
    for (const c of customers) if (this.customers.tenantId(c) === tenantId && this.isProfile(c) && this.aggregates(c, ref.cutoffMs).orderCount > 0) return true
    return false
  }

  /** Row versions grow per customer across restarts and clock differences (microsecond-scaled time, else +1). */
  private version(c: Customer, now: number): number {
    return Math.max(now * 1000, this.customers.rowVersion(c) + 1)
  }

  /** A profile's aggregates: the orders of its members placed by the tenant's cutoff (Infinity: every order). */
  private aggregates(c: Customer, cutoffMs: number): CustomerAggregates {
    return this.gather(c, cutoffMs).aggregates()
  }

  /** Feature values of a profile's aggregates; customers of one x and T share their purchase curve through `memo`. */
  private valuesOf(agg: CustomerAggregates, model: TenantModel | null, ref: Reference, memo: ClvMemo): FeatureValues {
    const part = model?.clv && agg.orderCount > 0 ? clvFeatures(agg, model.clv, utcDay(ref.ms), this.opts, memo) : null
    return computeFeatures(agg, model, ref.ms, this.opts, part)
  }

  /**
   * Recomputes customers and publishes and stores what changed. `touched` customers (their
   * events are in the batch) are always written; others only when a value moved.
   */
  private async flush(customers: Customer[], now: number, touched: boolean, tickEpoch?: number): Promise<{ changed: number; segmentChanges: number; stored: Promise<void> }> {
    const outsideBatch = tickEpoch !== undefined
    const S = this.customers
    // A customer whose partition was dropped meanwhile is its new owner's (or the restore's) to write.
    customers = customers.filter((c) => S.live(c) && (!outsideBatch || this.ownedNow(c)))
    const tenants = new Set(customers.map((c) => S.tenantId(c)))
    await this.references(tenants, now)
    const models = new Map<number, TenantModel | null>()
    const refs = new Map<number, Reference>()
    for (const t of tenants) {
      const ref = this.referenceOf(t, now)
      const model = await this.model(t, now, ref, customers)
      refs.set(t, ref)
      models.set(t, model)
    }
    // In chunks: a tick over a million customers would otherwise hold every row, record and
    // change at once (gigabytes) before writing any.
    const out = { changed: 0, segmentChanges: 0 }
    // Customers of one x and T share their purchase curve: across the stream's writes (the
    // memo is keyed by fit, so a refit starts afresh), or for this tick's pass over the tenant.
    const memo = outsideBatch ? new ClvMemo() : this.memo
    const chunk = this.deps.flushChunk ?? FLUSH_CHUNK
    // A chunk's inserts run while the next chunk is scored (write()).
    const stored: Promise<void>[] = []
    try {
      for (let i = 0; i === 0 || i < customers.length; i += chunk) {
        const r = await this.write(customers.slice(i, i + chunk), now, touched, tickEpoch, { refs, models, memo })
        if (!r) break
        out.changed += r.changed
        out.segmentChanges += r.segmentChanges
        stored.push(r.stored)
      }
    } catch (err) {
      // The batches come again once the earlier chunks' inserts have settled (or been rolled back).
      await Promise.allSettled(stored)
      throw err
    }
    // Settled only once every chunk's inserts have: a failed one fails the batches after the others settled.
    return { ...out, stored: Promise.allSettled(stored).then((rs) => rs.forEach((r) => { if (r.status === 'rejected') throw r.reason })) }
  }

  /**
   * Until the writes in flight are stored (failed ones rolled back): for what reads the state store
   * back (a partition's restore, a profile's foreign members, the tick's stored aggregates).
   */
  private async storedWrites(): Promise<void> {
    while (this.storing.size) await Promise.allSettled([...this.storing])
  }

  /** The RowBinary encodings of the written rows, looked up at the first write (a lookup that fails is asked again at the next). */
  private rowEncodings(): Promise<RowEncodings> {
    const store = this.deps.store
    this.encodings ??= Promise.all([
      encodingInsertFor(store, 'customer_features', FEATURE_ROW_COLUMNS, NO_MERGE_ON_INSERT),
      encodingInsertFor(store, 'feature_order_facts', FACT_ROW_COLUMNS, NO_MERGE_ON_INSERT),
      encodingInsertFor(store, 'segment_changes', SEGMENT_CHANGE_COLUMNS),
    ]).then(
      ([features, facts, changes]) => ({ features, facts, changes }),
      () => ((this.encodings = null), { features: null, facts: null, changes: null }),
    )
    return this.encodings
  }

  /**
   * A write's scoring, its rows and events encoded as they are made: synchronous and apart from
   * write() itself, which awaits. V8 optimises a hot loop inside a long async function by
   * compiling all of it again for each loop it enters (on-stack replacement) and each resumption:
   * that was a dozen compilations of write() for a backlog, 0.6 CPU-s of the helper threads.
   */
  private score(customers: Customer[], now: number, touched: boolean, encodings: RowEncodings, refs: Map<number, Reference>, models: Map<number, TenantModel | null>, memo: ClvMemo) {
    // Facts and live rows encoded as they are made (InsertRows); delete markers, which carry
    // is_deleted, as objects of their own insert.
    const facts = new InsertRows(this.deps.store, 'feature_order_facts', FACT_ROW_COLUMNS, encodings.facts, NO_MERGE_ON_INSERT)
    const rows = new InsertRows(this.deps.store, 'customer_features', FEATURE_ROW_COLUMNS, encodings.features, NO_MERGE_ON_INSERT)
    const markers: ReturnType<typeof deletedFeatureRow>[] = []
    // Events encoded as they are made (at once when the schema is known here, which is the rule), and
    // what the state takes from the write kept small (WriteUpdates): a write holds no event or feature
    // values across its awaits.
    // Their buffers from the pool, given back once sent (write()).
    const featureRecords = new EncodedRecords(this.deps.codec, TOPICS.customerFeatures.name, undefined, WRITE_BUFFERS)
    const changes = new SegmentChanges(new EncodedRecords(this.deps.codec, TOPICS.segmentChanges.name, undefined, WRITE_BUFFERS), new InsertRows(this.deps.store, 'segment_changes', SEGMENT_CHANGE_COLUMNS, encodings.changes))
    const updates = new WriteUpdates(this.customers, customers.length)
    // A customer's pending facts (forEachPending's `this`: its identity).
    const addFact = function (this: CustomerIdentity, f: PendingFact) {
      facts.add(factRowValues(this, f.orderId, f))
    }
    const S = this.customers
    for (const c of customers) {
      const t = S.tenantId(c)
      const ref = refs.get(t)!
      if (!this.isProfile(c)) {
        // Absorbed into another's profile: its facts are stored (the profile's owner reads them), its row is deleted once.
        const deleted = S.deleted(c)
        if (!S.dirty(c) && deleted) continue
        const id = S.identity(c)
        S.forEachPending(c, addFact, id)
        const version = deleted ? S.rowVersion(c) : this.version(c, now)
        if (!deleted) {
          const empty = computeFeatures(EMPTY_AGGREGATES, null, ref.ms, this.opts, null)
          markers.push(deletedFeatureRow(id, empty, now, version))
          if (S.segment(c) !== null) changes.add(segmentChangedEvent(id, { segment: S.segment(c), rfmScore: S.score(c) }, empty, now))
        }
        updates.add(c, null, null, NaN, version, true)
        continue
      }
      const orders = this.gather(c, ref.cutoffMs)
      const agg = orders.aggregates()
      const v = this.valuesOf(agg, models.get(t) ?? null, ref, memo)
      const digest = featuresDigest(v)
      const moved = S.last(c) !== digest
      if (!touched && !moved && !S.dirty(c) && !S.deleted(c)) continue
      const id = S.identity(c)
      S.forEachPending(c, addFact, id)
      const version = this.version(c, now)
      rows.add(featureRowValues(id, agg, orders.history(), v, now, version))
      const key = customerKey(t, id.customerId)
      if (moved) featureRecords.add(key, featuresEvent(id, agg, v, now))
      const emitted = S.segment(c)
      if (v.segment !== emitted) changes.add(segmentChangedEvent(id, { segment: emitted, rfmScore: S.score(c) }, v, now))
      updates.add(c, v.segment, v.rfm_score, digest, version, false)
    }
    return { facts, rows, markers, featureRecords, changes, updates }
  }

  /** Scores, publishes and stores one chunk of a flush; null when a rebalance began meanwhile (nothing of it written). */
  private async write(
    customers: Customer[],
    now: number,
    touched: boolean,
    tickEpoch: number | undefined,
    { refs, models, memo }: { refs: Map<number, Reference>; models: Map<number, TenantModel | null>; memo: ClvMemo },
  ): Promise<{ changed: number; segmentChanges: number; stored: Promise<void> } | null> {
    const outsideBatch = tickEpoch !== undefined
    const { facts, rows, markers, featureRecords, changes, updates } = this.score(customers, now, touched, await this.rowEncodings(), refs, models, memo)
    const profileRows = this.pendingProfiles.map((p) => profileRow(p.partition, p.record))
    if (!updates.length && !profileRows.length) return { changed: 0, segmentChanges: 0, stored: Promise.resolve() }
    // Publish before storing: a crash in between re-publishes (at least once) instead of losing a change.
    const changeRecords = await changes.records.records()
    const encodedFeatures = await featureRecords.records()
    // A rebalance began while this tick computed: write nothing (the next tick, or the new owner, does).
    if (outsideBatch && (this.ownershipEpoch !== tickEpoch || !this.ownsAll(updates))) {
      this.deps.logger.info({ pipeline: this.name }, 'tick writes dropped: the group changed while it ran (the next tick or the new owner writes them)')
      return null
    }
    // Both sends settle before their records' buffers go back to the pool (a failed one too).
    const sent = await Promise.allSettled([
      changeRecords.length ? this.deps.log.send(TOPICS.segmentChanges.name, changeRecords) : undefined,
      encodedFeatures.length ? this.deps.log.send(TOPICS.customerFeatures.name, encodedFeatures) : undefined,
    ])
    changes.records.release()
    featureRecords.release()
    for (const r of sent) if (r.status === 'rejected') throw r.reason
    // Published: the state takes the write now, and the next write (of other batches, or the next
    // chunk) is scored while its rows are inserted: on two cores the consumer's thread otherwise
    // waited for every insert. Should an insert fail, the write is rolled back (rollBackAll) and its
    // batches come again; what reads the store back waits for the writes in flight (storedWrites).
    // One write's inserts at a time: this one waits for those of the write before it, so inserts
    // never pile up (each holds a thread of the pool the log's file reads also use: at 1,000 events
    // a second the latency of a change doubled). Had they failed, this write, scored on the state
    // they rolled back, comes again with its batches instead of being stored.
    const previous = this.inserting
    if (previous) {
      const previousStored = await previous.then(() => true, () => false)
      // Seen by the one write scored meanwhile (turns are exclusive): the writes after it are scored on the rolled-back state.
      if (this.inserting === previous) this.inserting = null
      if (!previousStored) throw new Error('the write before this one was not stored and was rolled back: this one comes again with its batches')
    }
    const taken = this.pendingProfiles.splice(0, profileRows.length)
    updates.takeAll()
    const stored = Promise.all([
      facts.insert(),
      rows.insert(),
      insertJsonRows(this.deps.store, 'customer_features', markers),
      changes.rows.insert(),
      insertJsonRows(this.deps.store, 'feature_profiles', profileRows),
    ]).then(
      () => {
        updates.settleAll()
        for (const [to, n] of changes.byTarget) segmentChangesEmitted.inc({ pipeline: this.name, to }, n)
      },
      (err: unknown) => {
        updates.rollBackAll()
        this.pendingProfiles.unshift(...taken)
        throw err
      },
    )
    this.storing.add(stored)
    this.inserting = stored
    const done = () => void this.storing.delete(stored)
    stored.then(done, done)
    return { changed: rows.length + markers.length, segmentChanges: changes.rows.length, stored }
  }

  /**
   * The punctuator: time moves recency and churn while customers are quiet, and quintile
   * thresholds drift as data arrive. Refreshes the models of the tenants this consumer holds
   * (thresholds from every stored customer of the tenant, CLV refitted when due), rescores
   * every customer held, emits the resulting segment changes and writes today's snapshot.
   */
  tick(): Promise<{ tenants: number; changed: number; segmentChanges: number }> {
    return this.exclusive(async () => {
      // The tick reads stored aggregates: the batches' writes in flight are stored first.
      await this.storedWrites()
      const now = this.now()
      const epoch = this.ownershipEpoch
      for (const p of this.assigned ?? []) if (!this.loaded.has(p)) await this.loadPartition(p)
      const tenants = this.customers.tenantIds()
      if (!tenants.length) return { tenants: 0, changed: 0, segmentChanges: 0 }
      // Members another consumer owns may have new orders (it stores them; this consumer scores their profile).
      const S = this.customers
      const multi = S.all().filter((c) => this.memberships.hasOthers(S.tenantId(c), S.customerId(c)))
      for (const c of await this.readForeign(multi, true)) S.setDirty(c, true)
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
        // Due: one consumer of the group refreshes it per interval (the others keep the stored
        // model until their next tick). A moved cutoff is refreshed by every consumer at once.
        if (current && !moved && !(await claimModelRefresh(this.deps.store, t, Math.floor(now / this.refreshIntervalMs), this.owner))) {
          this.models.set(t, current)
          modelRefreshes.inc({ pipeline: this.name, outcome: 'claimed_elsewhere' })
          continue
        }
        modelRefreshes.inc({ pipeline: this.name, outcome: 'refreshed' })
        // A new cutoff changes every aggregate: score against the consumer's refolded customers
        // rather than the stored rows, which still hold the old cutoff.
        const aggs = moved && prev ? S.all().filter((c) => S.tenantId(c) === t && this.isProfile(c)).map((c) => this.aggregates(c, ref.cutoffMs)) : await tenantAggregates(this.deps.store, t)
        const clv = current?.clv
        const refit = !clv || moved || now - clv.fittedAt >= this.refitMs || aggs.length >= 2 * clv.customers
        const m = await buildTenantModelParallel(aggs, now, { clvModel: this.clvModel, refitClv: refit, previous: current, referenceMs: ref.ms }, this.deps.logger)
        await this.keepModel(t, m)
      }
      const { stored: written, ...r } = await this.flush(S.all(), now, false, epoch)
      await written
      for (const t of tenants) await writeSegmentSnapshot(this.deps.store, [t], this.referenceOf(t, now).ms, now)
      return { tenants: tenants.length, ...r }
    })
  }

  /** Forgets cached models, so the next batch or tick reads what a processing run stored. */
  invalidateModel(tenantId: number): void {
    this.models.delete(tenantId)
  }

}

type RowEncodings = { features: EncodingInsert | null; facts: EncodingInsert | null; changes: EncodingInsert | null }

/** A write's segment changes as they are made: their records, their rows, and how many go to each segment (the metric). */
class SegmentChanges {
  readonly byTarget = new Map<string, number>()

  constructor(
    readonly records: EncodedRecords,
    readonly rows: InsertRows,
  ) {}

  add(e: SegmentChanged): void {
    this.records.add(customerKey(e.tenant_id, e.customer_id), e)
    this.rows.add(segmentChangeRowValues(e))
    const to = e.segment ?? 'none'
    this.byTarget.set(to, (this.byTarget.get(to) ?? 0) + 1)
  }
}

/** What a batch's fold gathers for its flush: customers touched, each tenant's newest order time, profiles whose orders or members changed. */
interface Folding {
  touched: Set<Customer>
  latest: Map<number, number>
  profiles: Set<Customer>
}

function newest(a: TenantModel | undefined, b: TenantModel | undefined): TenantModel | undefined {
  if (!a) return b
  if (!b) return a
  return a.version >= b.version ? a : b
}
