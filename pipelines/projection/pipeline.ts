import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { insertJsonRows, insertValueRows, type Store } from '../../common/store/clickhouse.ts'
import type { PipelineDefinition } from '../../common/runtime/pipeline.ts'
import { WriteTurns } from '../../common/runtime/write-turns.ts'
import { decodeInputEvent, type InputEvent } from '../ingest/index.ts'
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
 * orders and customers topics → ClickHouse raw projections (order_events, orders, customers).
 * Semantically invalid events (a negative total, an email that is not one, an order in another
 * currency than its tenant's) are dead-lettered.
 */
export function projectionPipeline(store: Store, opts: { now?: () => number; name?: string } = {}): PipelineDefinition<InputEvent> {
  const now = opts.now ?? Date.now
  const currencies = new TenantCurrencies(new TenantSettingsStore(store))
  // Batches of partitions consumed at once are written together when they meet (write-turns.ts).
  const writes = new WriteTurns<{ value: InputEvent }>((items) => writeProjections(store, items))
  return {
    name: opts.name ?? PROJECTION_GROUP,
    topics: [TOPICS.orders.name, TOPICS.customers.name],
    process: (record, codec) => decodeInputEvent(record, codec, now(), currencies),
    sink: (items) => writes.submit(items),
  }
}

/** The rows of the batches' events, one insert per table for all of them; then their tenants' data marked changed. */
async function writeProjections(store: Store, items: { value: InputEvent }[]): Promise<void> {
  const orders: OrderEvent[] = []
  const customers: CustomerUpserted[] = []
  const tenants = new Set<number>()
  for (const { value } of items) {
    if (value.kind === 'order') orders.push(value.event)
    else customers.push(value.event)
    tenants.add(value.event.tenant_id)
  }
  const writes: Promise<unknown>[] = []
  // The orders table is written by ClickHouse from these rows (migration 014's view: orderStateRow's rule).
  if (orders.length) writes.push(insertValueRows(store, 'order_events', ORDER_EVENT_COLUMNS, orders.map(orderEventValues), NO_MERGE_ON_INSERT))
  if (customers.length) writes.push(insertJsonRows(store, 'customers', customers.map(customerRow)))
  await Promise.all(writes)
  // After the rows: a change visible in tenant_data_changes is visible in the projections.
  await markTenantsChanged(store, tenants)
}
