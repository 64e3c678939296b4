import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import { EventCodec } from '../../common/eventlog/codec.ts'
import { TOPICS } from '../../common/topics.ts'
import { customerKey, type DeadLetter } from '../../common/events.ts'
import { decodedOffMain } from '../../common/runtime/metrics.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { runFeatures } from '../../pipelines/features/run.ts'
import { CUSTOMER, InputsThread, LEFT, ORDER, replyText, STRIDE } from '../../pipelines/features/input-thread.ts'
import { InputsDecoder } from '../../pipelines/features/input-worker.ts'
import { factOf } from '../../pipelines/features/order-facts.ts'
import { orderKey } from '../../pipelines/features/order-book.ts'
import type { LogRecord } from '../../common/eventlog/port.ts'
import { caughtUp, migratedStore, newEmbeddedRegistry, readTopic, silentLogger, testConfig, uniqueName, waitFor } from '../helpers.ts'
import { customer, order, T0 } from '../thread-events.ts'
import { history, NOW } from './histories.ts'

/**
 * The feature consumer's decode thread (input-thread.ts) must fold exactly what the main thread's
 * own decode folds, and leave to the main thread every record it cannot vouch for.
 */
/** A customer record at T0 + its id, with this e-mail. */
const customerAt = (tenant: number, id: number, email: string | null) => customer(tenant, id, { email, occurred_at: T0 + id })

const record = (topic: string, value: Buffer | null, offset = 0): LogRecord => ({ topic, partition: 0, offset: String(offset), key: null, value, headers: {}, timestamp: 0 })

function pack(values: (Buffer | null)[]): { values: Uint8Array; ends: Int32Array } {
  const ends = new Int32Array(values.length)
  let pos = 0
  values.forEach((v, i) => (ends[i] = pos += v?.length ?? 0))
  return { values: new Uint8Array(Buffer.concat(values.map((v) => v ?? Buffer.alloc(0)))), ends }
}

let store: Store
let codec: EventCodec
beforeAll(async () => {
  store = await migratedStore()
  codec = await EventCodec.create(newEmbeddedRegistry())
})
afterAll(async () => {
  await store.close()
})

describe('InputsDecoder (the thread side)', () => {
  const setup = () => ({ orders: codec.expectedType(TOPICS.orders.name)!, customers: codec.expectedType(TOPICS.customers.name)! })
  const schemasOf = (values: (Buffer | null)[]) => [...new Set(values.filter((v): v is Buffer => v !== null && v[0] === 0).map((v) => v.readUInt32BE(1)))].map((id) => [id, codec.registry.knownSchema(id)!] as [number, string])

  it("gives an order's fact and a customer's email as the main thread reads them, and leaves every doubtful record to it", async () => {
    const good = order(3, 7, 1, { event_type: 'refunded', status: 'refunded', total: '60.25', refunded_amount: '40.25' })
    const orders = [
      await codec.encode(TOPICS.orders.name, good),
      await codec.encode(TOPICS.orders.name, order(3, 8, 2, { total: '-5.00', items: [] })), // negative_total: left
      Buffer.from('{"not":"avro"}'), // undecodable: left
      null, // a tombstone: left
      await codec.encode(TOPICS.orders.name, order(3, 9, 3, { currency: 'USD' })), // the currency is checked on the main thread
      await codec.encode(TOPICS.orders.name, order(3, 9, 4, { occurred_at: Date.now() + 3_600_000 })), // in the future: left
    ]
    const decoder = new InputsDecoder()
    const r = decoder.inputs({ id: 1, topic: TOPICS.orders.name, ...pack(orders), now: Date.now(), schemas: schemasOf(orders), setup: setup() })
    expect([...r.kind]).toEqual([ORDER, LEFT, LEFT, LEFT, ORDER, LEFT])
    const fact = factOf(good)
    expect([...r.nums.subarray(0, STRIDE)]).toEqual([3, 7, good.occurred_at, fact.version, fact.placedAt, fact.cents, orderKey('o-7-1')])
    expect(fact.cents).toBe(6025)
    expect([replyText(r, 0), replyText(r, 1), r.cancelled[0]]).toEqual(['o-7-1', 'e-7-1', 0])
    expect([r.currencies[r.currencyOf[0]!], r.currencies[r.currencyOf[4]!]]).toEqual(['ARS', 'USD'])

    // Customers: the email as sent (none: empty), a broken rule left to the main thread.
    const customers = [await codec.encode(TOPICS.customers.name, customerAt(3, 7, 'ana@example.com')), await codec.encode(TOPICS.customers.name, customerAt(3, 8, null)), await codec.encode(TOPICS.customers.name, customerAt(3, 9, 'not-an-email'))]
    const c = decoder.inputs({ id: 2, topic: TOPICS.customers.name, ...pack(customers), now: Date.now(), schemas: schemasOf(customers), setup: null })
    expect([...c.kind]).toEqual([CUSTOMER, CUSTOMER, LEFT])
    expect([replyText(c, 0), replyText(c, 2)]).toEqual(['ana@example.com', ''])
    expect([...c.nums.subarray(STRIDE, STRIDE + 3)]).toEqual([3, 8, T0 + 8])

    // An order value on the customers topic is of another type: left. A schema not sent: left.
    const wrong = decoder.inputs({ id: 3, topic: TOPICS.customers.name, ...pack([orders[0]!]), now: Date.now(), schemas: [], setup: null })
    expect([...wrong.kind]).toEqual([LEFT])
    const unknown = new InputsDecoder().inputs({ id: 4, topic: TOPICS.orders.name, ...pack([orders[0]!]), now: Date.now(), schemas: [], setup: setup() })
    expect([...unknown.kind]).toEqual([LEFT])
    expect(() => new InputsDecoder().inputs({ id: 5, topic: TOPICS.orders.name, ...pack([]), now: 0, schemas: [], setup: null })).toThrow(/no setup/)
  })

  it('a thread answers a part sent to it, and starts again after it was closed', async () => {
    const thread = new InputsThread()
    const records = await Promise.all(Array.from({ length: 40 }, async (_, i) => record(TOPICS.orders.name, await codec.encode(TOPICS.orders.name, order(4, i + 1, i)), i)))
    try {
      expect(thread.ready).toBe(false)
      const a = await thread.run(records, codec.registry, setup())
      expect([...a.kind].every((k) => k === ORDER)).toBe(true)
      expect(thread.ready).toBe(true) // it said so before it answered
      expect(Array.from({ length: 40 }, (_, i) => replyText(a, 2 * i))).toEqual(Array.from({ length: 40 }, (_, i) => `o-${i + 1}-${i}`))
      await thread.close()
      const b = await thread.run(records, codec.registry, setup())
      expect([...b.kind].every((k) => k === ORDER)).toBe(true)
    } finally {
      await thread.close()
    }
  })
})

describe('the feature consumer with and without its decode thread', () => {
  it('stores the same features and facts, and dead-letters the same records with the same reasons', { timeout: 180_000 }, async () => {
    const h = history(1, 31, 60)
    const run = async (tenant: number, decodeThread: boolean) => {
      const rt: Runtime = await openRuntime(testConfig('embedded'), silentLogger, { store })
      try {
        const group = uniqueName('features')
        let clock = NOW
        const features = await runFeatures(rt, { now: () => clock, tickMs: 3_600_000, name: group, decodeThread })
        const offMain = async () => (await decodedOffMain.get()).values.find((v) => v.labels.pipeline === group)?.value ?? 0
        const orders = h.orders.map((e) => ({ ...e, tenant_id: tenant }))
        const profiles = h.profiles.map((e) => ({ ...e, tenant_id: tenant }))
        try {
          // Until its thread has loaded, the consumer decodes on the main thread: the records come once it has.
          if (decodeThread) await waitFor(async () => features.engine.decodeThreadReady, { what: 'the decode thread loaded', timeoutMs: 30_000 })
          expect(features.engine.decodeThreadReady).toBe(decodeThread)
          await publishEvents(rt.log, rt.codec, 'customers', profiles)
          await publishEvents(rt.log, rt.codec, 'orders', orders.slice(0, 100))
          await rt.log.send(TOPICS.orders.name, [{ key: customerKey(tenant, 1), value: Buffer.from('{"not":"avro"}') }])
          await publishEvents(rt.log, rt.codec, 'orders', [
            order(tenant, orders[0]!.customer_id, 1, { currency: 'USD' }), // another currency than the tenant's: currency_mismatch
            order(tenant, orders[0]!.customer_id, 2, { total: '-5.00', items: [] }), // negative_total
          ])
          await publishEvents(rt.log, rt.codec, 'orders', orders.slice(100))
          await publishEvents(rt.log, rt.codec, 'customers', [customerAt(tenant, 1, 'not-an-email')])
          await caughtUp(rt.log, group, { timeoutMs: 120_000 })
          // The model fitted at the first batch depends on how the records were batched: an hour on,
          // the tick refits it on every stored customer and rescores them all.
          clock += 3_600_000
          await features.tick()
        } finally {
          await features.stop()
        }
        expect(await offMain()).toBe(decodeThread ? orders.length + profiles.length : 0)
        const dead = (await readTopic<DeadLetter>(rt.log, rt.codec, TOPICS.deadLetter.name)).filter((d) => d.value.source === group).map((d) => `${d.value.error_code} ${d.value.reason}`)
        const rows = async (sql: string) => (await rt.store.query({ query: sql, query_params: { t: tenant }, format: 'JSONEachRow' })).json()
        return {
          // What the fold gives (the partition follows the tenant id, which differs between the runs).
          features: await rows(`SELECT customer_id, email, email_version, recency_days, frequency, monetary, rfm_score, segment, first_order_at, last_order_at,
            purchase_days, repeat_purchases, repeat_span_days, repeat_avg_value, avg_order_value, order_times, order_cents, historical_value
            FROM customer_features FINAL WHERE tenant_id = {t:UInt64} ORDER BY customer_id`),
          // The model's: a refit starts from the model before it, fitted at the first batch, so they agree to a cent or so.
          clv: (await rows('SELECT toFloat64(total_clv) AS v FROM customer_features FINAL WHERE tenant_id = {t:UInt64} ORDER BY customer_id')).map((r) => (r as { v: number }).v),
          facts: await rows('SELECT * EXCEPT (tenant_id, partition) FROM feature_order_facts FINAL WHERE tenant_id = {t:UInt64} ORDER BY customer_id, order_id'),
          dead: dead.sort(),
        }
      } finally {
        await rt.close()
      }
    }
    const base = 70_000 + Math.floor(Math.random() * 1e6)
    const withThread = await run(base, true)
    const without = await run(base + 1, false)
    expect(withThread.features).toHaveLength(new Set([...h.orders, ...h.profiles].map((e) => e.customer_id)).size)
    expect(withThread.facts).toHaveLength(new Set(h.orders.map((o) => o.order_id)).size)
    expect(withThread.dead.map((d) => d.split(' ')[0]).sort()).toEqual(['currency_mismatch', 'invalid_email', 'negative_total', 'undecodable'].sort())
    expect(withThread.features).toEqual(without.features)
    expect(withThread.clv.filter((v) => v > 0).length).toBeGreaterThan(10)
    withThread.clv.forEach((v, i) => expect(Math.abs(v - without.clv[i]!), `customer ${i}`).toBeLessThanOrEqual(Math.max(0.05, 1e-3 * v)))
    expect(withThread.facts).toEqual(without.facts)
    expect(withThread.dead).toEqual(without.dead)
  })
})
