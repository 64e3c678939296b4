import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { encodingInsertFor, insertJsonRows, insertValueRows, type EncodingInsert, type Store } from '../../common/store/clickhouse.ts'
import { RowBinaryUnsupported } from '../../common/store/row-binary.ts'
import { WriteTurns } from '../../common/runtime/write-turns.ts'
import { decodeInputEvent, type InputEvent } from '../ingest/index.ts'
import { ok, type PipelineDefinition, type StepResult } from '../../common/runtime/pipeline.ts'
import { TenantCurrencies, TenantSettingsStore } from '../../common/store/tenant-settings.ts'
import { customerRow, ORDER_EVENT_COLUMNS, orderEventValues } from './rows.ts'
import { markTenantsChanged } from '../../common/store/data-changes.ts'

export const PROJECTION_GROUP = 'cdp-projection'

/**
 * The order events' inserts skip ClickHouse's merge of each block as it is written
 * (`optimize_on_insert`: for a ReplacingMergeTree, collapsing the block's own duplicates, in
 * order_events and in the orders view it feeds). Every reader already collapses duplicates
 * (FINAL, argMax, uniqExact), since a redelivered event arrives in another block anyway; the
 * merge took about a sixth of the insert's CPU (docs/analytics-performance.md, "Ingest").
 */
export const NO_MERGE_ON_INSERT = { settings: { optimize_on_insert: 0 } } as const

/**
 * What the projection keeps of a record until its batch is written: an order event's
 * `order_events` row already encoded (chdb), or the event itself (on a ClickHouse server, for a
 * customer, and for a row RowBinary does not take exactly).
 */
type Projected = InputEvent | { kind: 'row'; tenant: number; row: Uint8Array }

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
export function projectionPipeline(store: Store, opts: { now?: () => number; name?: string } = {}): PipelineDefinition<Projected> {
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
  const writes = new WriteTurns<{ value: Projected }>((items) => writeProjections(store, items, orderRows ?? null))
  return {
    name: opts.name ?? PROJECTION_GROUP,
    topics: [TOPICS.orders.name, TOPICS.customers.name],
    process: (record, codec) => {
      if (orderRows === undefined) return encoding().then(() => decodeInputEvent(record, codec, now(), currencies)).then(encoded)
      const r = decodeInputEvent(record, codec, now(), currencies)
      return r instanceof Promise ? r.then(encoded) : encoded(r)
    },
    sink: (items) => writes.submit(items),
    // A batch's rows are written in parts while the rest are decoded; the parts that wait for a
    // write go together, so inserts stay large once the writes are the slower side.
    sinkEvery: 10_000,
  }
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

/** The rows of the batches' events, one insert per table for all of them; then their tenants' data marked changed. */
async function writeProjections(store: Store, items: { value: Projected }[], orderRows: EncodingInsert | null): Promise<void> {
  const rows: Uint8Array[] = []
  const orders: OrderEvent[] = []
  const customers: CustomerUpserted[] = []
  const tenants = new Set<number>()
  for (const { value } of items) {
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
