import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { encodingInsertFor, insertJsonRows, insertValueRows, NO_MERGE_ON_INSERT, type EncodingInsert, type Store } from '../../common/store/clickhouse.ts'
import { RowBinaryUnsupported } from '../../common/store/row-binary.ts'
import { WriteTurns } from '../../common/runtime/write-turns.ts'
import { decodeInputEvent, type InputEvent } from '../ingest/index.ts'
import { ok, processEach, processRecord, type PipelineDefinition, type StepResult } from '../../common/runtime/pipeline.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import type { LogRecord } from '../../common/eventlog/port.ts'
import { OrderRowsThread, type OrderRowsReply } from './order-rows.ts'
import { TenantCurrencies, TenantSettingsStore } from '../../common/store/tenant-settings.ts'
import { customerRow, ORDER_EVENT_COLUMNS, orderEventValues } from './rows.ts'
import { markTenantsChanged } from '../../common/store/data-changes.ts'
import { decodedOffMain } from '../../common/runtime/metrics.ts'

export const PROJECTION_GROUP = 'cdp-projection'
/** Batches of a partition the projection handles at once (PipelineDefinition.batchesInFlight). */
export const PROJECTION_BATCHES_IN_FLIGHT = 3


/**
 * What the projection keeps of a record until its batch is written: an order event's
 * `order_events` row already encoded (chdb), or the event itself (on a ClickHouse server, for a
 * customer, and for a row RowBinary does not take exactly).
 */
type Projected =
  | InputEvent
  | { kind: 'row'; tenant: number; row: Uint8Array }
  /** The rows of a part's records, encoded on the decode thread: one value, held by each of those records. */
  | { kind: 'rows'; tenants: number[]; rows: Uint8Array[]; count: number }

/**
 * orders and customers topics → ClickHouse raw projections (order_events, orders, customers).
 * Semantically invalid events (a negative total, an email that is not one, an order in another
 * currency than its tenant's) are dead-lettered.
 *
 * On chdb an order event's row is encoded as RowBinary as soon as the event is checked, and the
 * batch holds only those bytes until its write: the decoded events die young. Held until the
 * write, a batch's events outlived a young-generation collection or two and were copied and
 * promoted, which took about a fifth of the main thread (docs/analytics-performance.md, "Ingest").
 */
export function projectionPipeline(store: Store, opts: { now?: () => number; name?: string; /** false: decode on the main thread (tests of that path). */ thread?: boolean } = {}): PipelineDefinition<Projected> {
  const now = opts.now ?? Date.now
  const currencies = new TenantCurrencies(new TenantSettingsStore(store))
  // undefined: not looked up yet; null: rows go as values (a server).
  let orderRows: EncodingInsert | null | undefined
  let lookup: Promise<EncodingInsert | null> | null = null
  // Looked up at the first record. Should the lookup fail, that record keeps its event (its write
  // then meets the same store and fails the batch, to be delivered again) and the next one asks again.
  const encoding = () =>
    (lookup ??= encodingInsertFor(store, 'order_events', ORDER_EVENT_COLUMNS, NO_MERGE_ON_INSERT).then(
      (e) => (orderRows = e),
      () => ((lookup = null), null),
    ))
  const encoded = (r: StepResult<InputEvent>): StepResult<Projected> => (r.kind === 'ok' && r.value.kind === 'order' && orderRows ? encodeOrder(orderRows, r.value.event) ?? r : r)
  // Batches of partitions consumed at once are written together when they meet (write-turns.ts).
  // A write with fewer than 40,000 rows waiting waits up to 50 ms for more: on a backlog the next
  // parts come within that, and the inserts stay large; caught up, a write waits 50 ms at most.
  const writes = new WriteTurns<Projected>((values) => writeProjections(store, values, orderRows ?? null), undefined, { items: 40_000, waitMs: 50, weigh: (v) => (v.kind === 'rows' ? v.count : 1) })
  const thread = opts.thread === false ? null : new OrderRowsThread()
  // The parts' main-thread stages run one after another, in the order their parts were asked for:
  // a tenant's first order adopts its currency in log order, as record by record.
  let stages: Promise<unknown> = Promise.resolve()
  const inStages = <R>(stage: () => Promise<R>): Promise<R> => {
    const run = stages.then(stage)
    stages = run.catch(() => {})
    return run
  }
  /** A part's results from the thread's reply: its rows kept where the tenant's currency agrees, every other record processed here, in order. */
  const mainStage = async (records: readonly LogRecord[], codec: EventCodec, reply: OrderRowsReply): Promise<StepResult<Projected>[]> => {
    const n = records.length
    const kept = new Uint8Array(n)
    const out: StepResult<Projected>[] = new Array(n)
    const tenants = new Set<number>()
    let all = true
    let keptCount = 0
    // The last tenant and currency looked up: a part's records are mostly of one tenant. A tenant's
    // held currency never changes once held, so an answer stays right for the rest of the part.
    let lastTenant = -1
    let lastCurrency = -1
    let lastOk = false
    for (let i = 0; i < n; i++) {
      if (reply.handled[i]) {
        const tenant = reply.tenants[i]!
        const c = reply.currencyOf[i]!
        if (tenant !== lastTenant || c !== lastCurrency) {
          const currency = reply.currencies[c]!
          // Money of one tenant is in one currency (checkInputEvent's rule, with the main thread's cache).
          lastOk = (currencies.settled(tenant) ?? (await currencies.of(tenant, currency))) === currency
          lastTenant = tenant
          lastCurrency = c
        }
        if (lastOk) {
          kept[i] = 1
          keptCount++
          tenants.add(tenant)
          continue
        }
        all = false
      }
      // Left to this thread (a poison record, a broken rule, another currency): decoded again here, which says why.
      const r = processRecord(def, records[i]!, codec)
      out[i] = r instanceof Promise ? await r : r
    }
    decodedOffMain.inc({ pipeline: def.name }, keptCount)
    // One value for the part's rows, held by each of its records: no object per record here.
    const part = ok<Projected>({ kind: 'rows', tenants: [...tenants], rows: all ? [reply.body] : keptRows(reply, kept), count: keptCount })
    for (let i = 0; i < n; i++) if (kept[i]) out[i] = part
    return out
  }
  const def: PipelineDefinition<Projected> = {
    name: opts.name ?? PROJECTION_GROUP,
    topics: [TOPICS.orders.name, TOPICS.customers.name],
    process: (record, codec) => {
      if (orderRows === undefined) return encoding().then(() => decodeInputEvent(record, codec, now(), currencies)).then(encoded)
      const r = decodeInputEvent(record, codec, now(), currencies)
      return r instanceof Promise ? r.then(encoded) : encoded(r)
    },
    sink: (items) => writes.submit(distinctValues(items)),
    // A batch's rows are written in parts while the rest are decoded; the parts that wait for a
    // write go together, so inserts stay large once the writes are the slower side.
    sinkEvery: 10_000,
    // The next batches of a partition are read and decoded while earlier ones are written (rows
    // land in any order: ReplacingMergeTree keeps one row per event). On Kafka a fetch otherwise
    // waited for the writes of the one before (docs/analytics-performance.md, "Ingest").
    batchesInFlight: PROJECTION_BATCHES_IN_FLIGHT,
    processMany: async (records, codec) => {
      if (orderRows === undefined) await encoding()
      const expected = codec.expectedType(TOPICS.orders.name)
      if (!thread || !orderRows || !expected || records[0]?.topic !== TOPICS.orders.name) return inStages(() => processEach(def, records, codec))
      let reply: OrderRowsReply
      try {
        reply = await thread.run(records, codec.registry, { types: orderRows.types, expected }, now())
      } catch {
        // The thread failed (the next part starts another): this part is decoded here.
        return inStages(() => processEach(def, records, codec))
      }
      return inStages(() => mainStage(records, codec, reply))
    },
    close: async () => {
      await thread?.close()
    },
  }
  return def
}

/** The rows of the kept records, where some of the thread's rows are not kept (another currency than the tenant's). */
function keptRows(reply: { body: Uint8Array; rowEnds: Int32Array }, kept: Uint8Array): Uint8Array[] {
  const rows: Uint8Array[] = []
  for (let i = 0; i < kept.length; i++) if (kept[i]) rows.push(reply.body.subarray(i ? reply.rowEnds[i - 1]! : 0, reply.rowEnds[i]!))
  return rows
}

/** The event's row as bytes, or null for a value RowBinary would not store as ClickHouse reads its JSON (kept as values). */
function encodeOrder(orderRows: EncodingInsert, event: OrderEvent): StepResult<Projected> | null {
  try {
    return ok({ kind: 'row', tenant: event.tenant_id, row: orderRows.rows.encode(orderEventValues(event)) })
  } catch (err) {
    if (err instanceof RowBinaryUnsupported) return null
    throw err
  }
}

/**
 * The sink's values, a part's value once: each of the part's records holds it, mostly one after
 * another, but records the main thread decoded may stand between them.
 */
function distinctValues(items: readonly { value: Projected }[]): Projected[] {
  const out: Projected[] = []
  const parts = new Set<Projected>()
  let last: Projected | null = null
  for (const { value } of items) {
    if (value.kind === 'rows') {
      if (value === last || parts.has(value)) continue
      parts.add(value)
      last = value
    }
    out.push(value)
  }
  return out
}

/** The rows of the batches' events, one insert per table for all of them; then their tenants' data marked changed. */
async function writeProjections(store: Store, values: Projected[], orderRows: EncodingInsert | null): Promise<void> {
  const rows: Uint8Array[] = []
  const orders: OrderEvent[] = []
  const customers: CustomerUpserted[] = []
  const tenants = new Set<number>()
  // A part's value comes once (distinctValues).
  for (const value of values) {
    if (value.kind === 'rows') {
      for (const r of value.rows) rows.push(r)
      for (const t of value.tenants) tenants.add(t)
      continue
    }
    if (value.kind === 'row') {
      rows.push(value.row)
      tenants.add(value.tenant)
      continue
    }
    if (value.kind === 'order') orders.push(value.event)
    else customers.push(value.event)
    tenants.add(value.event.tenant_id)
  }
  const writes: Promise<unknown>[] = []
  // The orders table is written by ClickHouse from these rows (migration 014's view: orderStateRow's rule).
  if (rows.length) writes.push(orderRows!.insert(rows))
  if (orders.length) writes.push(insertValueRows(store, 'order_events', ORDER_EVENT_COLUMNS, orders.map(orderEventValues), NO_MERGE_ON_INSERT))
  if (customers.length) writes.push(insertJsonRows(store, 'customers', customers.map(customerRow)))
  await Promise.all(writes)
  // After the rows: a change visible in tenant_data_changes is visible in the projections.
  await markTenantsChanged(store, tenants)
}
