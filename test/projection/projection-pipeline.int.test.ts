import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { openStore, type Store } from '../../common/store/clickhouse.ts'
import { runPipeline } from '../../common/runtime/pipeline.ts'
import { projectionPipeline } from '../../pipelines/projection/pipeline.ts'
import { replayProjections } from '../../pipelines/projection/replay.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { TOPICS } from '../../common/topics.ts'
import { customerKey, type CustomerUpserted, type DeadLetter, type OrderEvent } from '../../common/events.ts'
import { silentLogger, testConfig, tmpDir, uniqueName, waitFor } from '../helpers.ts'

const T0 = Date.UTC(2025, 0, 1)

function order(tenant: number, customer: number, n: number, over: Partial<OrderEvent> = {}): OrderEvent {
  return {
    event_id: randomUUID(), tenant_id: tenant, occurred_at: T0 + n * 60_000, source: 'test', event_type: 'placed',
    order_id: `o-${customer}-${n}`, customer_id: customer, status: 'paid', total: '100.50', currency: 'ARS',
    refunded_amount: null, items: [{ sku: 's', name: null, quantity: 2, unit_price: '50.25' }], placed_at: T0 + n * 60_000, ...over,
  }
}

function customer(tenant: number, id: number): CustomerUpserted {
  return {
    event_id: randomUUID(), tenant_id: tenant, occurred_at: T0, source: 'test', customer_id: id, email: `c${id}@example.com`,
    first_name: 'Ana', last_name: 'Pérez', phone: null, national_id: '30123456', street: null, city: 'Rosario', province: 'Santa Fe',
    postal_code: 'S2000', country: 'AR', registration_source: 'web', created_at: T0, source_ids: [{ source: 'test', id: `x${id}` }],
  }
}

async function count(store: Store, sql: string, tenant: number): Promise<number> {
  const rs = await store.query({ query: sql, query_params: { t: tenant }, format: 'JSONEachRow' })
  const [row] = await rs.json<{ n: number | string }>()
  return Number(row?.n ?? 0)
}

const distinctOrders = (store: Store, t: number) => count(store, 'SELECT uniqExact(order_id) AS n FROM orders FINAL WHERE tenant_id = {t:UInt64}', t)

/** Per-table fingerprints of one tenant's rows, to compare projections before and after replay. */
async function fingerprint(store: Store, tenant: number): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const table of ['order_events', 'orders', 'customers']) {
    const rs = await store.query({
      query: `SELECT count() AS n, sum(cityHash64(*)) AS h FROM (SELECT * FROM ${table} FINAL WHERE tenant_id = {t:UInt64})`,
      query_params: { t: tenant },
      format: 'JSONEachRow',
    })
    const [r] = await rs.json<{ n: number; h: string }>()
    out[table] = `${r!.n}:${r!.h}`
  }
  return out
}

let store: Store
beforeAll(async () => {
  // One chdb engine per process: both runtimes of this file share it.
  store = await openStore({ database: 'cdp', chdbPath: tmpDir() })
})
afterAll(async () => {
  await store.close()
})

describe.each(['distributed', 'embedded'] as const)('projection pipeline on the %s runtime', (runtime) => {
  let rt: Runtime
  beforeAll(async () => {
    rt = await openRuntime(testConfig(runtime), silentLogger, { store })
  })
  afterAll(async () => {
    await rt.close()
  })

  it('projects orders and customers, dead-letters poison with its reason, and goes on', async () => {
    const tenant = 1000 + Math.floor(Math.random() * 1e6)
    const group = uniqueName('proj')
    await publishEvents(rt.log, rt.codec, 'customers', [customer(tenant, 1), customer(tenant, 2)])
    await publishEvents(rt.log, rt.codec, 'orders', [order(tenant, 1, 1), order(tenant, 1, 2)])
    // Poison: bytes that are not Avro, then a negative total (valid Avro, invalid meaning).
    await rt.log.send(TOPICS.orders.name, [{ key: customerKey(tenant, 1), value: Buffer.from('{"not":"avro"}') }])
    await publishEvents(rt.log, rt.codec, 'orders', [order(tenant, 1, 3, { total: '-5.00', items: [] })])
    await publishEvents(rt.log, rt.codec, 'orders', [order(tenant, 1, 4), order(tenant, 2, 5)])

    const p = await runPipeline(projectionPipeline(store, { name: group }), { log: rt.log, codec: rt.codec, logger: silentLogger })
    try {
      await waitFor(async () => (await distinctOrders(store, tenant)) === 4, { what: '4 orders', timeoutMs: 60_000 })
      // Customers and orders sit on different topics and partitions: wait for both.
      await waitFor(async () => (await count(store, 'SELECT count() AS n FROM customers FINAL WHERE tenant_id = {t:UInt64}', tenant)) === 2, { what: '2 customers', timeoutMs: 60_000 })
      const rs = await store.query({ query: 'SELECT order_id, toString(total) AS total, items_count, status FROM orders FINAL WHERE tenant_id = {t:UInt64} ORDER BY order_id LIMIT 1', query_params: { t: tenant }, format: 'JSONEachRow' })
      expect(await rs.json()).toEqual([{ order_id: 'o-1-1', total: '100.5', items_count: 1, status: 'paid' }])
    } finally {
      await p.stop()
    }

    // Two dead letters for this tenant, with reason, step and time headers and the original bytes.
    const dead: { headers: Record<string, string>; value: DeadLetter }[] = []
    const h = await rt.log.consume({
      groupId: uniqueName('dlq-reader'),
      topics: [TOPICS.deadLetter.name],
      fromBeginning: true,
      onBatch: async (b) => {
        for (const r of b.records) {
          const v = await rt.codec.decode<DeadLetter>(TOPICS.deadLetter.name, r.value)
          if (v.tenant_id === tenant && v.source === group) dead.push({ headers: r.headers, value: v })
        }
      },
    })
    await waitFor(async () => dead.length >= 2, { what: 'two dead letters' })
    await h.stop()
    const codes = dead.map((d) => d.value.error_code).sort()
    expect(codes).toEqual(['negative_total', 'undecodable'])
    for (const d of dead) {
      expect(d.headers['x-dlq-reason']).toBe(d.value.reason)
      expect(d.headers['x-dlq-step']).toBe(d.value.step)
      expect(Number.isNaN(Date.parse(d.headers['x-dlq-time']!))).toBe(false)
      expect(d.value.original_topic).toBe(TOPICS.orders.name)
    }
    const undecodable = dead.find((d) => d.value.error_code === 'undecodable')!
    expect(undecodable.value.step).toBe('decode')
    expect(Buffer.from(undecodable.value.original_value!).toString()).toBe('{"not":"avro"}')
    expect(dead.find((d) => d.value.error_code === 'negative_total')!.value.step).toBe('validate')
  })

  it('never counts a redelivered event twice, and replay rebuilds identical projections', async () => {
    const tenant = 2_000_000 + Math.floor(Math.random() * 1e6)
    const orders = Array.from({ length: 300 }, (_, i) => order(tenant, (i % 30) + 1, i))
    const cancels = orders.slice(0, 10).map((o) => ({ ...o, event_id: randomUUID(), event_type: 'cancelled' as const, status: 'cancelled', total: '0.00', items: [], occurred_at: o.occurred_at + 1000 }))
    await publishEvents(rt.log, rt.codec, 'customers', Array.from({ length: 30 }, (_, i) => customer(tenant, i + 1)))
    await publishEvents(rt.log, rt.codec, 'orders', orders)
    await publishEvents(rt.log, rt.codec, 'orders', cancels)
    // The same events again, as a producer retry or a replayed import would send them.
    await publishEvents(rt.log, rt.codec, 'orders', orders.slice(0, 100))

    const group = uniqueName('proj')
    const p = await runPipeline(projectionPipeline(store, { name: group }), { log: rt.log, codec: rt.codec, logger: silentLogger })
    await waitFor(async () => (await count(store, 'SELECT count() AS n FROM order_events FINAL WHERE tenant_id = {t:UInt64}', tenant)) === 310, { what: '310 order events', timeoutMs: 60_000 })
    // The customers topic is consumed beside the orders one: wait for its 30 profiles too, or the
    // fingerprint below would catch the projection half-way (replay then finds all 30).
    await waitFor(async () => (await count(store, 'SELECT count() AS n FROM customers FINAL WHERE tenant_id = {t:UInt64}', tenant)) === 30, { what: '30 customers', timeoutMs: 60_000 })
    await p.stop()
    expect(await distinctOrders(store, tenant)).toBe(300)
    expect(await count(store, 'SELECT countIf(is_cancelled = 1) AS n FROM orders FINAL WHERE tenant_id = {t:UInt64}', tenant)).toBe(10)
    // Net revenue: 290 live orders of 100.50; decimals stay exact.
    const rs = await store.query({ query: 'SELECT toString(sumIf(total, is_cancelled = 0)) AS s FROM orders FINAL WHERE tenant_id = {t:UInt64}', query_params: { t: tenant }, format: 'JSONEachRow' })
    expect(await rs.json()).toEqual([{ s: '29145' }])

    const before = await fingerprint(store, tenant)
    const result = await replayProjections(rt, { group })
    expect(result.records).toBeGreaterThanOrEqual(440)
    expect(await fingerprint(store, tenant)).toEqual(before)
  })
})
