import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../common/store/clickhouse.ts'
import { loadTenantCustomers, stageProfiles } from '../../pipelines/features/recompute.ts'
import { migratedStore } from '../helpers.ts'

/** Rows written straight into the raw projections: the shapes the recompute's load has to merge. */
describe('loadTenantCustomers', () => {
  let store: Store
  const T = 41
  beforeAll(async () => {
    store = await migratedStore()
    // Customers 3 and 7 have a profile row; 5 and 7 have orders; 9 is another tenant's.
    await store.command({
      query: `INSERT INTO customers (tenant_id, customer_id, last_event_id, email, source, updated_at, version) VALUES
              (${T}, 7, 'c7', 'seven@example.com', 't', '2025-01-01 00:00:00', 20), (${T}, 3, 'c3', 'three@example.com', 't', '2025-01-01 00:00:00', 10),
              (${T + 1}, 9, 'c9', 'nine@example.com', 't', '2025-01-01 00:00:00', 5)`,
    })
    await store.command({
      query: `INSERT INTO orders (tenant_id, customer_id, order_id, last_event_id, status, total, refunded_amount, currency, items_count, placed_at, updated_at, is_cancelled, source, version) VALUES
              (${T}, 5, 'a', 'ea', 'paid', 10.50, NULL, 'ARS', 1, '2025-01-01 10:00:00', '2025-01-01 10:00:00', 0, 't', 1),
              (${T}, 5, 'b', 'eb', 'paid', 4.50, NULL, 'ARS', 1, '2025-01-01 18:00:00', '2025-01-01 18:00:00', 0, 't', 1),
              (${T}, 5, 'c', 'ec', 'paid', 20.00, NULL, 'ARS', 1, '2025-01-05 09:00:00', '2025-01-05 09:00:00', 0, 't', 1),
              (${T}, 7, 'd', 'ed', 'paid', 7.00, NULL, 'ARS', 1, '2025-02-01 00:00:00', '2025-02-01 00:00:00', 0, 't', 1),
              (${T + 1}, 9, 'e', 'ee', 'paid', 1.00, NULL, 'ARS', 1, '2025-02-01 00:00:00', '2025-02-01 00:00:00', 0, 't', 1)`,
    })
  })
  afterAll(async () => {
    await store?.close()
  })

  it('gives every profile once, in customer order: with a profile row, orders, or both', async () => {
    const got = await loadTenantCustomers(store, T)
    expect(got.map((c) => [c.customerId, c.email, c.emailVersion, c.agg.orderCount])).toEqual([
      [3, 'three@example.com', 10, 0],
      [5, '', 0, 3],
      [7, 'seven@example.com', 20, 1],
    ])
    const five = got[1]!
    const jan1 = Date.UTC(2025, 0, 1)
    expect(five.agg).toEqual({
      orderCount: 3,
      monetaryCents: 3500,
      firstOrderAt: jan1 + 10 * 3_600_000,
      lastOrderAt: Date.UTC(2025, 0, 5, 9),
      purchaseDays: 2,
      firstDay: jan1 / 86_400_000,
      lastDay: jan1 / 86_400_000 + 4,
      repeatPurchases: 1,
      repeatSpanDays: 4,
      repeatAvgCents: 2000, // the repeat day's spend; the first day's two orders are the first purchase
    })
    expect(five.history).toEqual({ times: [jan1 + 10 * 3_600_000, jan1 + 18 * 3_600_000, Date.UTC(2025, 0, 5, 9)], cents: [1050, 450, 2000] })
    expect(got[0]!.history).toEqual({ times: [], cents: [] })
  })

  it('with staged profiles, the same profiles and aggregates, the emails left in the staged table for the writer', async () => {
    const profiles = await stageProfiles(store, T)
    try {
      const got = await loadTenantCustomers(store, T, Infinity, { profiles })
      const all = await loadTenantCustomers(store, T)
      expect(got.map((c) => [c.customerId, c.email, c.emailVersion])).toEqual([
        [3, '', 0],
        [5, '', 0],
        [7, '', 0],
      ])
      expect(got.map((c) => c.agg)).toEqual(all.map((c) => c.agg))
      const rs = await store.query({ query: `SELECT customer_id, email, email_version FROM ${profiles.table} ORDER BY customer_id`, format: 'JSONCompactEachRow' })
      expect(await rs.json()).toEqual([
        [3, 'three@example.com', 10],
        [7, 'seven@example.com', 20],
      ])
    } finally {
      await profiles.drop()
    }
  })

  it('keeps a history in (time, cents) order: ties on time by cents, times before 1970, cents past 2^32', async () => {
    const U = T + 2
    const at = (iso: string) => `'${iso}'`
    // Inserted out of order; order ids sort otherwise than the times.
    const rows: [string, string, string][] = [
      ['a', '2025-03-01 12:00:00.000', '30.00'],
      ['b', '1960-06-01 08:00:00.000', '5.00'],
      ['c', '2025-03-01 12:00:00.000', '12.00'],
      ['d', '1969-12-31 23:59:59.999', '45000000.00'],
      ['e', '1969-12-31 23:59:59.999', '0.01'],
      ['f', '2025-03-01 12:00:00.000', '45000000.00'],
      ['g', '1970-01-01 00:00:00.000', '1.00'],
    ]
    await store.command({
      query: `INSERT INTO orders (tenant_id, customer_id, order_id, last_event_id, status, total, refunded_amount, currency, items_count, placed_at, updated_at, is_cancelled, source, version) VALUES
              ${rows.map(([id, time, total]) => `(${U}, 11, '${id}', 'e${id}', 'paid', ${total}, NULL, 'ARS', 1, ${at(time)}, ${at(time)}, 0, 't', 1)`).join(',\n')}`,
    })
    const [eleven] = await loadTenantCustomers(store, U)
    const march = Date.UTC(2025, 2, 1, 12)
    expect(eleven!.history).toEqual({
      times: [Date.UTC(1960, 5, 1, 8), -1, -1, 0, march, march, march],
      cents: [500, 1, 4_500_000_000, 100, 1200, 3000, 4_500_000_000],
    })
  })

  it('answers an empty list for a tenant with nothing stored', async () => {
    expect(await loadTenantCustomers(store, T + 100)).toEqual([])
  })
})
