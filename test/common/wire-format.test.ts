import avsc from 'avsc'
import fs from 'node:fs'
import { describe, expect, it, vi } from 'vitest'
import { avroType, frame, FramedValues, readPayload, UndecodableRecordError } from '../../common/eventlog/wire-format.ts'
import { NO_ROOM, recordWriterOf } from '../../common/eventlog/record-writer.ts'
import { AVRO_LOGICAL_TYPES, DecimalType } from '../../common/eventlog/decimal-logical-type.ts'
import { customer, order } from '../thread-events.ts'

/** A zig-zag varint, as Avro writes an int or a long. */
function varint(v: number): Buffer {
  let z = v >= 0 ? v * 2 : -v * 2 - 1
  const out: number[] = []
  while (z >= 0x80) {
    out.push((z % 128) | 0x80)
    z = Math.floor(z / 128)
  }
  out.push(z)
  return Buffer.from(out)
}

const header = (id: number) => Buffer.from([0, 0, 0, 0, id])

describe('readPayload: arrays and maps read within their bytes', () => {
  const prices = avroType({ type: 'record', name: 'Prices', fields: [{ name: 'p', type: { type: 'array', items: { type: 'bytes', logicalType: 'decimal', precision: 15, scale: 2 } } }] })
  const tags = avroType({ type: 'record', name: 'Tags', fields: [{ name: 't', type: { type: 'map', values: 'string' } }] })
  const nulls = avroType({ type: 'record', name: 'Nulls', fields: [{ name: 'n', type: { type: 'array', items: 'null' } }] })

  it('refuses a block that claims more items than its bytes can hold, without reading them', () => {
    // One million decimals claimed, three bytes left: avsc alone read a million (10^8 ran the process out of memory).
    const reads = vi.spyOn(DecimalType.prototype, '_read')
    const claimed = Buffer.concat([header(1), varint(1_000_000), Buffer.from([2, 1, 0])])
    expect(() => readPayload(prices, 1, claimed)).toThrow(UndecodableRecordError)
    // In a block with its size (a negative count) too, and inside a larger buffer: ten items would fit the
    // buffer's bytes but not the record's, whose own end bounds it.
    const sized = Buffer.concat([header(1), varint(-10), varint(3), Buffer.from([2, 1, 0]), Buffer.alloc(64)])
    expect(() => readPayload(prices, 1, sized, 0, sized.length - 64)).toThrow(UndecodableRecordError)
    expect(reads).not.toHaveBeenCalled()
    // A map's entries take at least their key's length each.
    expect(() => readPayload(tags, 1, Buffer.concat([header(1), varint(500_000), Buffer.from([2, 0x61, 2, 0x62, 0])]))).toThrow(UndecodableRecordError)
    reads.mockRestore()
  })

  it('reads arrays and maps as avsc does, in one block or several', () => {
    for (const p of [[], ['1.00'], ['0.01', '-2.50', '99999.99']]) expect(readPayload(prices, 1, frame(1, prices, { p }))).toEqual({ p })
    const value = { t: { a: 'x', b: '', ñ: 'ü' } }
    expect(readPayload(tags, 1, frame(1, tags, value))).toEqual(value)
    // Two blocks, the first with its size: 2 items, then 1.
    const item = (s: string) => Buffer.concat([varint(1), Buffer.from([Math.round(Number(s) * 100)])])
    const two = Buffer.concat([item('0.01'), item('0.02')])
    const blocks = Buffer.concat([header(1), varint(-2), varint(two.length), two, varint(1), item('0.03'), varint(0)])
    expect(readPayload(prices, 1, blocks)).toEqual({ p: ['0.01', '0.02', '0.03'] })
    // Items that take no byte are read as avsc reads them, up to a million in an array.
    expect(readPayload(nulls, 1, Buffer.concat([header(1), varint(3), varint(0)]))).toEqual({ n: [null, null, null] })
    expect(() => readPayload(nulls, 1, Buffer.concat([header(1), varint(600_000), varint(600_000), varint(0)]))).toThrow(UndecodableRecordError)
    const nested = avroType({ type: 'record', name: 'Nested', fields: [{ name: 'n', type: { type: 'array', items: { type: 'array', items: 'null' } } }] })
    expect(() => readPayload(nested, 1, Buffer.concat([header(1), varint(1), varint(2_000_000), varint(0), varint(0)]))).toThrow(UndecodableRecordError)
  })

  it('finds the least size of nested records once a type, not once a path', () => {
    // Each record holds the one before twice: 2^40 paths, 41 types.
    let t: object = { type: 'record', name: 'L0', fields: [{ name: 'x', type: 'long' }] }
    for (let k = 1; k <= 40; k++) t = { type: 'record', name: `L${k}`, fields: [{ name: 'a', type: t }, { name: 'b', type: `L${k - 1}` }] }
    const deep = avroType({ type: 'record', name: 'Deep', fields: [{ name: 'items', type: { type: 'array', items: t } }] })
    // An empty array is read at once; a claimed item the bytes cannot hold (2^40 longs) is refused.
    expect(readPayload(deep, 1, Buffer.concat([header(1), varint(0)]))).toEqual({ items: [] })
    expect(() => readPayload(deep, 1, Buffer.concat([header(1), varint(1), Buffer.alloc(100, 2), varint(0)]))).toThrow(UndecodableRecordError)
  })
})

describe('avroType: strings written directly', () => {
  const schema = { type: 'record', name: 'S', fields: [{ name: 's', type: 'string' }, { name: 'n', type: ['null', 'string'] }, { name: 'm', type: { type: 'map', values: { type: 'string' } } }] }
  const ours = avroType(schema)
  const avscs = avsc.Type.forSchema(schema as avsc.Schema, { logicalTypes: AVRO_LOGICAL_TYPES, wrapUnions: false } as never)

  it("writes avsc's bytes for every kind of string, short or long, ASCII or not", () => {
    const strings = ['', 'a', 'x'.repeat(62), 'y'.repeat(63), 'z'.repeat(64), 'w'.repeat(300), 'ñandú', 'a'.repeat(40) + 'é', '🧉 mate', '\u0000\u007f', 'e-' + '9'.repeat(34)]
    for (const s of strings) {
      const value = { s, n: s.length % 2 ? s : null, m: { [s]: s } }
      expect(ours.toBuffer(value)).toEqual(avscs.toBuffer(value))
      expect(readPayload(ours, 1, frame(1, ours, value))).toEqual(value)
    }
    // Refused alike.
    expect(() => ours.toBuffer({ s: 5, n: null, m: {} })).toThrow()
  })

  it("frames our events as avsc does, also when they outgrow the writer's buffer", () => {
    const orderSchema = JSON.parse(fs.readFileSync(new URL('../../schemas/avro/order-event.avsc', import.meta.url), 'utf8'))
    const customerSchema = JSON.parse(fs.readFileSync(new URL('../../schemas/avro/customer-upserted.avsc', import.meta.url), 'utf8'))
    for (const [s, value] of [[orderSchema, order(5, 7, 1)], [customerSchema, customer(5, 7)], [orderSchema, order(5, 7, 2, { items: Array.from({ length: 6000 }, (_, k) => ({ sku: `s${k}`, name: k % 3 ? null : 'Ñandú', quantity: 1, unit_price: '1.00' })), total: '6000.00' })]] as const) {
      const plain = avsc.Type.forSchema(s, { logicalTypes: AVRO_LOGICAL_TYPES, wrapUnions: false } as never)
      expect(frame(1, avroType(s), value)).toEqual(Buffer.concat([header(1), plain.toBuffer(value)]))
    }
  })
})

describe('record writers: plain fields written in place, the bytes avsc writes', () => {
  const plainOf = (schema: object) => avsc.Type.forSchema(schema as avsc.Schema, { logicalTypes: AVRO_LOGICAL_TYPES, wrapUnions: false } as never)
  /** avsc's own answer: the framed bytes, or the message of what it throws. */
  const avscFrame = (t: avsc.Type, v: unknown) => {
    try {
      return Buffer.concat([header(1), t.toBuffer(v)])
    } catch (e) {
      return (e as Error).message
    }
  }
  const oursFrame = (t: avsc.Type, v: unknown) => {
    try {
      return frame(1, t, v)
    } catch (e) {
      return (e as Error).message
    }
  }
  /** avsc's random value of `t` with its decimals within their precision (avsc's are any bytes). */
  const valid = (t: avsc.Type): unknown => {
    const fix = (t: avsc.Type & { fields?: { name: string; type: avsc.Type }[]; types?: avsc.Type[]; itemsType?: avsc.Type }, v: unknown): unknown => {
      if (t instanceof DecimalType) return '-1234.50'
      if (t.fields) return Object.fromEntries(t.fields.map((f) => [f.name, fix(f.type, (v as Record<string, unknown>)[f.name])]))
      if (t.itemsType) return (v as unknown[]).map((x) => fix(t.itemsType!, x))
      if (t.types && v !== null) return fix(t.types.find((b) => b.typeName !== 'null')!, v)
      return v
    }
    return fix(t, t.random())
  }
  const schemas = fs.readdirSync(new URL('../../schemas/avro/', import.meta.url)).map((f) => JSON.parse(fs.readFileSync(new URL(`../../schemas/avro/${f}`, import.meta.url), 'utf8')))

  // Values at every edge of a field's kind, valid or not: the writer answers avsc's bytes or avsc's error.
  const LONGS = [0, -0, 1, -1, 63, 64, -64, -65, 8191, 8192, 2 ** 28, -(2 ** 28), 2 ** 30 - 1, 2 ** 30, -(2 ** 30), -(2 ** 30) - 1, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, 2 ** 52 + 1, -(2 ** 52) - 1, 2 ** 53 - 2, -(2 ** 53 - 2), 2 ** 53 - 1, -(2 ** 53 - 1), 1_732_000_000_000]
  const NOT_LONGS = [2 ** 53, 1.5, NaN, Infinity, '5', true, {}, 5n]
  const DOUBLES = [0, -0, 1.5, -1e-300, 1e308, NaN, Infinity, -Infinity, 2 ** 53]
  const STRINGS = ['', 'a', 'Champions', 'x'.repeat(63), 'y'.repeat(64), 'w'.repeat(300), 'ñandú', 'José', '🧉 mate', '\ud800x', 'x\udc00', '\u0000\u007f\u0080']
  const edges = (t: avsc.Type & { typeName: string; types?: avsc.Type[] }): unknown[] => {
    switch (t.typeName) {
      case 'long':
        return [...LONGS, ...NOT_LONGS]
      case 'int':
        return [...LONGS.filter((x) => x === (x | 0)), 2 ** 31, -(2 ** 31) - 1, 1.5, '1', 5n, { valueOf: () => 5 }]
      case 'double':
        return [...DOUBLES, '1.0', null]
      case 'boolean':
        return [true, false, 0, 'true']
      case 'string':
        return [...STRINGS, 5, null]
      case 'union:unwrapped':
        return [null, undefined, ...t.types!.flatMap((b) => (b.typeName === 'null' ? [] : edges(b as never)))]
      default:
        return [undefined, null, valid(t)]
    }
  }

  // Our events, and a record of every kind of field the writer writes in place, nullable either way round.
  const kinds = ['long', 'int', 'double', 'boolean', 'string']
  const everyKind = {
    type: 'record',
    name: 'EveryKind',
    fields: kinds.flatMap((k) => [
      { name: `${k}_plain`, type: k },
      { name: `${k}_null_first`, type: ['null', k] },
      { name: `${k}_null_last`, type: [k, 'null'] },
    ]),
  }

  it("answers avsc's bytes, or avsc's error, for each field of our events at its edges", () => {
    let compared = 0
    for (const schema of [...schemas, everyKind]) {
      const ours = avroType(schema)
      const plain = plainOf(schema)
      const fields = (plain as unknown as { fields: { name: string; type: never }[] }).fields
      expect(recordWriterOf(ours), schema.name).not.toBeNull()
      for (let k = 0; k < 5; k++) {
        const base = valid(plain) as Record<string, unknown>
        expect(oursFrame(ours, base)).toEqual(avscFrame(plain, base))
        for (const f of fields) {
          for (const x of edges(f.type)) {
            const v = { ...base, [f.name]: x }
            expect(oursFrame(ours, v), `${schema.name}.${f.name} = ${String(x)}`).toEqual(avscFrame(plain, v))
            compared++
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(5_000)
  })

  it('takes a field left undefined as its default, and refuses one without a default as avsc does', () => {
    const schema = { type: 'record', name: 'D', fields: [{ name: 'n', type: ['null', 'long'], default: null }, { name: 'c', type: 'int', default: 7 }, { name: 's', type: 'string', default: 'Ñ' }, { name: 'r', type: 'long' }] }
    const ours = avroType(schema)
    const plain = plainOf(schema)
    for (const v of [{ r: 1 }, { n: 5, r: 2 }, { c: 1, s: 'x', r: 3 }, { n: 1 }, {}]) expect(oursFrame(ours, v)).toEqual(avscFrame(plain, v))
    expect(oursFrame(ours, { n: 1 })).toMatch(/invalid "long"/)
  })

  it('asks for more room, never writing past the buffer, and frames alike however small the buffer starts', () => {
    const schema = schemas.find((s) => s.name === 'CustomerFeatures')!
    const ours = avroType(schema)
    const write = recordWriterOf(ours)!
    const value = { ...(valid(plainOf(schema)) as object), rfm_score: '555', segment: 'ñ'.repeat(40), clv_tier: 'x'.repeat(500) }
    const full = ours.toBuffer(value)
    // Every size short of the record: NO_ROOM, never a RangeError.
    for (let size = 0; size < full.length; size++) expect(write(Buffer.alloc(size), 0, value), `size ${size}`).toBe(NO_ROOM)
    const exact = Buffer.alloc(full.length)
    expect(write(exact, 0, value)).toBe(full.length)
    expect(exact).toEqual(full)
    // A send's values through one buffer that starts at a byte and doubles.
    const values = new FramedValues(1)
    const all = Array.from({ length: 40 }, (_, k) => ({ ...value, customer_id: k, clv_tier: 'z'.repeat(k * 13) }))
    for (const v of all) values.add(1, ours, v)
    all.forEach((v, k) => expect(values.value(k)).toEqual(Buffer.concat([header(1), ours.toBuffer(v)])))
  })
})
