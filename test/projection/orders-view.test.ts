/**
 * The orders projection is written by ClickHouse from order_events (migration 014): over every kind
 * of order event (placed, delivered, cancelled, refunded, a credit note, with items or none),
 * `orders FINAL` holds for each order exactly `orderStateRow` of its latest event, the rule the
 * projection applied in code before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../common/store/clickhouse.ts'
import type { OrderEvent } from '../../common/events.ts'
import { generateEvents } from '../../pipelines/ingest/synthetic/generate.ts'
import { orderEventRow, orderStateRow } from '../../pipelines/projection/rows.ts'
import { migratedStore } from '../helpers.ts'

let store: Store

beforeAll(async () => {
  store = await migratedStore()
})

afterAll(async () => {
  await store?.close()
})

const COLUMNS = `tenant_id, customer_id, order_id, last_event_id, status, toString(total) AS total, toString(refunded_amount) AS refunded_amount, currency, items_count,
                 toUnixTimestamp64Milli(placed_at) AS placed_at, toUnixTimestamp64Milli(updated_at) AS updated_at, is_cancelled, source, toString(version) AS version`

/** orderStateRow as the table returns it (decimals as ClickHouse prints them, times in ms). */
function expected(e: OrderEvent) {
  const r = orderStateRow(e)
  const dec = (x: string | null) => (x === null ? null : String(Number(x)))
  return { ...r, total: dec(r.total), refunded_amount: dec(r.refunded_amount), placed_at: e.placed_at, updated_at: e.occurred_at, version: String(r.version) }
}

describe('orders written by the view from order_events', () => {
  it('every event gives the row orderStateRow gives, and FINAL keeps the latest state', async () => {
    const T = 4242
    const orders = [...generateEvents({ tenantId: T, customers: 300, seed: 'orders-view', start: new Date(Date.UTC(2024, 0, 1)), end: new Date(Date.UTC(2025, 0, 1)) })]
      .filter((e) => e.topic === 'orders')
      .map((e) => e.value as OrderEvent)
    const credit: OrderEvent = { ...orders[0]!, event_id: 'credit-1', order_id: 'CN-1', event_type: 'credit_note', status: 'refunded', total: '-15.50', refunded_amount: null, items: [] }
    const events = [...orders, credit]
    const kinds = new Set(events.map((e) => `${e.event_type}:${e.items.length > 0}`))
    expect([...kinds].sort()).toEqual(['cancelled:false', 'credit_note:false', 'placed:true', 'refunded:false', 'status_changed:true'])
    await store.insert({ table: 'order_events', values: events.map(orderEventRow), format: 'JSONEachRow' })
    // The latest state of each order by orderStateRow's version (ties: the larger event id).
    const latest = new Map<string, OrderEvent>()
    for (const e of events) {
      const cur = latest.get(e.order_id)
      const [v, w] = [orderStateRow(e).version, cur ? orderStateRow(cur).version : -1]
      if (!cur || v > w || (v === w && e.event_id > cur.event_id)) latest.set(e.order_id, e)
    }
    expect(latest.size).toBeGreaterThan(100)
    const rs = await store.query({ query: `SELECT ${COLUMNS} FROM orders FINAL WHERE tenant_id = {t:UInt64} ORDER BY order_id`, query_params: { t: T }, format: 'JSONEachRow' })
    expect(await rs.json()).toEqual([...latest.values()].sort((a, b) => (a.order_id < b.order_id ? -1 : 1)).map(expected))
  })
})
