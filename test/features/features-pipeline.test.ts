/**
 * Batch equals stream: the feature consumer, fed random histories with duplicates, cancellations,
 * refunds, out-of-order arrival and a consumer restart in the middle, ends with exactly the
 * features a full recompute from the raw events gives, customer by customer; the SQL recompute of
 * the processing API agrees too; and the last segment change published for each customer is its
 * stored segment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { runPipeline } from '../../common/runtime/pipeline.ts'
import { TOPICS } from '../../common/topics.ts'
import type { CustomerUpserted, OrderEvent, SegmentChanged } from '../../common/events.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { projectionPipeline } from '../../pipelines/projection/pipeline.ts'
import { runFeatures } from '../../pipelines/features/run.ts'
import { aggregate, aggregateEvents, factOf, mergeFact, orderHistory, type CustomerAggregates, type OrderFact } from '../../pipelines/features/order-facts.ts'
import { computeFeatures } from '../../pipelines/features/features.ts'
import { loadModels } from '../../pipelines/features/feature-store.ts'
import { createRecomputeEngine, loadTenantCustomers } from '../../pipelines/features/recompute.ts'
import { createApp } from '../../services/api/app.ts'
import { SEGMENTS } from '../../pipelines/features/segments.ts'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { caughtUp, readTopic, silentLogger, testConfig, uniqueName } from '../helpers.ts'
import { createLogger } from '../../common/logger.ts'
import { history, NOW, rng, shuffle } from './histories.ts'
import { byCustomer, expectedFeatureRows, featureRows } from './batch-expectation.ts'

describe('order facts fold (pure property)', () => {
  it('any arrival order, with duplicates and a restart from persisted facts, equals the batch aggregate', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const { orders, delivery } = history(1, seed, 12)
      const batch = aggregateEvents(orders)
      const rand = rng(seed * 7)
      // Stream: fold in delivery order; at a random point "restart" from a copy of the facts.
      const state = new Map<string, Map<string, OrderFact>>()
      const cut = Math.floor(rand() * delivery.orders.length)
      delivery.orders.forEach((e, i) => {
        if (i === cut) for (const [k, m] of state) state.set(k, new Map([...m].map(([id, f]) => [id, { ...f }])))
        const key = `${e.tenant_id}:${e.customer_id}`
        if (!state.has(key)) state.set(key, new Map())
        mergeFact(state.get(key)!, e.order_id, factOf(e))
      })
      expect(state.size, `seed ${seed}`).toBe(batch.size)
      for (const [k, orders] of state) expect(aggregate(orders.values()), `seed ${seed} customer ${k}`).toEqual(batch.get(k))
    }
  })

  it('a cancelled order and a full refund stop counting; a partial refund lowers the spend', () => {
    const base = { event_id: 'e1', tenant_id: 1, source: 't', customer_id: 7, currency: 'ARS', refunded_amount: null, items: [] }
    const day = (d: number) => Date.UTC(2025, 0, d, 10)
    const ev = (id: string, type: OrderEvent['event_type'], total: string, at: number, placed: number, eid: string): OrderEvent =>
      ({ ...base, event_id: eid, order_id: id, event_type: type, status: type, total, occurred_at: at, placed_at: placed }) as OrderEvent
    const events = [
      ev('a', 'placed', '100.00', day(1), day(1), 'a1'),
      ev('b', 'placed', '50.00', day(1) + 1000, day(1) + 1000, 'b1'),
      ev('c', 'placed', '80.00', day(5), day(5), 'c1'),
      ev('d', 'placed', '30.00', day(9), day(9), 'd1'),
      ev('c', 'refunded', '60.00', day(6), day(5), 'c2'),
      ev('d', 'cancelled', '0.00', day(9) + 5, day(9), 'd2'),
      ev('e', 'placed', '40.00', day(12), day(12), 'e1'),
      ev('e', 'refunded', '0.00', day(13), day(12), 'e2'),
    ]
    const agg = aggregateEvents(shuffle(events, rng(3))).get('1:7')!
    // Counting: a (100), b (50) on day 1; c (60 after the refund) on day 5.
    expect(agg).toEqual({
      orderCount: 3,
      monetaryCents: 21000,
      firstOrderAt: day(1),
      lastOrderAt: day(5),
      purchaseDays: 2,
      firstDay: Math.floor(day(1) / 86_400_000),
      lastDay: Math.floor(day(5) / 86_400_000),
      repeatPurchases: 1,
      repeatSpanDays: 4,
      repeatAvgCents: 6000,
    })
    // The order history of the feature row: the counting orders only, ascending, ties by amount.
    const facts = new Map<string, OrderFact>()
    for (const e of shuffle(events, rng(5))) mergeFact(facts, e.order_id, factOf(e))
    expect(orderHistory(facts.values())).toEqual({ times: [day(1), day(1) + 1000, day(5)], cents: [10000, 5000, 6000] })
    const tie = (cents: number): OrderFact => ({ version: 1, eventId: `x${cents}`, placedAt: day(2), cents, cancelled: false })
    expect(orderHistory([tie(700), tie(300), { ...tie(900), cancelled: true }, tie(0)])).toEqual({ times: [day(2), day(2)], cents: [300, 700] })
  })
})

describe('feature consumer (embedded log, chdb)', () => {
  let rt: Runtime
  beforeAll(async () => {
    rt = await openRuntime(testConfig('embedded'), silentLogger)
  })
  afterAll(async () => {
    await rt?.close()
  })

  async function drain(group: string): Promise<void> {
    await caughtUp(rt.log, group, { timeoutMs: 60_000 })
  }

  /** A tenant's generated history, every event once, published in generation order. */
  async function publishHistory(tenant: number, seed: number, customers: number) {
    const h = history(tenant, seed, customers)
    await publishEvents(rt.log, rt.codec, 'customers', h.profiles)
    await publishEvents(rt.log, rt.codec, 'orders', h.orders)
    return h
  }

  const segmentChanges = async (tenant: number) =>
    (await readTopic<SegmentChanged>(rt.log, rt.codec, TOPICS.segmentChanges.name)).map((r) => r.value).filter((e) => e.tenant_id === tenant)

  for (const seed of [11, 12]) {
    it(`seed ${seed}: stream with duplicates, disorder and a restart equals the batch recompute`, { timeout: 120_000 }, async () => {
      const tenant = 500 + seed
      const { orders, profiles, delivery } = history(tenant, seed, 80)
      const group = uniqueName('features')
      let clock = NOW
      const now = () => clock
      const half = (xs: unknown[]) => Math.floor(xs.length / 2)

      await publishEvents(rt.log, rt.codec, 'customers', delivery.profiles.slice(0, half(delivery.profiles)))
      await publishEvents(rt.log, rt.codec, 'orders', delivery.orders.slice(0, half(delivery.orders)))
      const first = await runFeatures(rt, { now, tickMs: 3_600_000, name: group })
      await drain(group)
      await first.stop()

      // The restarted consumer starts with empty memory and restores its partitions from ClickHouse.
      await publishEvents(rt.log, rt.codec, 'orders', delivery.orders.slice(half(delivery.orders)))
      await publishEvents(rt.log, rt.codec, 'customers', delivery.profiles.slice(half(delivery.profiles)))
      const second = await runFeatures(rt, { now, tickMs: 3_600_000, name: group })
      await drain(group)
      clock += 3_600_000 // an hour later: the tick refreshes the thresholds and refits the CLV
      const tick = await second.tick()
      expect(tick.tenants).toBeGreaterThanOrEqual(1)
      await second.stop()

      const model = (await loadModels(rt.store, [tenant])).get(tenant)!
      expect(model.boundaries).not.toBeNull()
      expect(model.clv).not.toBeNull()
      expect(model.version).toBe(clock)

      // Batch: every event once, in generation order, through the same pure functions.
      const expected = expectedFeatureRows(orders, profiles, tenant, model, clock)
      const { aggs, emails } = expected
      const rows = await featureRows(rt.store, tenant)
      expect(rows.map((r) => r.customer_id)).toEqual([...expected.rows.keys()])
      let segmented = 0
      for (const row of rows) {
        expect(row, `customer ${row.customer_id}`).toEqual(expected.rows.get(row.customer_id as number))
        if (row.segment) segmented++
      }
      expect(segmented).toBeGreaterThan(30)

      // The last change published for a customer names its stored segment; none is published twice in a row.
      const changes = await segmentChanges(tenant)
      const lastChange = new Map<number, SegmentChanged>()
      for (const c of changes) {
        const prev = lastChange.get(c.customer_id)
        if (prev) expect(c.previous_segment).toBe(prev.segment)
        expect(c.segment).not.toBe(c.previous_segment)
        lastChange.set(c.customer_id, c)
      }
      for (const row of rows) expect(lastChange.get(row.customer_id as number)?.segment ?? null, `customer ${row.customer_id}`).toBe(row.segment)

      // The processing API's SQL recompute reads the raw projections: same aggregates, same rows.
      const projection = await runPipeline(projectionPipeline(rt.store, { name: `${group}-projection` }), { log: rt.log, codec: rt.codec, logger: silentLogger })
      await drain(`${group}-projection`)
      await projection.stop()
      const sqlCustomers = await loadTenantCustomers(rt.store, tenant)
      for (const c of sqlCustomers) {
        expect(c.agg, `customer ${c.customerId} (SQL aggregates)`).toEqual(aggs.get(c.customerId) ?? aggregate([]))
        expect(c.email).toBe(emails.get(c.customerId)?.email ?? '')
      }
      const engine = createRecomputeEngine({ store: rt.store, logger: silentLogger, partitions: rt.config.partitions, now })
      const result = await engine.run(tenant, { analyses: ['rfm', 'clv', 'churn'], batchSize: 25, force: true, signal: new AbortController().signal })
      expect(result.rfm!.total_processed).toBe([...aggs.values()].filter((a) => a.orderCount > 0).length)
      const refitted = (await loadModels(rt.store, [tenant])).get(tenant)!
      const recomputed = await featureRows(rt.store, tenant)
      expect(recomputed.map((r) => [r.customer_id, r.frequency, r.monetary, r.first, r.last, r.purchase_days, r.repeat_purchases, r.email, r.order_times, r.order_cents])).toEqual(
        rows.map((r) => [r.customer_id, r.frequency, r.monetary, r.first, r.last, r.purchase_days, r.repeat_purchases, r.email, r.order_times, r.order_cents]),
      )
      // Same thresholds (same population); the refit starts from the same data, so the same scores.
      expect(refitted.boundaries!.recency).toEqual(model.boundaries!.recency)
      expect(recomputed.map((r) => r.rfm_score)).toEqual(rows.map((r) => r.rfm_score))
    })
  }

  it.each([
    ['on the decode thread', true, 630],
    ['on the main thread', false, 631],
  ])('two batches of a partition in flight, decoded %s: records are observed in offset order (each partition restored once), and the rows equal the batch recompute', { timeout: 120_000 }, async (_, decodeThread, tenant) => {
    const { orders, profiles, delivery } = history(tenant, 31, 60)
    const group = uniqueName('features')
    const logs: { msg?: string; partition?: number }[] = []
    const logger = createLogger({ level: 'info', destination: { write: (line: string) => void logs.push(JSON.parse(line)) } as never })
    // Batches of five records, published a few at a time while the consumer runs: the next batch
    // of a partition is read and decoded while the one before is being written.
    const consumer = await runFeatures({ ...rt, logger, config: { ...rt.config, featuresBatchSize: 5 } }, { now: () => NOW, tickMs: 3_600_000, name: group, decodeThread })
    const events = [...delivery.profiles.map((e) => ['customers', e] as const), ...delivery.orders.map((e) => ['orders', e] as const)]
    for (const [i, [topic, e]] of shuffle(events, rng(31)).entries()) {
      await publishEvents(rt.log, rt.codec, topic, [e as never])
      if (i % 8 === 7) await new Promise((r) => setTimeout(r, 5))
    }
    await drain(group)
    await consumer.tick()
    await consumer.stop()
    // A record observed before one of lower offset looks like another consumer's commit and restores its partition again.
    const restores = logs.filter((l) => l.msg === 'partition state restored').map((l) => l.partition)
    expect(restores.sort()).toEqual([...Array(rt.config.partitions).keys()])
    const model = (await loadModels(rt.store, [tenant])).get(tenant)!
    const expected = expectedFeatureRows(orders, profiles, tenant, model, NOW)
    const rows = await featureRows(rt.store, tenant)
    expect(rows.map((r) => r.customer_id)).toEqual([...expected.rows.keys()])
    for (const row of rows) expect(row, `customer ${row.customer_id}`).toEqual(expected.rows.get(row.customer_id as number))
  })

  it('time alone ages quiet customers: a restarted consumer that receives no event still rescores its partitions on the tick', { timeout: 120_000 }, async () => {
    const tenant = 620
    await publishHistory(tenant, 22, 50)
    const group = uniqueName('features')
    let clock = NOW
    const now = () => clock
    const first = await runFeatures(rt, { now, tickMs: 3_600_000, name: group })
    await drain(group)
    await first.tick()
    await first.stop()
    const before = new Map((await featureRows(rt.store, tenant)).map((r) => [r.customer_id as number, r]))

    clock += 120 * 86_400_000
    const second = await runFeatures(rt, { now, tickMs: 3_600_000, name: group })
    const r = await second.tick()
    await second.stop()
    expect(r.tenants).toBeGreaterThanOrEqual(1)
    const after = await featureRows(rt.store, tenant)
    let buyers = 0
    for (const row of after) {
      const prev = before.get(row.customer_id as number)!
      if (prev.recency_days === null) continue
      buyers++
      expect(row.recency_days, `customer ${row.customer_id}`).toBe((prev.recency_days as number) + 120)
      expect(row.churn_risk).toBe('churned')
    }
    expect(buyers).toBeGreaterThan(20)
  })

  it('a shop of ten customers gets a CLV for every buyer, from the reference prior', { timeout: 120_000 }, async () => {
    const tenant = 602
    const { orders } = await publishHistory(tenant, 5, 10)
    const group = uniqueName('projection')
    const projection = await runPipeline(projectionPipeline(rt.store, { name: group }), { log: rt.log, codec: rt.codec, logger: silentLogger })
    await drain(group)
    await projection.stop()
    const buyers = [...byCustomer(aggregateEvents(orders), tenant).values()].filter((a) => a.orderCount > 0)
    expect(buyers.length).toBeGreaterThan(0)
    expect(buyers.length).toBeLessThanOrEqual(10)
    const engine = createRecomputeEngine({ store: rt.store, logger: silentLogger, partitions: rt.config.partitions, now: () => NOW })
    const result = await engine.run(tenant, { analyses: ['rfm', 'clv', 'churn'], batchSize: 25, force: true, signal: new AbortController().signal })
    expect(result.clv!.processed).toBe(buyers.length)
    expect(result.clv!.avg_clv).toBeGreaterThan(0)
    expect(result.metadata).toMatchObject({ clv_model: 'mbgnbd', clv_method: 'reference_prior' })
    const rs = await rt.store.query({
      query: 'SELECT count() AS n, countIf(predicted_value > 0 AND clv_tier IS NOT NULL) AS valued FROM customer_features FINAL WHERE tenant_id = {t:UInt64} AND frequency > 0',
      query_params: { t: tenant },
      format: 'JSONEachRow',
    })
    expect((await rs.json<{ n: string; valued: string }>()).map((r) => [Number(r.n), Number(r.valued)])).toEqual([[buyers.length, buyers.length]])
  })

  it('POST /api/v2/cdp/process/{tenantId} runs the real recompute: the spec shape, counts that add up, 404 and 400', { timeout: 120_000 }, async () => {
    const tenant = 601
    const { orders } = await publishHistory(tenant, 21, 60)
    const group = uniqueName('projection')
    const projection = await runPipeline(projectionPipeline(rt.store, { name: group }), { log: rt.log, codec: rt.codec, logger: silentLogger })
    await drain(group)
    await projection.stop()

    const engine = createRecomputeEngine({ store: rt.store, logger: silentLogger, partitions: rt.config.partitions, now: () => NOW })
    const app = createApp({ logger: silentLogger, log: rt.log, codec: rt.codec, readiness: [], processing: { store: rt.store, engine, logger: silentLogger, replicaId: 'features-test' } })
    const server = http.createServer(app)
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      const res = await fetch(`${base}/api/v2/cdp/process/${tenant}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ analyses: ['rfm', 'clv', 'churn'] }) })
      expect(res.status).toBe(200)
      const body = (await res.json()) as any
      expect(Object.keys(body).sort()).toEqual(['message', 'metadata', 'results', 'success', 'tenant_id', 'total_time'])
      expect(body.success).toBe(true)
      expect(body.tenant_id).toBe(tenant)
      expect(typeof body.total_time).toBe('number')
      const buyers = [...byCustomer(aggregateEvents(orders), tenant).values()].filter((a) => a.orderCount > 0)
      const { rfm, clv, churn } = body.results
      expect(Object.keys(rfm).sort()).toEqual(['errors', 'processing_time', 'segments', 'total_processed'])
      expect(rfm.total_processed).toBe(buyers.length)
      expect(rfm.errors).toBe(0)
      expect(rfm.segments.map((s: { segment: string }) => s.segment)).toEqual([...SEGMENTS])
      expect(rfm.segments.reduce((n: number, s: { count: number }) => n + s.count, 0)).toBe(buyers.length)
      for (const s of rfm.segments) expect(s.percentage).toBeCloseTo((100 * s.count) / buyers.length, 2)
      expect(Object.keys(clv).sort()).toEqual(['avg_clv', 'processed', 'processing_time'])
      expect(clv.processed).toBe(buyers.length)
      expect(body.metadata).toMatchObject({ clv_model: 'mbgnbd', clv_method: 'reference_prior' }) // 60 buyers: below PRIOR_BELOW
      expect(clv.avg_clv).toBeGreaterThan(0)
      expect(Object.keys(churn).sort()).toEqual(['at_risk', 'churn_rate', 'processed', 'processing_time'])
      expect(churn.processed).toBe(buyers.length)
      // Counted from the stored rows: at_risk = at_risk + churning; churn_rate = churned / buyers.
      const rs = await rt.store.query({
        query: `SELECT countIf(churn_risk IN ('at_risk', 'churning')) AS at_risk, countIf(churn_risk = 'churned') AS churned, avg(total_clv) AS avg_clv
                FROM customer_features FINAL WHERE tenant_id = {t:UInt64} AND frequency > 0`,
        query_params: { t: tenant },
        format: 'JSONEachRow',
      })
      const [stored] = await rs.json<{ at_risk: number; churned: number; avg_clv: number }>()
      expect(churn.at_risk).toBe(Number(stored!.at_risk))
      expect(churn.churn_rate).toBeCloseTo(Number(stored!.churned) / buyers.length, 4)
      expect(clv.avg_clv).toBeCloseTo(Number(stored!.avg_clv), 1)

      const status = (await (await fetch(`${base}/api/v2/cdp/process/status/${tenant}`)).json()) as any
      expect(status.data.status).toBe('processed')
      expect(status.data.records_processed).toBe(String(buyers.length))
      expect(status.data.is_stale).toBe(false)

      // Without new data a second run is the cached one; a new buyer makes the results stale and
      // the next run without force counts them.
      const again = async () => (await (await fetch(`${base}/api/v2/cdp/process/${tenant}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ analyses: ['rfm'] }) })).json()) as any
      expect((await again()).results.rfm.total_processed).toBe(buyers.length)
      const template = orders.find((o) => (o.event_type ?? 'placed') === 'placed')!
      const newcomer = { ...template, event_id: `${template.event_id}-newcomer`, order_id: `${template.order_id}-newcomer`, customer_id: 9_000_001 }
      await publishEvents(rt.log, rt.codec, 'orders', [newcomer])
      const more = await runPipeline(projectionPipeline(rt.store, { name: group }), { log: rt.log, codec: rt.codec, logger: silentLogger })
      await drain(group)
      await more.stop()
      const staleNow = (await (await fetch(`${base}/api/v2/cdp/process/status/${tenant}`)).json()) as any
      expect(staleNow.data.is_stale).toBe(true)
      expect((await again()).results.rfm.total_processed).toBe(buyers.length + 1)
      expect(((await (await fetch(`${base}/api/v2/cdp/process/status/${tenant}`)).json()) as any).data.is_stale).toBe(false)

      const unknown = await fetch(`${base}/api/v2/cdp/process/999999`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      expect(unknown.status).toBe(404)
      expect(((await unknown.json()) as any).success).toBe(false)
      const bad = await fetch(`${base}/api/v2/cdp/process/${tenant}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ analyses: ['rfm', 'ltv'] }) })
      expect(bad.status).toBe(400)
    } finally {
      await new Promise<void>((r) => server.close(() => r()))
    }
  })
})
