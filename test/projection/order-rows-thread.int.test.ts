import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { encodingInsertFor, NO_MERGE_ON_INSERT, openStore, type Store } from '../../common/store/clickhouse.ts'
import { runPipeline } from '../../common/runtime/pipeline.ts'
import { EventCodec } from '../../common/eventlog/codec.ts'
import { EmbeddedSchemaRegistry } from '../../common/eventlog/schema-registry.ts'
import { projectionPipeline } from '../../pipelines/projection/pipeline.ts'
import { ORDER_EVENT_COLUMNS, orderEventValues } from '../../pipelines/projection/rows.ts'
import { OrderRowsDecoder } from '../../pipelines/projection/order-rows-worker.ts'
import { ORDER_EVENT_COLUMN_TYPES } from '../../pipelines/projection/order-row-transcoder.ts'
import { OrderRowsThread } from '../../pipelines/projection/order-rows.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { generateOrderEvents } from '../../pipelines/ingest/synthetic/generate.ts'
import { encodeRows, encoderFor } from '../../common/store/row-binary.ts'
import { TOPICS } from '../../common/topics.ts'
import { customerKey, type DeadLetter, type OrderEvent } from '../../common/events.ts'
import type { LogRecord } from '../../common/eventlog/port.ts'
import { migrate } from '../../common/store/clickhouse.ts'
import { decodedOffMain } from '../../common/runtime/metrics.ts'
import { readTopic, silentLogger, testConfig, tmpDir, uniqueName, waitFor } from '../helpers.ts'
import { customer, order, T0 } from '../thread-events.ts'

/**
 * The projection's decode thread (order-rows.ts) must store exactly what the main thread's own
 * decode stores, and leave to the main thread every record it cannot vouch for.
 */

let store: Store
let codec: EventCodec
beforeAll(async () => {
  store = await openStore({ database: 'cdp', chdbPath: tmpDir() })
  await migrate(store)
  codec = await EventCodec.create(new EmbeddedSchemaRegistry(tmpDir()))
})
afterAll(async () => {
  await store.close()
})

function record(value: Buffer | null, offset = 0): LogRecord {
  return { topic: TOPICS.orders.name, partition: 0, offset: String(offset), key: null, value, headers: {}, timestamp: 0 }
}

describe('OrderRowsDecoder (the thread side)', () => {
  it("encodes a valid order's row as the main thread does, and leaves every doubtful record to it", async () => {
    // chdb (this file's own store): the projection's rows go as RowBinary, and so through the thread.
    const encoding = (await encodingInsertFor(store, 'order_events', ORDER_EVENT_COLUMNS, NO_MERGE_ON_INSERT))!
    expect(encoding).not.toBeNull()
    const valid = [
      order(5, 1, 1),
      order(5, 2, 2, { event_type: 'refunded', status: 'refunded', total: '0.00', refunded_amount: '100.50' }),
      order(7, 3, 3, { currency: 'USD', items: [{ sku: 'x', name: null, quantity: 1, unit_price: '100.50' }] }),
    ]
    const encoded = await Promise.all(valid.map((e) => codec.encode(TOPICS.orders.name, e)))
    const good = encoded[0]!
    const otherSchema = Buffer.from(good)
    otherSchema.writeUInt32BE(999_999, 1)
    const values: (Buffer | null)[] = [
      encoded[0]!,
      Buffer.from('{"not":"avro"}'), // no wire format
      good.subarray(0, good.length - 3), // truncated
      Buffer.concat([good, Buffer.from([0])]), // trailing byte
      null, // tombstone
      otherSchema, // a schema id this thread was not sent
      await codec.encode(TOPICS.customers.name, customer(5, 1)), // another record type
      await codec.encode(TOPICS.orders.name, order(5, 1, 9, { total: '-5.00', items: [] })), // breaks an order rule
      encoded[1]!,
      encoded[2]!,
    ]
    const ends = new Int32Array(values.length)
    let pos = 0
    values.forEach((v, i) => (ends[i] = pos += v?.length ?? 0))
    const bytes = new Uint8Array(Buffer.concat(values.map((v) => v ?? Buffer.alloc(0))))
    const schemaId = good.readUInt32BE(1)
    const decoder = new OrderRowsDecoder()
    const reply = decoder.rows({
      id: 1, topic: TOPICS.orders.name, values: bytes, ends, now: Date.now(),
      schemas: [[schemaId, codec.registry.knownSchema(schemaId)!]],
      setup: { types: encoding.types, expected: codec.expectedType(TOPICS.orders.name)! },
    })
    expect([...reply.handled]).toEqual([1, 0, 0, 0, 0, 0, 0, 0, 1, 1])
    // The table is the one the transcoder writes rows of (its column types are migration 001's)...
    expect(encoding.types).toEqual([...ORDER_EVENT_COLUMN_TYPES])
    // ...and the thread answers the same with it as with avsc's decode of every record.
    const job = () => ({
      id: 1, topic: TOPICS.orders.name, values: bytes, ends, now: Date.now(),
      schemas: [[schemaId, codec.registry.knownSchema(schemaId)!]] as [number, string][],
      setup: { types: encoding.types, expected: codec.expectedType(TOPICS.orders.name)! },
    })
    expect(new OrderRowsDecoder(false).rows(job())).toEqual(reply)
    expect(new OrderRowsDecoder(true).rows(job())).toEqual(reply)
    expect([...reply.tenants].filter((_, i) => reply.handled[i])).toEqual([5, 5, 7])
    expect([...reply.currencyOf].filter((_, i) => reply.handled[i]).map((c) => reply.currencies[c])).toEqual(['ARS', 'ARS', 'USD'])
    // The rows, byte for byte, are what the main thread encodes of the events it decodes.
    const mainRows = encodeRows(encoding.types.map(encoderFor), await Promise.all(encoded.map(async (v) => orderEventValues(await codec.decode<OrderEvent>(TOPICS.orders.name, v)))))
    expect(Buffer.from(reply.body).equals(mainRows)).toBe(true)
    // A record left to the main thread has an empty row.
    expect(reply.rowEnds[1]).toBe(reply.rowEnds[0])
    expect(reply.rowEnds[9]).toBe(reply.body.length)
    // Without a setup first, nothing is guessed.
    expect(() => new OrderRowsDecoder().rows({ id: 2, topic: TOPICS.orders.name, values: bytes, ends, now: 0, schemas: [], setup: null })).toThrow(/no setup/)
  })
})

describe('OrderRowsThread', () => {
  it('answers in order, fails what it holds when closed, and starts again on the next job', async () => {
    const encoding = (await encodingInsertFor(store, 'order_events', ORDER_EVENT_COLUMNS, NO_MERGE_ON_INSERT))!
    expect(encoding).not.toBeNull()
    const setup = { types: encoding.types, expected: codec.expectedType(TOPICS.orders.name)! }
    const batch = async (from: number) => Promise.all(Array.from({ length: 50 }, async (_, i) => record(await codec.encode(TOPICS.orders.name, order(9, from + i + 1, i)), i)))
    const thread = new OrderRowsThread()
    try {
      const [a, b] = await Promise.all([thread.run(await batch(0), codec.registry, setup), thread.run(await batch(100), codec.registry, setup)])
      expect([...a.handled].every((h) => h === 1) && [...b.handled].every((h) => h === 1)).toBe(true)
      expect(a.id).toBeLessThan(b.id)
      const held = thread.run(await batch(200), codec.registry, setup).catch((err: Error) => err)
      await thread.close()
      expect(await held).toBeInstanceOf(Error)
      expect(String(await held)).toMatch(/closed/)
      // A new thread: sent the setup and the schema again.
      const again = await thread.run(await batch(300), codec.registry, setup)
      expect([...again.handled].every((h) => h === 1)).toBe(true)
    } finally {
      await thread.close()
    }
  })
})

describe('the projection with and without its decode thread', () => {
  it('stores the same rows and dead-letters the same records with the same reasons', async () => {
    // The same events for both tenants (the generator draws a tenant's own, so they are drawn once).
    const generated = [...generateOrderEvents({ tenantId: 1, count: 3000, customers: 400, seed: 'thread', start: new Date(T0), end: new Date(T0 + 200 * 86_400_000) })].map((g) => g.value as OrderEvent)
    const events = (tenant: number): OrderEvent[] => [
      ...generated.map((e) => ({ ...e, tenant_id: tenant })),
      order(tenant, 1, 1, { currency: 'USD' }), // another currency than the tenant's first: currency_mismatch
      order(tenant, 1, 2, { total: '-5.00', items: [] }), // negative_total
      order(tenant, 2, 3, { event_type: 'refunded', status: 'refunded', total: '0.00', refunded_amount: '100.50' }),
    ]
    const run = async (tenant: number, thread: boolean) => {
      const rt: Runtime = await openRuntime(testConfig('embedded'), silentLogger, { store })
      try {
        const evs = events(tenant)
        await publishEvents(rt.log, rt.codec, 'orders', evs.slice(0, 1500))
        await rt.log.send(TOPICS.orders.name, [{ key: customerKey(tenant, 1), value: Buffer.from('{"not":"avro"}') }])
        await publishEvents(rt.log, rt.codec, 'orders', evs.slice(1500))
        const group = uniqueName('proj')
        const offMain = async () => (await decodedOffMain.get()).values.find((v) => v.labels.pipeline === group)?.value ?? 0
        const p = await runPipeline(projectionPipeline(store, { name: group, thread }), { log: rt.log, codec: rt.codec, logger: silentLogger, maxBatch: 700 })
        try {
          await waitFor(async () => (await rt.log.committedOffsets(group, TOPICS.orders.name)).reduce((s, o) => s + Math.max(0, Number(o.offset)), 0) === evs.length + 1, { what: 'every record handled', timeoutMs: 60_000 })
        } finally {
          await p.stop()
        }
        // With the thread, it decoded every record the main thread did not have to look at.
        expect(await offMain()).toBe(thread ? evs.length - 2 : 0)
        // Sent before their batches were committed. Partitions and offsets differ between the
        // tenants (records are placed by key): the reasons are compared.
        const dead = (await readTopic<DeadLetter>(rt.log, rt.codec, TOPICS.deadLetter.name)).filter((d) => d.value.source === group).map((d) => `${d.value.error_code} ${d.value.reason}`)
        const rs = await store.query({ query: 'SELECT * EXCEPT (tenant_id) FROM order_events FINAL WHERE tenant_id = {t:UInt64} ORDER BY customer_id, order_id, event_id', query_params: { t: tenant }, format: 'JSONEachRow' })
        return { rows: await rs.json(), dead: dead.sort() }
      } finally {
        await rt.close()
      }
    }
    const base = 50_000 + Math.floor(Math.random() * 1e6)
    const withThread = await run(base, true)
    const without = await run(base + 1, false)
    expect(withThread.rows).toHaveLength(3000 + 1) // the generated events (in ARS) and the refund
    expect(withThread.dead).toHaveLength(3)
    expect(withThread.dead.map((d) => d.split(' ')[0])).toEqual(expect.arrayContaining(['currency_mismatch', 'negative_total', 'undecodable']))
    expect(withThread.rows).toEqual(without.rows)
    expect(withThread.dead).toEqual(without.dead)
  })
})
