import { describe, expect, it, vi } from 'vitest'
import { avroType, frame, readPayload, UndecodableRecordError } from '../../common/eventlog/wire-format.ts'
import { DecimalType } from '../../common/eventlog/decimal-logical-type.ts'

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
    // In a block with its size (a negative count) too, and inside a larger buffer (the record's own end bounds it).
    const sized = Buffer.concat([header(1), varint(-1_000_000), varint(3), Buffer.from([2, 1, 0]), Buffer.alloc(64)])
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
    // Items that take no byte keep avsc's reading.
    expect(readPayload(nulls, 1, Buffer.concat([header(1), varint(3), varint(0)]))).toEqual({ n: [null, null, null] })
  })
})
