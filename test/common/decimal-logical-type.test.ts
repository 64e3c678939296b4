import { describe, expect, it } from 'vitest'
import avsc from 'avsc'
import { DecimalType } from '../../common/eventlog/decimal-logical-type.ts'

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
})
