import { isUtf8 } from 'node:buffer'
import type avsc from 'avsc'
import type { ByteWriter } from './store/row-binary.ts'

/**
 * Reading one Avro record straight from its bytes, for the decode threads' fast paths
 * (order-event-reader.ts, customer-event-reader.ts): a cursor over the record framed in
 * buf[start, end), which never reads past `end` and answers NaN or false where avsc's own reading
 * would fail or differ, so that its caller leaves the record to the general way.
 */

type Field = { name: string; type: avsc.Type }
export type Typed = avsc.Type & { fields?: Field[]; symbols?: string[]; types?: avsc.Type[]; itemsType?: avsc.Type; scale?: number; underlyingType?: avsc.Type; name?: string }

export const isLong = (t: Typed) => t.typeName === 'long' || t.typeName === 'int'
export const isString = (t: Typed) => t.typeName === 'string'
export const isCents = (t: Typed) => t.typeName === 'logical:decimal' && t.scale === 2 && t.underlyingType?.typeName === 'bytes'

/** The index of the null branch of a two-branch union whose other branch passes `other`, or -1. */
export function nullableIndex(t: Typed, other: (t: Typed) => boolean): number {
  const types = (t.typeName === 'union:unwrapped' ? t.types : undefined) as Typed[] | undefined
  if (!types || types.length !== 2) return -1
  const k = types.findIndex((b) => b.typeName === 'null')
  return k >= 0 && other(types[1 - k]!) ? k : -1
}

/** A record's fields as plan codes (by name among `names`, each once), or null. */
export function planOf(t: Typed, names: readonly string[], accepts: (code: number, t: Typed) => boolean): Uint8Array | null {
  const fields = t.typeName === 'record' ? t.fields : undefined
  if (!fields || fields.length !== names.length) return null
  const codes = fields.map((f) => names.indexOf(f.name))
  if (new Set(codes).size !== names.length || codes.some((c, k) => c < 0 || !accepts(c, fields[k]!.type as Typed))) return null
  return Uint8Array.from(codes)
}

/** The largest long avsc reads (its isSafeLong). */
const AVSC_MAX_LONG = 2 ** 53 - 2
/** Decimal(15, 2): the rules' precision (unitsWithin(…, 2, 15)). */
const MAX_UNITS = 1e15

export class AvroCursor {
  /** The record read last: its bytes, the read position, its end. */
  b: Uint8Array = new Uint8Array(0)
  protected p = 0
  protected end = 0
  /** The last text read (readText()). */
  protected textStart = 0
  protected textLen = 0

  /** Starts on the record framed in buf[start, end) (Confluent header included); false when it has no header. */
  protected begin(buf: Uint8Array, start: number, end: number): boolean {
    if (end - start < 5 || buf[start] !== 0) return false
    this.b = buf
    this.p = start + 5
    this.end = end
    return true
  }

  /** The text of b[s, s + n) as avsc reads it (invalid UTF-8 replaced as it replaces it). */
  textAt(s: number, n: number): string {
    const b = this.b
    let i = s
    while (i < s + n && b[i]! < 0x80) i++
    const buf = b instanceof Buffer ? b : Buffer.from(b.buffer, b.byteOffset, b.length)
    return buf.toString(i === s + n ? 'latin1' : 'utf8', s, s + n)
  }

  /**
   * A string within the record, its start and length kept as the last text's. `required`: it starts
   * with a printable ASCII character (the rules' own quick non-blank test). `utf8`: its bytes are
   * valid UTF-8 (avsc would replace a broken sequence).
   */
  protected readText(required: boolean, utf8: boolean): boolean {
    const n = this.long()
    const s = this.p
    if (!(n >= 0 && s + n <= this.end)) return false
    const b = this.b
    if (required && !(n > 0 && b[s]! > 32 && b[s]! < 127)) return false
    if (utf8) {
      let i = s
      while (i < s + n && b[i]! < 0x80) i++
      if (i < s + n && !isUtf8(b.subarray(s, s + n))) return false
    }
    this.textStart = s
    this.textLen = n
    this.p = s + n
    return true
  }

  /**
   * The item count of an array's next block (0: the array ends), its size in bytes skipped when
   * written (a negative count); NaN when the count or size cannot be read.
   */
  protected blockCount(): number {
    const n = this.long()
    if (!Number.isSafeInteger(n)) return NaN
    if (n >= 0) return n
    return Number.isNaN(this.long()) ? NaN : -n
  }

  /** A decimal of scale 2 as its cents, within 15 digits and six bytes; NaN when not. */
  protected cents(): number {
    const n = this.long()
    const s = this.p
    if (!(n >= 0 && n <= 6 && s + n <= this.end)) return NaN
    this.p = s + n
    if (n === 0) return 0
    const b = this.b
    let v = (b[s]! << 24) >> 24
    for (let i = s + 1; i < s + n; i++) v = v * 256 + b[i]!
    return Math.abs(v) < MAX_UNITS ? v : NaN
  }

  /**
   * A zig-zag varint (Avro int or long) within the record; NaN beyond what avsc reads. Read as a
   * double: exact for every safe value (a positive one's zig-zag form is even, below 2^54).
   */
  protected long(): number {
    const b = this.b
    const first = this.p
    let p = first
    let n = 0
    let m = 1
    let x: number
    do {
      if (p >= this.end || m > 2 ** 56) return NaN
      x = b[p++]!
      n += (x & 0x7f) * m
      m *= 128
    } while (x & 0x80)
    this.p = p
    const odd = b[first]! & 1
    if (n >= 2 ** 54 || (odd && n > Number.MAX_SAFE_INTEGER)) return NaN
    const v = odd ? -(n + 1) / 2 : n / 2
    // avsc refuses a long beyond ±(2^53 - 2) ("potential precision loss"): so does this.
    return v >= -AVSC_MAX_LONG && v <= AVSC_MAX_LONG ? v : NaN
  }

  /** A RowBinary String to `w`: its length as a varint, then the record's bytes b[s, s + n). */
  bytes(w: ByteWriter, s: number, n: number): void {
    w.varint(n)
    w.ensure(n)
    const buf = w.buf
    const b = this.b
    if (n < 32) for (let i = 0; i < n; i++) buf[w.pos + i] = b[s + i]!
    else buf.set(b.subarray(s, s + n), w.pos)
    w.pos += n
  }
}
