/**
 * Schema migrations on an existing database: 008 adds the order history of the feature rows and
 * fills it for rows written before it, from the raw `orders` projection; 012 turns the feature
 * rows into a table with delete markers (profiles), keeping every row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { MIGRATIONS_DIR, migrate, openStore, type Store } from '../../common/store/clickhouse.ts'
import { silentLogger, tmpDir } from '../helpers.ts'

let store: Store
/** The feature rows before migration 008, for the check that it changed nothing else. */
let before: Record<string, unknown>[] = []

const T = 41
/** Another tenant with the same customer ids: the backfill must join on the tenant too. */
const T2 = 42
const at = (d: string, h = 10) => `${d} ${String(h).padStart(2, '0')}:00:00.000`
const ms = (d: string, h = 10) => Date.parse(`${d}T${String(h).padStart(2, '0')}:00:00Z`)

function order(customer: number, id: string, day: string, total: string, version: number, event: string, cancelled = 0, hour = 10, tenant = T) {
  return {
    tenant_id: tenant, customer_id: customer, order_id: id, last_event_id: event, status: cancelled ? 'cancelled' : 'paid', total, refunded_amount: null,
    currency: 'ARS', items_count: 1, placed_at: at(day, hour), updated_at: at(day, hour), is_cancelled: cancelled, source: 'test', version,
  }
}

async function featureRow(customer: number, tenant = T) {
  const rs = await store.query({
    query: `SELECT customer_id, frequency, toString(monetary) AS monetary, segment, order_times, order_cents, toString(version) AS version
            FROM customer_features FINAL WHERE tenant_id = {t:UInt64} AND customer_id = {c:UInt64}`,
    query_params: { t: tenant, c: customer },
    format: 'JSONEachRow',
  })
  return (await rs.json<Record<string, unknown>>())[0]
}

beforeAll(async () => {
  store = await openStore({ database: 'cdp', chdbPath: tmpDir() })
  // The database as the previous release left it: migrations up to 007.
  const previousRelease = tmpDir('cdp-migrations-')
  for (const f of fs.readdirSync(MIGRATIONS_DIR)) if (/^00[1-7]_.+\.sql$/.test(f)) fs.copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(previousRelease, f))
  expect(await migrate(store, silentLogger, previousRelease)).toEqual([1, 2, 3, 4, 5, 6, 7])
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
      order(1, 'a', '2024-12-24', '12.34', 1, 'x1', 0, 10, T2),
    ],
  })
  // Feature rows of the old layout (no order history columns yet).
  const row = (customer: number, frequency: number, monetary: string, version: number, tenant = T) => ({
    tenant_id: tenant, customer_id: customer, email: `c${customer}@t.test`, frequency, monetary, segment: frequency ? 'Champions' : null, processed_at: at('2025-06-01'), version,
  })
  await store.insert({ table: 'customer_features', format: 'JSONEachRow', values: [row(1, 3, '95.50', 1000), row(2, 0, '0.00', 1000), row(3, 1, '70.00', 1000), row(1, 1, '12.34', 1000, T2)] })
  before = await everyColumn(false)
})

/** Every column of the rows as they were before the migration (so without the history), version aside. */
async function everyColumn(migrated: boolean): Promise<Record<string, unknown>[]> {
  const except = migrated ? 'version, order_times, order_cents, is_deleted' : 'version'
  const rs = await store.query({ query: `SELECT * EXCEPT (${except}) FROM customer_features FINAL ORDER BY tenant_id, customer_id`, format: 'JSONEachRow' })
  return rs.json<Record<string, unknown>>()
}

afterAll(async () => {
  await store?.close()
})

describe('migration 008 (order history on the feature rows)', () => {
  it('fills the history of rows written before it from the orders, as a new version; other columns unchanged', async () => {
    expect((await migrate(store, silentLogger))[0]).toBe(8)
    expect(await featureRow(1)).toEqual({
      customer_id: 1, frequency: 3, monetary: '95.5', segment: 'Champions',
      order_times: [ms('2025-01-15'), ms('2025-01-15'), ms('2025-03-01')],
      order_cents: [1000, 2550, 6000],
      version: '1001',
    })
    // A customer without a counting order keeps empty arrays and its row is not rewritten.
    expect(await featureRow(2)).toMatchObject({ frequency: 0, order_times: [], order_cents: [], version: '1000' })
    expect(await featureRow(3)).toMatchObject({ order_times: [ms('2025-05-05')], order_cents: [7000], version: '1001' })
    // The same customer id of another tenant gets its own orders.
    expect(await featureRow(1, T2)).toMatchObject({ order_times: [ms('2024-12-24')], order_cents: [1234], version: '1001' })
    // Nothing else of the rows changed.
    expect(before).toHaveLength(4)
    expect(await everyColumn(true)).toEqual(before)
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

describe('migration 012 (delete markers on the feature rows)', () => {
  it('keeps every row; a newer row with is_deleted = 1 hides a customer and a newer live row brings it back; running it again changes nothing', async () => {
    const rows = await everyColumn(true)
    const [engine] = await (await store.query({ query: "SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'customer_features'", format: 'JSONCompactEachRow' })).json<[string]>()
    expect(engine![0]).toMatch(/^ReplacingMergeTree\(version, is_deleted\)/)
    // The statements again (as after an interruption before the migration was recorded).
    const sql = fs.readFileSync(path.join(MIGRATIONS_DIR, '012_profile_features.sql'), 'utf8')
    const { splitStatements } = await import('../../common/store/clickhouse.ts')
    for (const q of splitStatements(sql)) await store.command({ query: q })
    expect(await everyColumn(true)).toEqual(rows)
    const mark = (version: number, is_deleted: number) =>
      store.insert({ table: 'customer_features', format: 'JSONEachRow', values: [{ tenant_id: T, customer_id: 3, email: 'c3@t.test', frequency: 2, monetary: '100.00', processed_at: at('2025-06-03'), version, is_deleted }] })
    await mark(6000, 1)
    expect(await featureRow(3)).toBeUndefined()
    await mark(7000, 0)
    expect(await featureRow(3)).toMatchObject({ frequency: 2, version: '7000' })
  })
})
