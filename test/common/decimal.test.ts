import { describe, expect, it } from 'vitest'
import { addDecimals, centsText, DecimalError, fromCents, normaliseDecimal, toCents, unitsWithin } from '../../common/decimal.ts'

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (err) {
    return err instanceof DecimalError ? err.code : `not a DecimalError: ${String(err)}`
  }
  return undefined
}

describe('normaliseDecimal', () => {
  it.each([
    [12.5, '12.50'],
    ['12.5', '12.50'],
    ['12', '12.00'],
    [0, '0.00'],
    [-0, '0.00'],
    ['-0.00', '0.00'],
    ['  7.10 ', '7.10'],
    ['+3.1', '3.10'],
    ['.5', '0.50'],
    ['5.', '5.00'],
    ['0012.50', '12.50'],
    ['12.500', '12.50'],
    ['12.5000000', '12.50'],
    [-1.25, '-1.25'],
    ['-0.05', '-0.05'],
    ['9999999999999.99', '9999999999999.99'],
  ] as const)('%j -> %s', (input, expected) => {
    expect(normaliseDecimal(input)).toBe(expected)
  })

  it('supports other scales', () => {
    expect(normaliseDecimal('1.5', 3)).toBe('1.500')
    expect(normaliseDecimal('42', 0)).toBe('42')
    expect(normaliseDecimal(1.2345, 4)).toBe('1.2345')
  })

  it.each([
    ['12.345', 'too_many_decimals'],
    [12.345, 'too_many_decimals'],
    [0.1 + 0.2, 'too_many_decimals'], // 0.30000000000000004: binary float noise is not rounded away
    [1e-7, 'too_many_decimals'],
    ['10000000000000', 'too_many_digits'], // 14 integer digits
    ['-10000000000000.00', 'too_many_digits'],
    [1e21, 'too_many_digits'],
    [Number.NaN, 'not_finite'],
    [Number.POSITIVE_INFINITY, 'not_finite'],
    ['NaN', 'not_finite'],
    ['-Infinity', 'not_finite'],
    ['', 'invalid_decimal'],
    ['.', 'invalid_decimal'],
    ['-', 'invalid_decimal'],
    ['1,234.56', 'invalid_decimal'],
    ['1.234,56', 'invalid_decimal'],
    ['1e3', 'invalid_decimal'],
    ['12 50', 'invalid_decimal'],
    ['$12', 'invalid_decimal'],
    ['0x10', 'invalid_decimal'],
  ] as const)('%j is rejected with %s', (input, code) => {
    expect(codeOf(() => normaliseDecimal(input))).toBe(code)
  })

  it('rejects non-string non-number input', () => {
    expect(codeOf(() => normaliseDecimal(null as unknown as string))).toBe('invalid_decimal')
  })
})

describe('cents', () => {
  it('converts both ways exactly', () => {
    expect(toCents('12.50')).toBe(1250n)
    expect(toCents('12.5')).toBe(1250n)
    expect(toCents('-0.05')).toBe(-5n)
    expect(toCents('0')).toBe(0n)
    expect(toCents('99999999999999999.99')).toBe(9999999999999999999n) // beyond float precision
    // The canonical text's fast path agrees with the general parser on its edges.
    expect(toCents('9999999999999.99')).toBe(999999999999999n)
    expect(toCents('-9999999999999.99')).toBe(-999999999999999n)
    expect(toCents('99999999999999.99')).toBe(9999999999999999n)
    expect(toCents('007.50')).toBe(750n)
    expect(toCents(' 7.50')).toBe(750n)
    expect(toCents('+7.50')).toBe(750n)
    expect(toCents('.50')).toBe(50n)
    expect(toCents('-0.00')).toBe(0n)
    expect(codeOf(() => toCents('7.5x'))).toBe('invalid_decimal')
    expect(codeOf(() => toCents('1-2.50'))).toBe('invalid_decimal')
    expect(fromCents(1250n)).toBe('12.50')
    expect(fromCents(5n)).toBe('0.05')
    expect(fromCents(-5n)).toBe('-0.05')
    expect(fromCents(-1250n)).toBe('-12.50')
    expect(fromCents(0n)).toBe('0.00')
    expect(fromCents(9999999999999999999n)).toBe('99999999999999999.99')
  })

  it('rejects sub-cent amounts', () => {
    expect(codeOf(() => toCents('0.001'))).toBe('too_many_decimals')
  })

  it('adds without float drift', () => {
    expect(addDecimals('0.10', '0.20')).toBe('0.30')
    expect(codeOf(() => addDecimals('1.005', '0'))).toBe('too_many_decimals')
    expect(addDecimals('-5.25', '2')).toBe('-3.25')
    expect(addDecimals('9999999999999.99', '0.01')).toBe('10000000000000.00')
    let sum = '0'
    for (let i = 0; i < 1000; i++) sum = addDecimals(sum, '0.10')
    expect(sum).toBe('100.00')
  })
})

describe('centsText', () => {
  it('is fromCents of the rounded cents, for any number of cents', () => {
    const values = [0, -0, 1, -1, 9, 10, 99, 100, 101, -5, -100, -123_456, 12.5, -12.5, 0.49, 999_999_999_999_999, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53 + 2, 1e20]
    let seed = 3
    const random = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32
    for (let i = 0; i < 10_000; i++) values.push(Math.round((random() - 0.5) * 10 ** Math.floor(random() * 16)))
    for (const c of values) expect(centsText(c), String(c)).toBe(fromCents(BigInt(Math.round(c))))
  })
})

describe('normaliseDecimal on canonical text', () => {
  it('gives canonical text back as it is, and everything else as the full parse does', () => {
    const cases: [string, number, number, string][] = [
      ['12.50', 2, 15, '12.50'], ['0.00', 2, 15, '0.00'], ['-0.00', 2, 15, '0.00'], ['-0.000', 3, 15, '0.000'], ['-0', 0, 15, '0'],
      ['-1.05', 2, 15, '-1.05'], ['00.10', 2, 15, '0.10'], ['1234567890123.45', 2, 15, '1234567890123.45'], ['+1.00', 2, 15, '1.00'], ['7', 0, 15, '7'],
    ]
    for (const [v, scale, precision, want] of cases) expect(normaliseDecimal(v, scale, precision), v).toBe(want)
    expect(codeOf(() => normaliseDecimal('12345678901234.56'))).toBe('too_many_digits')
    expect(codeOf(() => normaliseDecimal('123.45', 2, 4))).toBe('too_many_digits')
  })
})

describe('unitsWithin', () => {
  it('takes what normaliseDecimal takes at that precision, as units, and nothing past it', () => {
    expect(unitsWithin('9999999999999.99', 2, 15)).toBe(999_999_999_999_999)
    expect(unitsWithin('-9999999999999.99', 2, 15)).toBe(-999_999_999_999_999)
    expect(unitsWithin('10000000000000.00', 2, 15)).toBeNull()
    expect(() => normaliseDecimal('10000000000000.00')).toThrow(DecimalError)
    expect(unitsWithin('999.99', 2, 5)).toBe(99_999)
    expect(unitsWithin('1000.00', 2, 5)).toBeNull()
    expect(Object.is(unitsWithin('-0.00', 2, 15), 0)).toBe(true)
    expect(unitsWithin('90071992547409.91', 2, 38)).toBe(2 ** 53 - 1)
    expect(unitsWithin('90071992547409.92', 2, 38)).toBeNull() // 2^53 units: not a safe integer
    expect(unitsWithin('12.345', 2, 15)).toBeNull()
  })
})
