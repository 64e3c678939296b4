import { describe, expect, it } from 'vitest'
import avsc from 'avsc'
import { bigIntToBytes, DecimalType } from '../../common/eventlog/decimal-logical-type.ts'

describe('Avro decimal logical type', () => {
  const type = avsc.Type.forSchema({ type: 'bytes', logicalType: 'decimal', precision: 30, scale: 2 } as never, { logicalTypes: { decimal: DecimalType } } as never)

  it('decodes every unscaled value to its exact decimal text, on both sides of the six-byte fast path', () => {
    const units = [0n, 1n, -1n, 99n, -100n, 127n, 128n, -128n, -129n, 2n ** 47n - 1n, -(2n ** 47n), 2n ** 47n, -(2n ** 47n) - 1n, 10n ** 20n + 5n, -(10n ** 25n)]
    let seed = 5
    const random = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32
    for (let i = 0; i < 5000; i++) units.push(BigInt(Math.round((random() - 0.5) * 2 ** Math.floor(random() * 52))))
    for (const u of units) {
      const neg = u < 0n
      const digits = (neg ? -u : u).toString().padStart(3, '0')
      const text = `${neg ? '-' : ''}${digits.slice(0, -2)}.${digits.slice(-2)}`
      expect(type.fromBuffer(type.toBuffer(text)), text).toBe(text)
    }
  })

  it('refuses bytes cut short or a negative length (the value is read where it lies, not copied)', () => {
    for (const text of ['1234.50', '-0.01', '123456789012345678.90']) {
      const buf = type.toBuffer(text)
      expect(() => type.fromBuffer(buf.subarray(0, buf.length - 1)), text).toThrow()
    }
    expect(() => type.fromBuffer(Buffer.from([0x01]))).toThrow() // zig-zag -1
  })

  /** The Avro bytes of a decimal text by the spec's definition: the unscaled integer's minimal two's complement, length-prefixed. */
  function specBytes(text: string, scale: number): Buffer {
    const m = /^\s*(-?)(\d+)(?:\.(\d+))?\s*$/.exec(text)!
    const units = BigInt(m[2]! + (m[3] ?? '').padEnd(scale, '0').slice(0, scale)) * (m[1] ? -1n : 1n)
    const bytes = bigIntToBytes(units)
    return Buffer.concat([avsc.Type.forSchema('long').toBuffer(bytes.length), bytes])
  }

  it('writes the same bytes on the digit-by-digit path as the spec computes with a bigint, across its limits', () => {
    const texts = ['0', '0.00', '-0.00', '-0', '5', '5.5', '5.50', '5.500', '-12.3', '007.10', ' 12.50 ', '99999999999999.99', '999999999999999.99', '-140737488355.28', '140737488355.27', '140737488355.28', '-140737488355.29', '1234567890123.4500']
    let seed = 11
    const random = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32
    for (let i = 0; i < 5000; i++) {
      const int = String(Math.floor(random() * 10 ** Math.floor(random() * 17)))
      const frac = ['', '.' + String(Math.floor(random() * 10)), '.' + String(Math.floor(random() * 100)).padStart(2, '0'), '.' + String(Math.floor(random() * 100)).padStart(2, '0') + '0'][Math.floor(random() * 4)]
      texts.push((random() < 0.3 ? '-' : '') + int + frac)
    }
    for (const text of texts) expect(type.toBuffer(text).equals(specBytes(text, 2)), text).toBe(true)
  })

  it('refuses what is not a decimal of its precision and scale, with the reason, and never takes null in a union for a decimal', () => {
    const narrow = avsc.Type.forSchema({ type: 'bytes', logicalType: 'decimal', precision: 15, scale: 2 } as never, { logicalTypes: { decimal: DecimalType } } as never)
    expect(() => narrow.toBuffer('10000000000000.00')).toThrow(/exceeds precision 15/)
    expect(narrow.toBuffer('9999999999999.99').length).toBeGreaterThan(0)
    expect(() => narrow.toBuffer('1.005')).toThrow(/more than 2 decimals/)
    for (const bad of ['', '-', '.5', '5.', '+5', '1e3', '1,5', '12.3.4', 'abc']) expect(() => narrow.toBuffer(bad), bad).toThrow(/not a decimal/)
    for (const bad of [null, undefined, {}, [], true]) expect(narrow.isValid(bad), String(bad)).toBe(false)
    // Anything else is read by its text, as before: a bigint of units' worth, a boxed string.
    expect(narrow.fromBuffer(narrow.toBuffer(1250n))).toBe('1250.00')
    expect(narrow.fromBuffer(narrow.toBuffer(new String('12.50')))).toBe('12.50')
    const optional = avsc.Type.forSchema(['null', { type: 'bytes', logicalType: 'decimal', precision: 15, scale: 2 }] as never, { logicalTypes: { decimal: DecimalType }, wrapUnions: false } as never)
    expect(optional.toBuffer(null)).toEqual(Buffer.from([0]))
    expect(optional.fromBuffer(optional.toBuffer('12.50'))).toBe('12.50')
    expect(() => optional.toBuffer('12.501')).toThrow()
  })
})
