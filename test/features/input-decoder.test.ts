import fs from 'node:fs'
import { describe, expect, it } from 'vitest'
import { avroType, frame } from '../../common/eventlog/wire-format.ts'
import type { OrderEvent } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { InputsDecoder } from '../../pipelines/features/input-worker.ts'
import { LEFT, ORDER, type InputsReply } from '../../pipelines/features/inputs-reply.ts'
import { generateEvents, generateOrderEvents } from '../../pipelines/ingest/synthetic/generate.ts'
import { NOW, ORDER_MUTATIONS, order, T0 } from '../thread-events.ts'
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
const SETUP = { orders: EXPECTED, customers: 'cdp.customers.v1.CustomerUpserted' }

function job(values: Buffer[], now = NOW) {
  const ends = new Int32Array(values.length)
  let pos = 0
  values.forEach((v, i) => (ends[i] = pos += v.length))
  return { id: 1, topic: TOPICS.orders.name, values: new Uint8Array(Buffer.concat(values)), ends, now, schemas: [[ID, JSON.stringify(SCHEMA)]] as [number, string][], setup: SETUP }
}

/** Both ways' replies to the same records; the fast way's must equal the general way's. */
function both(values: Buffer[], now = NOW): InputsReply {
  const fast = new InputsDecoder().inputs(job(values, now))
  const general = new InputsDecoder(false).inputs(job(values, now))
  expect(fast).toEqual(general)
  return fast
}

/** The records of `reply` the thread took. */
const taken = (reply: InputsReply) => [...reply.kind].filter((k) => k !== LEFT).length

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
    for (const [, mutate] of ORDER_MUTATIONS) {
      try {
        framed.push(frame(ID, type, { ...base, ...mutate(base) } as OrderEvent))
      } catch {
        // the producer refuses it (an Avro int out of range, a decimal beyond its precision)
      }
    }
    const reply = both(framed)
    // Some are taken (the valid ones), some left (the broken ones): both sides are compared.
    expect(taken(reply)).toBeGreaterThan(8)
    expect(framed.length - taken(reply)).toBeGreaterThan(15)
    // An id outside ASCII is read as UTF-8.
    const k = ORDER_MUTATIONS.findIndex(([name]) => name.startsWith('order id outside ASCII'))
    expect(reply.texts[2 * k]).toBe('ñ-1')
  })

  it('leaves damaged records unless the general way gives the same fields', () => {
    const next = rng(23)
    const events = [...generateOrderEvents({ tenantId: 3, count: 400, customers: 50, seed: 'damage', start: new Date(T0), end: new Date(NOW) })]
    const values: Buffer[] = []
    for (let k = 0; k < 4000; k++) {
      const framed = Buffer.from(frame(ID, type, events[k % events.length]!.value))
      const kind = next()
      if (kind < 0.6) for (let n = 1 + Math.floor(next() * 3); n > 0; n--) framed[5 + Math.floor(next() * (framed.length - 5))] = Math.floor(next() * 256)
      values.push(kind >= 0.6 && kind < 0.8 ? framed.subarray(0, 5 + Math.floor(next() * (framed.length - 5))) : kind >= 0.8 ? Buffer.concat([framed, Buffer.from([Math.floor(next() * 256)])]) : framed)
    }
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
