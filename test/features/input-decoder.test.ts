import fs from 'node:fs'
import { describe, expect, it } from 'vitest'
import { avroType, frame } from '../../common/eventlog/wire-format.ts'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { InputsDecoder } from '../../pipelines/features/input-worker.ts'
import { CUSTOMER, joinTexts, LEFT, ORDER, replyText, type InputsReply } from '../../pipelines/features/inputs-reply.ts'
import { generateEvents, generateOrderEvents } from '../../pipelines/ingest/synthetic/generate.ts'
import { customer, NOW, ORDER_MUTATIONS, order, T0 } from '../thread-events.ts'
import { rng } from './histories.ts'

/**
 * The feature consumer's decode thread reads most orders from their bytes (common/order-event-reader.ts).
 * That is a fast path: for every record, the reply must be what avsc's decode and the order rules
 * give (InputsDecoder without it), whether the record is ordinary, odd, broken or damaged.
 */

const SCHEMA = JSON.parse(fs.readFileSync(new URL('../../schemas/avro/order-event.avsc', import.meta.url), 'utf8')) as { name: string; namespace: string; fields: { name: string; type: unknown }[] }
const EXPECTED = `${SCHEMA.namespace}.${SCHEMA.name}`
const ID = 42
const type = avroType(SCHEMA)
const CUSTOMER_SCHEMA = JSON.parse(fs.readFileSync(new URL('../../schemas/avro/customer-upserted.avsc', import.meta.url), 'utf8')) as typeof SCHEMA
const CUSTOMER_ID = 43
const customerType = avroType(CUSTOMER_SCHEMA)
const SETUP = { orders: EXPECTED, customers: `${CUSTOMER_SCHEMA.namespace}.${CUSTOMER_SCHEMA.name}` }

function job(values: Buffer[], now = NOW, topic: string = TOPICS.orders.name) {
  const ends = new Int32Array(values.length)
  let pos = 0
  values.forEach((v, i) => (ends[i] = pos += v.length))
  const schemas: [number, string][] = [[ID, JSON.stringify(SCHEMA)], [CUSTOMER_ID, JSON.stringify(CUSTOMER_SCHEMA)]]
  return { id: 1, topic, values: new Uint8Array(Buffer.concat(values)), ends, now, schemas, setup: SETUP }
}

/** Both ways' replies to the same records; the fast way's must equal the general way's. */
function both(values: Buffer[], now = NOW, topic: string = TOPICS.orders.name): InputsReply {
  const fast = new InputsDecoder().inputs(job(values, now, topic))
  const general = new InputsDecoder(false).inputs(job(values, now, topic))
  expect(fast).toEqual(general)
  return fast
}

/** Records damaged as a log's bytes might be: a few bytes changed, cut short, or one byte more. */
function damaged(framed: Buffer[], count: number, seed: number): Buffer[] {
  const next = rng(seed)
  const out: Buffer[] = []
  for (let k = 0; k < count; k++) {
    const f = Buffer.from(framed[k % framed.length]!)
    const kind = next()
    if (kind < 0.6) for (let n = 1 + Math.floor(next() * 3); n > 0; n--) f[5 + Math.floor(next() * (f.length - 5))] = Math.floor(next() * 256)
    out.push(kind >= 0.6 && kind < 0.8 ? f.subarray(0, 5 + Math.floor(next() * (f.length - 5))) : kind >= 0.8 ? Buffer.concat([f, Buffer.from([Math.floor(next() * 256)])]) : f)
  }
  return out
}

/** The records of `reply` the thread took. */
const taken = (reply: InputsReply) => [...reply.kind].filter((k) => k !== LEFT).length

describe('a reply\'s texts, end to end in one string', () => {
  it('gives each text back as it was, empty and non-ASCII ones too', () => {
    const texts = ['o-1', 'e-1', '', '', 'ñandú@example.com', '', '🧉-2', 'e-🧉', 'x'.repeat(40)]
    const joined = joinTexts(texts)
    expect(joined.text).toBe(texts.join(''))
    const reply = { ...joined } as InputsReply
    expect(texts.map((_, j) => replyText(reply, j))).toEqual(texts)
    expect(joinTexts([])).toEqual({ text: '', textEnds: new Uint32Array(0) })
  })
})

describe('InputsDecoder: orders read from their bytes', () => {
  it("gives the generator's order histories exactly as avsc's decode does, taking every event", () => {
    const events = [...generateEvents({ tenantId: 9, customers: 600, seed: 'inputs', start: new Date(T0), end: new Date(NOW - 86_400_000) })].filter((e) => e.topic === 'orders')
    const reply = both(events.map(({ value }) => frame(ID, type, value)))
    expect(taken(reply)).toBe(events.length)
    // Every step of an order's life is among them (placed, delivered, cancelled, refunded), so each field is compared on each.
    expect(new Set(events.map((e) => (e.value as OrderEvent).event_type))).toEqual(new Set(['placed', 'status_changed', 'cancelled', 'refunded']))
    expect(new Set(reply.cancelled)).toEqual(new Set([0, 1]))
  })

  it('takes what the general way takes of events odd or broken in each field, with the same fields', () => {
    const base = order(5, 7, 1, { items: [{ sku: 's1', name: 'Ñandú', quantity: 2, unit_price: '50.25' }, { sku: 's2', name: null, quantity: 1, unit_price: '0.00' }] })
    const framed: Buffer[] = []
    const names: string[] = []
    for (const [name, mutate] of ORDER_MUTATIONS) {
      try {
        framed.push(frame(ID, type, { ...base, ...mutate(base) } as OrderEvent))
        names.push(name)
      } catch {
        // the producer refuses it (an Avro int out of range, a decimal beyond its precision)
      }
    }
    const reply = both(framed)
    // Some are taken (the valid ones), some left (the broken ones): both sides are compared.
    expect(taken(reply)).toBeGreaterThan(8)
    expect(framed.length - taken(reply)).toBeGreaterThan(15)
    // An id outside ASCII is read as UTF-8.
    const k = names.findIndex((name) => name.startsWith('order id outside ASCII'))
    expect(replyText(reply, 2 * k)).toBe('ñ-1')
  })

  it('leaves damaged records unless the general way gives the same fields', () => {
    const events = [...generateOrderEvents({ tenantId: 3, count: 400, customers: 50, seed: 'damage', start: new Date(T0), end: new Date(NOW) })]
    const values = damaged(events.map((e) => frame(ID, type, e.value)), 4000, 23)
    const reply = both(values)
    expect(taken(reply)).toBeGreaterThan(100)
    expect(values.length - taken(reply)).toBeGreaterThan(1000)
  })

  it('checks the future against the time of the job, and gives a cancel as one', () => {
    const future = frame(ID, type, order(5, 1, 1, { occurred_at: NOW, placed_at: NOW }))
    expect([...both([future], NOW).kind]).toEqual([ORDER])
    expect([...both([future], NOW - 6 * 60_000).kind]).toEqual([LEFT])
    const cancel = both([frame(ID, type, order(5, 1, 2, { event_type: 'cancelled', status: 'cancelled' }))])
    expect([cancel.kind[0], cancel.cancelled[0]]).toEqual([ORDER, 1])
  })
})

describe('InputsDecoder: customers read from their bytes', () => {
  const framed = (c: CustomerUpserted) => frame(CUSTOMER_ID, customerType, c)

  it("gives the generator's customers (messy formats too) exactly as avsc's decode does", () => {
    const records = [...generateEvents({ tenantId: 9, customers: 800, seed: 'inputs', start: new Date(T0), end: new Date(NOW), dirtyShare: 0.5 })].filter((e) => e.topic === 'customers')
    const reply = both(records.map((e) => framed(e.value as CustomerUpserted)), NOW, TOPICS.customers.name)
    expect(taken(reply)).toBe(records.length)
    // Customers without an email are among them (an empty text), as are those with one.
    const withEmail = records.filter((e) => (e.value as CustomerUpserted).email !== null).length
    expect(withEmail).toBeLessThan(records.length)
    expect(Array.from(reply.textEnds, (_, k) => replyText(reply, k)).filter((t, k) => k % 2 === 0 && t.includes('@')).length).toBe(withEmail)
  })

  it('takes what the general way takes of customers odd or broken in each field, with the same fields', () => {
    const cases: Partial<CustomerUpserted>[] = [
      {}, { email: null }, { email: 'not-an-email' }, { email: 'ñandú@example.com' }, { email: ' ana@example.com' }, { email: '' },
      { event_id: '' }, { event_id: ' e-1' }, { source: '\t' }, { source: 'ñ-web' }, { tenant_id: 0 }, { customer_id: -1 },
      { occurred_at: Date.UTC(1989, 11, 31) }, { occurred_at: NOW + 86_400_000 }, { created_at: null }, { created_at: Date.UTC(1980, 0, 1) },
      { country: null }, { country: 'ar' }, { country: 'ARG' }, { country: 'ÄR' }, { first_name: 'Ñandú “mate”', last_name: '🧉' },
      { source_ids: [{ source: 'shop', id: '17' }, { source: 'market', id: 'M-9' }] }, { source_ids: [{ source: ' ', id: '1' }] }, { source_ids: [{ source: 'shop', id: '' }] },
      { source_ids: [{ source: 'ñ', id: '1' }] },
    ]
    const reply = both(cases.map((over, k) => framed(customer(5, 10 + k, over))), NOW, TOPICS.customers.name)
    expect(taken(reply)).toBeGreaterThan(10)
    expect(cases.length - taken(reply)).toBeGreaterThan(8)
    expect(replyText(reply, 6)).toBe('ñandú@example.com')
    expect([reply.kind[1], replyText(reply, 2)]).toEqual([CUSTOMER, ''])
  })

  it('reads invalid UTF-8 in a name as avsc does, and leaves damaged records unless the general way gives the same fields', () => {
    // A name's bytes are no rule's business: a broken sequence in one changes nothing.
    const plain = framed(customer(5, 1, { first_name: 'Ana' }))
    const broken = Buffer.from(plain)
    broken[plain.indexOf('Ana')] = 0xff
    expect([...both([broken], NOW, TOPICS.customers.name).kind]).toEqual([CUSTOMER])
    const records = [...generateEvents({ tenantId: 3, customers: 200, seed: 'damage', start: new Date(T0), end: new Date(NOW) })].filter((e) => e.topic === 'customers')
    const values = damaged(records.map((e) => framed(e.value as CustomerUpserted)), 3000, 29)
    const reply = both(values, NOW, TOPICS.customers.name)
    expect(taken(reply)).toBeGreaterThan(100)
    expect(values.length - taken(reply)).toBeGreaterThan(500)
  })
})
