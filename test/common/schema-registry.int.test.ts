import { describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { EventCodec, readSchema } from '../../common/eventlog/codec.ts'
import {
  ConfluentSchemaRegistry,
  EmbeddedSchemaRegistry,
  IncompatibleSchemaError,
  RegistryUnavailableError,
  UndecodableRecordError,
  type SchemaRegistryPort,
} from '../../common/eventlog/schema-registry.ts'
import { ALL_TOPICS, TOPICS, subjectFor } from '../../common/topics.ts'
import { RedeliverError } from '../../common/runtime/pipeline.ts'
import { decodeRecord } from '../../pipelines/ingest/index.ts'
import type { OrderEvent } from '../../common/events.ts'
import { newConfluentRegistry, registryUrl, tmpDir, uniqueName } from '../helpers.ts'

type Field = { name: string; type: unknown; default?: unknown }
type RecordSchema = { type: 'record'; name: string; namespace?: string; fields: Field[] }

const ORDER_SCHEMA = readSchema(TOPICS.orders.schema)

function orderSchemaWith(change: (s: RecordSchema) => void): string {
  const s = JSON.parse(ORDER_SCHEMA) as RecordSchema
  change(s)
  return JSON.stringify(s)
}

/** A new field every reader must find, with no default: old data cannot be read (not BACKWARD). */
const addRequiredField = orderSchemaWith((s) => s.fields.push({ name: 'channel', type: 'string' }))
/** `total` becomes a long: bytes-decimal data cannot be read as a long. (Not `string`: Avro promotes bytes to string, so that change is BACKWARD.) */
const changeTotalType = orderSchemaWith((s) => {
  s.fields.find((f) => f.name === 'total')!.type = 'long'
})
/** A new optional field defaulting to null: old data reads with channel = null (BACKWARD). */
const addOptionalField = orderSchemaWith((s) => s.fields.push({ name: 'channel', type: ['null', 'string'], default: null }))

const T0 = Date.UTC(2025, 0, 1)

function order(total: string, over: Partial<OrderEvent> = {}): OrderEvent {
  return {
    event_id: randomUUID(), tenant_id: 7, occurred_at: T0, source: 'test', event_type: 'placed',
    order_id: 'o-1', customer_id: 1, status: 'paid', total, currency: 'ARS',
    refunded_amount: null, items: [{ sku: 's', name: null, quantity: 1, unit_price: total }], placed_at: T0, ...over,
  }
}

/** The compatibility contract, the same for both registries. */
function compatibilityCases(name: string, makeRegistry: () => SchemaRegistryPort) {
  describe(`${name}: BACKWARD compatibility`, () => {
    it('rejects a new required field without default, and a changed type of total', async () => {
      const registry = makeRegistry()
      const subject = `${uniqueName('compat')}-value`
      const v1 = await registry.register(subject, ORDER_SCHEMA)
      expect(v1).toBeGreaterThan(0)
      await expect(registry.register(subject, addRequiredField)).rejects.toBeInstanceOf(IncompatibleSchemaError)
      await expect(registry.register(subject, changeTotalType)).rejects.toBeInstanceOf(IncompatibleSchemaError)
      const err = await registry.register(subject, addRequiredField).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(IncompatibleSchemaError)
      expect((err as IncompatibleSchemaError).subject).toBe(subject)
      expect((err as IncompatibleSchemaError).retriable).toBe(false)
      // The reason names the offending field (Apicurio: "channel at /fields/13"; avsc: "...OrderEvent.channel").
      expect((err as Error).message).toMatch(/channel/)
      // The rejected versions left the subject as it was: v1 still registers to the same id.
      expect(await registry.register(subject, ORDER_SCHEMA)).toBe(v1)
    })

    it('accepts a new optional field with default null under a new id, and reads v1 data', async () => {
      const registry = makeRegistry()
      const subject = `${uniqueName('compat')}-value`
      const v1 = await registry.register(subject, ORDER_SCHEMA)
      const v2 = await registry.register(subject, addOptionalField)
      expect(v2).toBeGreaterThan(0)
      expect(v2).not.toBe(v1)
      // Data written with either version decodes (each by its own writer schema).
      const e = order('10.00')
      const a = await registry.decode(await registry.encode(v1, e))
      const b = await registry.decode(await registry.encode(v2, { ...e, channel: 'web' }))
      expect(a.schemaId).toBe(v1)
      expect(b.schemaId).toBe(v2)
      expect((a.value as OrderEvent).total).toBe('10.00')
      expect((b.value as OrderEvent & { channel: string }).channel).toBe('web')
    })
  })
}

compatibilityCases('Confluent-compatible registry (Apicurio ccompat)', newConfluentRegistry)
compatibilityCases('embedded registry', () => new EmbeddedSchemaRegistry(tmpDir()))

describe('EventCodec on the real registry', () => {
  it('registers every topic subject <topic>-value with BACKWARD compatibility', { timeout: 180_000 }, async () => {
    const codec = await EventCodec.create(newConfluentRegistry())
    const url = registryUrl()
    const res = await fetch(`${url}/subjects`)
    expect(res.ok).toBe(true)
    const subjects = (await res.json()) as string[]
    for (const t of ALL_TOPICS) {
      expect(subjects).toContain(subjectFor(t.name))
      expect(codec.schemaId(t.name)).toBeGreaterThan(0)
    }
    expect(ALL_TOPICS).toHaveLength(7)
    expect(subjects).toContain('cdp.profile-changes.v1-value')
    const cfg = await fetch(`${url}/config/${encodeURIComponent(subjectFor(TOPICS.orders.name))}`)
    expect(cfg.ok).toBe(true)
    expect(((await cfg.json()) as { compatibilityLevel: string }).compatibilityLevel.toUpperCase()).toBe('BACKWARD')
    // Creating the codec again (a restart) registers nothing new: the same ids.
    const again = await EventCodec.create(new ConfluentSchemaRegistry({ url }))
    for (const t of ALL_TOPICS) expect(again.schemaId(t.name)).toBe(codec.schemaId(t.name))
  })
})

describe('embedded registry persistence', () => {
  it('keeps ids across re-open, and re-registering the same schema returns the same id', async () => {
    const dir = tmpDir()
    const r1 = new EmbeddedSchemaRegistry(dir)
    const ordersId = await r1.register('orders-value', ORDER_SCHEMA)
    const custId = await r1.register('customers-value', readSchema(TOPICS.customers.schema))
    const v2 = await r1.register('orders-value', addOptionalField)
    expect(new Set([ordersId, custId, v2]).size).toBe(3)
    expect(await r1.register('orders-value', ORDER_SCHEMA)).toBe(ordersId)
    // Formatting does not matter: the canonical form is what gets an id.
    expect(await r1.register('orders-value', JSON.stringify(JSON.parse(ORDER_SCHEMA), null, 4))).toBe(ordersId)
    const framed = await r1.encode(ordersId, order('1.00'))

    const r2 = new EmbeddedSchemaRegistry(dir)
    expect(await r2.register('orders-value', ORDER_SCHEMA)).toBe(ordersId)
    expect(await r2.register('customers-value', readSchema(TOPICS.customers.schema))).toBe(custId)
    expect(await r2.register('orders-value', addOptionalField)).toBe(v2)
    // A record framed before the re-open decodes by its id after it.
    expect(((await r2.decode(framed)).value as OrderEvent).total).toBe('1.00')
    // New ids continue after the persisted ones, and the compatibility history persisted too.
    const other = await r2.register(`${uniqueName('other')}-value`, readSchema(TOPICS.deadLetter.schema))
    expect(other).toBeGreaterThan(Math.max(ordersId, custId, v2))
    await expect(r2.register('orders-value', addRequiredField)).rejects.toBeInstanceOf(IncompatibleSchemaError)
  })
})

describe('wire format', () => {
  it('frames values as magic byte 0 + 4-byte big-endian schema id + Avro', async () => {
    const codec = await EventCodec.create(new EmbeddedSchemaRegistry(tmpDir()))
    const id = codec.schemaId(TOPICS.orders.name)
    const buf = await codec.encode(TOPICS.orders.name, order('1234.50'))
    expect(buf[0]).toBe(0)
    expect(buf.readUInt32BE(1)).toBe(id)
    // Big-endian spelled out, not just read back with the same helper.
    expect([...buf.subarray(1, 5)]).toEqual([(id >>> 24) & 0xff, (id >>> 16) & 0xff, (id >>> 8) & 0xff, id & 0xff])
    // The rest is plain Avro binary: the first field is the event_id string (zig-zag length 36 → 72).
    expect(buf[5]).toBe(72)
  })

  it('refuses a payload cut short or followed by other bytes, and a value without the frame, synchronously too', async () => {
    const codec = await EventCodec.create(new EmbeddedSchemaRegistry(tmpDir()))
    const buf = await codec.encode(TOPICS.orders.name, order('1234.50'))
    expect((codec.decodeSoon<OrderEvent>(TOPICS.orders.name, buf) as OrderEvent).total).toBe('1234.50')
    for (const [what, bad] of [
      ['truncated', buf.subarray(0, buf.length - 1)],
      ['trailing', Buffer.concat([buf, Buffer.from([0])])],
      ['unframed', buf.subarray(5)],
      ['empty', Buffer.alloc(0)],
    ] as const) {
      expect(() => codec.decodeSoon(TOPICS.orders.name, bad), what).toThrow(UndecodableRecordError)
      await expect(codec.decode(TOPICS.orders.name, bad), what).rejects.toBeInstanceOf(UndecodableRecordError)
    }
  })

  it('frames with the id the real registry assigned', async () => {
    const codec = await EventCodec.create(newConfluentRegistry())
    const id = codec.schemaId(TOPICS.orders.name)
    const buf = await codec.encode(TOPICS.orders.name, order('1234.50'))
    expect(buf[0]).toBe(0)
    expect(buf.readUInt32BE(1)).toBe(id)
    // A fresh client (no cache) fetches the schema by id from the registry and decodes.
    const fresh = await EventCodec.create(newConfluentRegistry())
    expect((await fresh.decode<OrderEvent>(TOPICS.orders.name, buf)).total).toBe('1234.50')
  })

  it.each([
    '1234.50', '0.00', '0.01', '-0.01', '-1234.50', '1.28', '-1.28', '-1.29', '327.67', '-327.68', '-327.69',
    '9999999999999.99', '-9999999999999.99',
  ])('decimal %s round-trips exactly', async (total) => {
    const codec = await EventCodec.create(new EmbeddedSchemaRegistry(tmpDir()))
    const e = order(total, { refunded_amount: total.startsWith('-') ? total.slice(1) : total })
    const back = await codec.decode<OrderEvent>(TOPICS.orders.name, await codec.encode(TOPICS.orders.name, e))
    expect(back.total).toBe(total)
    expect(back.items[0]!.unit_price).toBe(total)
    expect(back.refunded_amount).toBe(e.refunded_amount)
  })

  it('normalises decimals to the schema scale and rejects what does not fit', async () => {
    const codec = await EventCodec.create(new EmbeddedSchemaRegistry(tmpDir()))
    const rt = async (total: string) => (await codec.decode<OrderEvent>(TOPICS.orders.name, await codec.encode(TOPICS.orders.name, order(total)))).total
    expect(await rt('1234.5')).toBe('1234.50')
    expect(await rt('-7')).toBe('-7.00')
    expect(await rt('1.230')).toBe('1.23')
    await expect(codec.encode(TOPICS.orders.name, order('1.234'))).rejects.toThrow()
    await expect(codec.encode(TOPICS.orders.name, order('10000000000000.00'))).rejects.toThrow()
  })
})

describe('a registry that cannot answer', () => {
  /** A value framed with a schema id no registry here has seen. */
  const unknownId = (id: number) => Buffer.from([0, 0, 0, 0, id, 2, 0x61])
  const record = (value: Buffer) => ({ topic: TOPICS.orders.name, partition: 0, offset: '0', key: null, value, headers: {}, timestamp: 0 })

  async function withServer(answer: (res: http.ServerResponse) => void, run: (url: string, requests: () => number) => Promise<void>) {
    let requests = 0
    const server = http.createServer((req, res) => {
      requests++
      answer(res)
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    try {
      await run(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, () => requests)
    } finally {
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
    }
  }

  it('gives up on a request after its timeout, and the batch comes again instead of a dead letter', async () => {
    await withServer(
      () => undefined, // accepts, never answers
      async (url) => {
        const registry = new ConfluentSchemaRegistry({ url, timeoutMs: 300 })
        const err = await registry.decode(unknownId(91)).catch((e: unknown) => e)
        expect(err).toBeInstanceOf(RegistryUnavailableError)
        expect((err as Error).message).toMatch(/schema id 91/)
        // What every consumer's decode step does with it: the batch fails, to be delivered again.
        const codec = await EventCodec.create(new EmbeddedSchemaRegistry(tmpDir('reg-timeout')))
        ;(codec as unknown as { registry: SchemaRegistryPort }).registry = registry
        await expect(Promise.resolve(decodeRecord(record(unknownId(92)), codec))).rejects.toBeInstanceOf(RedeliverError)
      },
    )
  })

  it('retries a failing registry, then leaves the record unread; an id it does not know is a dead letter', async () => {
    await withServer(
      (res) => res.writeHead(503, { 'content-type': 'application/json' }).end('{"error_code":50302,"message":"unavailable"}'),
      async (url, requests) => {
        const err = await new ConfluentSchemaRegistry({ url, timeoutMs: 2000 }).decode(unknownId(93)).catch((e: unknown) => e)
        expect(err).toBeInstanceOf(RegistryUnavailableError)
        expect(requests()).toBe(4) // the first try and the client's three retries
      },
    )
    // A schema the client cannot read (not Avro) will not become readable: a dead letter, not a wait.
    await withServer(
      (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ schemaType: 'JSON', schema: '{"type":"object"}' })),
      async (url) => {
        const err = await new ConfluentSchemaRegistry({ url, timeoutMs: 2000 }).decode(unknownId(94)).catch((e: unknown) => e)
        expect(err).toBeInstanceOf(UndecodableRecordError)
      },
    )
    // The real registry answers 404 (40403) for an id it never gave: the record cannot be read.
    const codec = await EventCodec.create(newConfluentRegistry())
    const dead = await decodeRecord(record(Buffer.from([0, 0x7f, 0xff, 0xff, 0xff, 2, 0x61])), codec)
    expect(dead).toMatchObject({ kind: 'dlq', code: 'undecodable' })
    expect((dead as { reason: string }).reason).toMatch(/^unknown schema id 2147483647/)
  })
})
