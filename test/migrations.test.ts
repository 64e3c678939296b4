/**
 * Schema migrations on an existing database: 008 adds the order history of the feature rows and
 * fills it for rows written before it, from the raw `orders` projection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { MIGRATIONS_DIR, migrate, openStore, type Store } from '../common/store/clickhouse.ts'
import { silentLogger, tmpDir } from './helpers.ts'

let store: Store

const T = 41
const at = (d: string, h = 10) => `${d} ${String(h).padStart(2, '0')}:00:00.000`
const ms = (d: string, h = 10) => Date.parse(`${d}T${String(h).padStart(2, '0')}:00:00Z`)

function order(customer: number, id: string, day: string, total: string, version: number, event: string, cancelled = 0, hour = 10) {
  return {
    tenant_id: T, customer_id: customer, order_id: id, last_event_id: event, status: cancelled ? 'cancelled' : 'paid', total, refunded_amount: null,
    currency: 'ARS', items_count: 1, placed_at: at(day, hour), updated_at: at(day, hour), is_cancelled: cancelled, source: 'test', version,
  }
}

async function featureRow(customer: number) {
  const rs = await store.query({
    query: `SELECT customer_id, frequency, toString(monetary) AS monetary, segment, order_times, order_cents, toString(version) AS version
            FROM customer_features FINAL WHERE tenant_id = {t:UInt64} AND customer_id = {c:UInt64}`,
    query_params: { t: T, c: customer },
    format: 'JSONEachRow',
  })
  return (await rs.json<Record<string, unknown>>())[0]
}

beforeAll(async () => {
  store = await openStore({ database: 'cdp', chdbPath: tmpDir() })
  // The database as the previous release left it: migrations up to 007.
  const before = tmpDir('cdp-migrations-')
  for (const f of fs.readdirSync(MIGRATIONS_DIR)) if (/^00[1-7]_.+\.sql$/.test(f)) fs.copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(before, f))
  expect(await migrate(store, silentLogger, before)).toEqual([1, 2, 3, 4, 5, 6, 7])
  await store.insert({
    table: 'orders',
    format: 'JSONEachRow',
    values: [
      order(1, 'a', '2025-03-01', '100.00', 1, 'a1'),
      order(1, 'a', '2025-03-01', '60.00', 2, 'a2'), // a later partial refund: 60 counts
      order(1, 'b', '2025-01-15', '25.50', 1, 'b1'),
      order(1, 'c', '2025-02-01', '40.00', 1, 'c1'),
      order(1, 'c', '2025-02-01', '0.00', 2, 'c2', 1), // cancelled: never counts
      order(1, 'd', '2025-01-15', '10.00', 1, 'd1'), // same time as b: the smaller amount first
      order(2, 'e', '2025-04-01', '0.00', 1, 'e1'), // fully refunded
      order(3, 'f', '2025-05-05', '70.00', 1, 'f1'),
    ],
  })
  // Feature rows of the old layout (no order history columns yet).
  const row = (customer: number, frequency: number, monetary: string, version: number) => ({
    tenant_id: T, customer_id: customer, email: `c${customer}@t.test`, frequency, monetary, segment: frequency ? 'Champions' : null, processed_at: at('2025-06-01'), version,
  })
  await store.insert({ table: 'customer_features', format: 'JSONEachRow', values: [row(1, 3, '95.50', 1000), row(2, 0, '0.00', 1000), row(3, 1, '70.00', 1000)] })
})

afterAll(async () => {
  await store?.close()
})

describe('migration 008 (order history on the feature rows)', () => {
  it('fills the history of rows written before it from the orders, as a new version; other columns unchanged', async () => {
    expect(await migrate(store, silentLogger)).toEqual([8])
    expect(await featureRow(1)).toEqual({
      customer_id: 1, frequency: 3, monetary: '95.5', segment: 'Champions',
      order_times: [ms('2025-01-15'), ms('2025-01-15'), ms('2025-03-01')],
      order_cents: [1000, 2550, 6000],
      version: '1001',
    })
    // A customer without a counting order keeps empty arrays and its row is not rewritten.
    expect(await featureRow(2)).toMatchObject({ frequency: 0, order_times: [], order_cents: [], version: '1000' })
    expect(await featureRow(3)).toMatchObject({ order_times: [ms('2025-05-05')], order_cents: [7000], version: '1001' })
  })

  it('is applied once; a row the pipeline writes afterwards carries its own history', async () => {
    expect(await migrate(store, silentLogger)).toEqual([])
    await store.insert({
      table: 'customer_features',
      format: 'JSONEachRow',
      values: [{ tenant_id: T, customer_id: 3, email: 'c3@t.test', frequency: 2, monetary: '100.00', processed_at: at('2025-06-02'), order_times: [ms('2025-05-05'), ms('2025-06-01')], order_cents: [7000, 3000], version: 5000 }],
    })
    expect(await featureRow(3)).toMatchObject({ frequency: 2, order_times: [ms('2025-05-05'), ms('2025-06-01')], order_cents: [7000, 3000], version: '5000' })
  })
})
