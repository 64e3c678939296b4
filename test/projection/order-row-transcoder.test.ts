import fs from 'node:fs'
import { describe, expect, it } from 'vitest'
import type avsc from 'avsc'
import { avroType, frame, readPayload, typeNameOf } from '../../common/eventlog/wire-format.ts'
import { orderSemanticErrors } from '../../common/event-rules.ts'
import type { OrderEvent } from '../../common/events.ts'
import { ByteWriter, encoderFor, RowBinaryUnsupported, RowEncoder } from '../../common/store/row-binary.ts'
import { currencyText, ORDER_EVENT_COLUMN_TYPES, orderRowTranscoder, type OrderRowTranscoder } from '../../pipelines/projection/order-row-transcoder.ts'
import { orderEventValues } from '../../pipelines/projection/rows.ts'
import { generateOrderEvents } from '../../pipelines/ingest/synthetic/generate.ts'
import { NOW, ORDER_MUTATIONS as mutations, order, T0 } from '../thread-events.ts'

/**
 * The transcoder is a fast path: whatever it takes, the general way (avsc's decode, the order
 * rules, the row encoder) must take too and store byte for byte the same. It must also take the
 * ordinary events, or it is no path at all.
 */

const SCHEMA = JSON.parse(fs.readFileSync(new URL('../../schemas/avro/order-event.avsc', import.meta.url), 'utf8')) as { name: string; namespace: string; fields: { name: string; type: unknown }[] }
const EXPECTED = `${SCHEMA.namespace}.${SCHEMA.name}`
const ID = 42
const rows = new RowEncoder(ORDER_EVENT_COLUMN_TYPES.map(encoderFor))

/** What the decode thread's general way stores of `framed`: its row, tenant and currency; null when it leaves the record. */
function generalWay(type: avsc.Type, framed: Uint8Array, now: number): { row: Buffer; tenant: number; currency: string } | null {
  const buf = Buffer.from(framed.buffer, framed.byteOffset, framed.length)
  let e: OrderEvent
  try {
    e = readPayload(type, ID, buf) as OrderEvent
  } catch {
    return null
  }
  if (typeNameOf(e) !== EXPECTED || orderSemanticErrors(e, now).length) return null
  const w = new ByteWriter(64)
  try {
    rows.encodeInto(w, orderEventValues(e))
  } catch (err) {
    if (err instanceof RowBinaryUnsupported) return null
    throw err
  }
  return { row: Buffer.from(w.bytes()), tenant: e.tenant_id, currency: e.currency }
}

function fastWay(t: OrderRowTranscoder, framed: Uint8Array, now: number) {
  const w = new ByteWriter(64)
  // The record lies amid others, as in a job's values: nothing outside its bounds may be read.
  const padded = new Uint8Array(framed.length + 8).fill(0x81)
  padded.set(framed, 4)
  const took = t.row(w, padded, 4, 4 + framed.length, now)
  if (!took) {
    expect(w.pos).toBe(0)
    return null
  }
  return { row: Buffer.from(w.bytes()), tenant: t.tenant, currency: currencyText(t.currency) }
}

/** Checks the promise on one record; returns whether the fast way took it. */
function check(type: avsc.Type, t: OrderRowTranscoder, framed: Uint8Array, now = NOW): boolean {
  const fast = fastWay(t, framed, now)
  if (fast) expect(fast).toEqual(generalWay(type, framed, now))
  return fast !== null
}

/** A small deterministic generator (the tests' cases must not change from run to run). */
function rng(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

const type = avroType(SCHEMA)
const transcoder = orderRowTranscoder(type, EXPECTED, ORDER_EVENT_COLUMN_TYPES)!

describe('orderRowTranscoder', () => {
  it("stores the generator's events exactly as the general way does, taking every one", () => {
    const events = [...generateOrderEvents({ tenantId: 9, count: 3000, customers: 500, seed: 'transcoder', start: new Date(T0), end: new Date(NOW) })]
    let taken = 0
    for (const { value } of events) if (check(type, transcoder, frame(ID, type, value))) taken++
    expect(taken).toBe(events.length)
  })

  it('takes what the general way takes of events odd or broken in each field, and nothing it leaves', () => {
    const base = order(5, 7, 1, { items: [{ sku: 's1', name: 'Ñandú', quantity: 2, unit_price: '50.25' }, { sku: 's2', name: null, quantity: 1, unit_price: '0.00' }] })
    const outcomes: Record<string, boolean> = {}
    for (const [name, mutate] of mutations) {
      const e = { ...base, ...mutate(base) }
      let framed: Buffer
      try {
        framed = frame(ID, type, e)
      } catch {
        continue // the producer refuses it (an Avro int out of range, a decimal beyond its precision)
      }
      outcomes[name] = check(type, transcoder, framed)
    }
    // The valid ones that fit its limits are taken; the broken ones are left.
    expect(Object.keys(outcomes).filter((k) => outcomes[k]).sort()).toEqual([
      'a long event id (valid)',
      'a negative price line (valid when it adds up)',
      'cancelled',
      'credit note (valid)',
      'largest ids avsc writes',
      'names outside ASCII and none (valid)',
      'no items on a placed order (valid)',
      'occurred_at within the tolerance (valid)',
      'other currency (valid)',
      'refund equal to a placed total (valid)',
      'refunded (valid)',
      'status change with other items',
      'status outside ASCII after its first letter',
    ])
  })

  it('leaves records whose bytes are damaged unless the general way stores the same row', () => {
    const next = rng(17)
    const events = [...generateOrderEvents({ tenantId: 3, count: 400, customers: 50, seed: 'damage', start: new Date(T0), end: new Date(NOW) })]
    let taken = 0
    let left = 0
    for (let k = 0; k < 6000; k++) {
      const framed = Buffer.from(frame(ID, type, events[k % events.length]!.value))
      const kind = next()
      if (kind < 0.6) {
        // One to three bytes of the payload set to anything (an invalid UTF-8 byte, a varint's continuation, a length).
        for (let n = 1 + Math.floor(next() * 3); n > 0; n--) framed[5 + Math.floor(next() * (framed.length - 5))] = Math.floor(next() * 256)
      }
      const cut = kind >= 0.6 && kind < 0.8 ? framed.subarray(0, 5 + Math.floor(next() * (framed.length - 5))) : kind >= 0.8 ? Buffer.concat([framed, Buffer.from([Math.floor(next() * 256)])]) : framed
      if (check(type, transcoder, cut)) taken++
      else left++
    }
    // Both happen: damage in a string's letters or a name may still make a valid event.
    expect(taken).toBeGreaterThan(100)
    expect(left).toBeGreaterThan(1000)
  })

  it('reads arrays written in blocks with their sizes (as a Java writer may)', () => {
    const e = order(5, 7, 1, { total: '3.00', items: [1, 2, 3].map((k) => ({ sku: `s${k}`, name: null, quantity: 1, unit_price: '1.00' })) })
    const plain = frame(ID, type, e)
    // Re-frame the items as two blocks: -2 items (size given), then 1 item, then 0.
    const itemType = avroType({ ...((SCHEMA.fields.find((f) => f.name === 'items')!.type as { items: object }).items), namespace: SCHEMA.namespace })
    const item = (k: number) => itemType.toBuffer(e.items[k])
    const zig = (n: number) => avroType('"long"').toBuffer(n)
    const before = frame(ID, avroType({ type: 'record', name: 'Head', fields: SCHEMA.fields.slice(0, 11) }), e)
    const after = avroType('"long"').toBuffer(e.placed_at)
    const two = Buffer.concat([item(0), item(1)])
    const blocked = Buffer.concat([before, zig(-2), zig(two.length), two, zig(1), item(2), zig(0), after])
    expect(plain.length).toBeLessThan(blocked.length)
    expect(check(type, transcoder, blocked)).toBe(true)
    expect(fastWay(transcoder, blocked, NOW)!.row).toEqual(fastWay(transcoder, plain, NOW)!.row)
  })

  it("follows a writer schema's own field order, union order and enum symbols", () => {
    const fields = [...SCHEMA.fields].reverse().map((f) =>
      f.name === 'refunded_amount' ? { ...f, type: [...(f.type as unknown[])].reverse(), default: undefined } : f.name === 'event_type' ? { ...f, type: { ...(f.type as object), symbols: ['exchanged', 'credit_note', 'refunded', 'cancelled', 'status_changed', 'placed'] } } : f,
    )
    const other = avroType({ ...SCHEMA, fields })
    const t = orderRowTranscoder(other, EXPECTED, ORDER_EVENT_COLUMN_TYPES)
    expect(t).not.toBeNull()
    for (const e of [order(5, 1, 1), order(5, 1, 2, { event_type: 'refunded', status: 'refunded', total: '0.00', refunded_amount: '100.50' })]) {
      const framed = frame(ID, other, e)
      expect(check(other, t!, framed)).toBe(true)
      // The same row as from the contract's schema.
      expect(fastWay(t!, framed, NOW)!.row).toEqual(fastWay(transcoder, frame(ID, type, e), NOW)!.row)
    }
    // A symbol the rules do not know is left (the general way says why).
    expect(check(other, t!, frame(ID, other, order(5, 1, 3, { event_type: 'exchanged' as never })))).toBe(false)
  })

  it('is not made for other shapes: the general way reads those', () => {
    const withField = (f: object) => avroType({ ...SCHEMA, fields: [...SCHEMA.fields, f] })
    const retyped = (name: string, t: unknown) => avroType({ ...SCHEMA, fields: SCHEMA.fields.map((f) => (f.name === name ? { ...f, type: t } : f)) })
    expect(orderRowTranscoder(withField({ name: 'channel', type: ['null', 'string'], default: null }), EXPECTED, ORDER_EVENT_COLUMN_TYPES)).toBeNull()
    expect(orderRowTranscoder(avroType({ ...SCHEMA, fields: SCHEMA.fields.filter((f) => f.name !== 'refunded_amount') }), EXPECTED, ORDER_EVENT_COLUMN_TYPES)).toBeNull()
    expect(orderRowTranscoder(retyped('total', { type: 'bytes', logicalType: 'decimal', precision: 15, scale: 3 }), EXPECTED, ORDER_EVENT_COLUMN_TYPES)).toBeNull()
    expect(orderRowTranscoder(retyped('total', 'string'), EXPECTED, ORDER_EVENT_COLUMN_TYPES)).toBeNull()
    expect(orderRowTranscoder(retyped('event_type', 'string'), EXPECTED, ORDER_EVENT_COLUMN_TYPES)).toBeNull()
    expect(orderRowTranscoder(type, 'cdp.orders.v2.OrderEvent', ORDER_EVENT_COLUMN_TYPES)).toBeNull()
    const wider = ORDER_EVENT_COLUMN_TYPES.map((c, k) => (k === 6 ? 'Decimal(18, 4)' : c))
    expect(orderRowTranscoder(type, EXPECTED, wider)).toBeNull()
    expect(orderRowTranscoder(type, EXPECTED, ORDER_EVENT_COLUMN_TYPES.slice(0, 12))).toBeNull()
    // An int where the contract has a long is read alike.
    expect(orderRowTranscoder(retyped('customer_id', 'int'), EXPECTED, ORDER_EVENT_COLUMN_TYPES)).not.toBeNull()
  })

  it('reads longs exactly as far as avsc reads them', () => {
    const e = order(5, 7, 1)
    const head = frame(ID, avroType({ type: 'record', name: 'Head', fields: SCHEMA.fields.slice(0, 1) }), e)
    const rest = avroType({ type: 'record', name: 'Rest', namespace: SCHEMA.namespace, fields: SCHEMA.fields.slice(2) }).toBuffer(e)
    // A tenant id as a zig-zag varint, written here (avsc writes none beyond its limit).
    const varint = (v: bigint) => {
      let z = v >= 0n ? v * 2n : -v * 2n - 1n
      const out: number[] = []
      while (z >= 0x80n) {
        out.push(Number(z & 0x7fn) | 0x80)
        z >>= 7n
      }
      out.push(Number(z))
      return Buffer.from(out)
    }
    const withTenant = (v: bigint) => Buffer.concat([head, varint(v), rest])
    const limit = 2n ** 53n - 2n
    expect(check(type, transcoder, withTenant(5n))).toBe(true)
    expect(check(type, transcoder, withTenant(limit))).toBe(true)
    expect(fastWay(transcoder, withTenant(limit), NOW)!.tenant).toBe(Number(limit))
    for (const v of [limit + 1n, 2n ** 53n, 2n ** 60n, -1n, -limit - 1n]) expect(check(type, transcoder, withTenant(v))).toBe(false)
  })

  it('checks the future against the time it is given', () => {
    const framed = frame(ID, type, order(5, 1, 1, { occurred_at: NOW, placed_at: NOW }))
    expect(check(type, transcoder, framed, NOW)).toBe(true)
    expect(check(type, transcoder, framed, NOW - 6 * 60_000)).toBe(false)
  })
})
