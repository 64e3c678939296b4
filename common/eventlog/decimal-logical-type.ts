import avsc from 'avsc'
import { formatScaled, unitsWithin } from '../decimal.ts'

/**
 * Avro `decimal` logical type over `bytes` for avsc: the value is a two's-complement big-endian
 * unscaled integer (Avro spec), exposed to our code as a decimal string with `scale` digits
 * ("1234.50"). Strings keep money exact; floats would drift in sums.
 */
export class DecimalType extends avsc.types.LogicalType {
  private readonly scale: number
  private readonly precision: number

  constructor(attrs: Record<string, unknown>, opts?: unknown) {
    super(attrs as never, opts as never)
    this.scale = Number(attrs.scale ?? 0)
    this.precision = Number(attrs.precision ?? 38)
  }

  protected override _fromValue(buf: Buffer): string {
    return this.textOf(buf, 0, buf.length)
  }

  /** The decimal text of the `len` bytes at `pos`. Up to six bytes (any amount below 1.4e14 units) the value fits a double exactly. */
  private textOf(buf: Buffer, pos: number, len: number): string {
    return formatScaled(len > 0 && len <= 6 ? buf.readIntBE(pos, len) : bytesToBigInt(buf.subarray(pos, pos + len)), this.scale)
  }

  /**
   * Reads the bytes where they lie in the record instead of through avsc's copy of them (its
   * bytes type copies every value into a pool first): the same value as _fromValue of that copy.
   * A length beyond the buffer leaves the tap invalid, as avsc's own read does; its decoder then
   * refuses the record.
   */
  _read(tap: { buf: Buffer; pos: number; readLong(): number; _invalidate(): void }): string | undefined {
    const len = tap.readLong()
    if (len < 0) {
      tap._invalidate()
      return undefined
    }
    const pos = tap.pos
    tap.pos += len
    if (tap.pos > tap.buf.length) return undefined
    return this.textOf(tap.buf, pos, len)
  }

  protected override _toValue(val: unknown): Buffer {
    return bigIntToBytes(BigInt(this.unscaledOrThrow(val)))
  }

  /**
   * avsc asks every logical branch of a union whether it takes a value before it looks at the
   * value's kind (`["null", decimal]` checks each null here), so this answers without throwing.
   */
  _check(val: unknown, _flags?: unknown, hook?: (val: unknown, type: avsc.Type) => void): boolean {
    const ok = unscaledOf(val, this.scale, this.precision) !== undefined
    if (!ok && hook) hook(val, this as unknown as avsc.Type)
    return ok
  }

  /**
   * Writes the unscaled integer's minimal two's-complement bytes straight into avsc's buffer: the
   * same bytes as `_toValue`, without a BigInt and a Buffer per value when it fits six bytes. On
   * overflow the tap is left past its end, as avsc's own writers do, and avsc retries larger.
   */
  _write(tap: { buf: Buffer; pos: number; writeLong(n: number): void; writeBytes(b: Buffer): void }, val: unknown): void {
    const units = this.unscaledOrThrow(val)
    const len = typeof units === 'number' ? minimalIntBytes(units) : 0
    if (len === 0) return tap.writeBytes(bigIntToBytes(BigInt(units)))
    tap.writeLong(len)
    const pos = tap.pos
    tap.pos += len
    if (tap.pos <= tap.buf.length) tap.buf.writeIntBE(units as number, pos, len)
  }

  private unscaledOrThrow(val: unknown): number | bigint {
    const units = unscaledOf(val, this.scale, this.precision)
    if (units !== undefined) return units
    parseToUnscaled(val, this.scale) // throws with the reason when the text is not a decimal
    throw new Error(`decimal ${String(val)} exceeds precision ${this.precision}`)
  }

  protected override _resolve(type: avsc.Type): ((x: unknown) => unknown) | undefined {
    const t = type as avsc.Type & { scale?: number }
    if (type instanceof DecimalType && type.scale === this.scale) return (x) => x
    if (type.typeName === 'bytes' && t.scale === undefined) return (x) => x
    return undefined
  }

  protected override _export(schema: avsc.Schema): void {
    const attrs = schema as unknown as Record<string, unknown>
    attrs.precision = this.precision
    attrs.scale = this.scale
  }
}

export const AVRO_LOGICAL_TYPES = { decimal: DecimalType } as unknown as Record<string, new (...args: never[]) => avsc.types.LogicalType>

export function bytesToBigInt(buf: Buffer): bigint {
  if (buf.length === 0) return 0n
  let n = 0n
  for (const b of buf) n = (n << 8n) | BigInt(b)
  if ((buf[0]! & 0x80) !== 0) n -= 1n << BigInt(buf.length * 8)
  return n
}

export function bigIntToBytes(n: bigint): Buffer {
  // Minimal two's-complement length.
  let len = 1
  while (n < -(1n << BigInt(len * 8 - 1)) || n >= 1n << BigInt(len * 8 - 1)) len++
  const out = Buffer.alloc(len)
  let v = n < 0n ? (1n << BigInt(len * 8)) + n : n
  for (let i = len - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn)
    v >>= 8n
  }
  return out
}


/**
 * The unscaled integer of `val` (a decimal string or a number) at `scale`, or undefined when it is
 * not a decimal of at most `precision` digits. Plain text that fits a safe integer is read by
 * character codes (unitsWithin); anything else goes through the regular expression and a bigint.
 */
export function unscaledOf(val: unknown, scale: number, precision: number): number | bigint | undefined {
  const fast = unitsWithin(val, scale, precision)
  if (fast !== null) return fast
  if (val === null || val === undefined) return undefined // the union's other branch, checked here first
  let units: bigint
  try {
    units = parseToUnscaled(val, scale)
  } catch {
    return undefined
  }
  return (units < 0n ? -units : units).toString().length > precision ? undefined : units
}

/** Bytes of the minimal two's-complement form of the integer `n` when it fits six, else 0. */
function minimalIntBytes(n: number): number {
  const m = n < 0 ? -n - 1 : n // the same byte count as n: ~n for negatives
  return m < 0x80 ? 1 : m < 0x8000 ? 2 : m < 0x800000 ? 3 : m < 0x80000000 ? 4 : m < 0x8000000000 ? 5 : m < 0x800000000000 ? 6 : 0
}

function parseToUnscaled(val: unknown, scale: number): bigint {
  const s = typeof val === 'number' ? val.toFixed(scale) : String(val).trim()
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(s)
  if (!m) throw new Error(`not a decimal: ${String(val)}`)
  const frac = (m[3] ?? '').padEnd(scale, '0')
  if (frac.length > scale && /[1-9]/.test(frac.slice(scale))) throw new Error(`decimal ${s} has more than ${scale} decimals`)
  const n = BigInt(m[2]! + frac.slice(0, scale))
  return m[1] ? -n : n
}
