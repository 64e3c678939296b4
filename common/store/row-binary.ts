import { scaledUnits } from '../decimal.ts'
import type { BufferPool } from '../buffer-pool.ts'

const EMPTY = Buffer.alloc(0)

/**
 * ClickHouse's RowBinary format, written from JS values: each row's values one after another in
 * the columns' order, numbers as little-endian bytes, strings and arrays behind their length as a
 * LEB128 varint (https://clickhouse.com/docs/interfaces/formats/RowBinary). chdb reads it without
 * parsing text: no number is printed here and none is parsed there, where JSON spent most of an
 * insert's time on both sides (docs/analytics-performance.md, "Ingest").
 *
 * Pure: a column's ClickHouse type gives its encoder. Values are what the JSON writers send: numbers,
 * strings, decimals as strings, times as ISO strings or as numbers (the column's ticks, as JSON reads them), arrays, tuples as
 * objects or arrays. A type this file does not know, or a value it cannot encode exactly as
 * ClickHouse would parse its JSON, throws RowBinaryUnsupported: the caller sends that insert as
 * JSON instead, so the stored rows are the same either way.
 */

export class RowBinaryUnsupported extends Error {
  override name = 'RowBinaryUnsupported'
}

/** A growing byte buffer. Short ASCII strings and numbers are written here byte by byte: a call into Buffer's native methods per value cost more than the value. */
export class ByteWriter {
  buf: Buffer
  view: DataView
  pos = 0

  /**
   * @param pool where a writer whose bytes are dropped whole (release) takes its buffers and gives
   *   them back as it grows: then no view of `buf` may be kept, as `bytes()` makes one.
   */
  constructor(
    size = 1 << 16,
    private readonly pool: BufferPool | null = null,
  ) {
    this.buf = pool ? pool.take(size) : Buffer.allocUnsafe(size)
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length)
  }

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    let size = Math.max(this.buf.length * 2, 64)
    while (size < this.pos + n) size *= 2
    const next = this.pool ? this.pool.take(size) : Buffer.allocUnsafe(size)
    this.buf.copy(next, 0, 0, this.pos)
    this.pool?.give(this.buf)
    this.buf = next
    this.view = new DataView(next.buffer, next.byteOffset, next.length)
  }

  /** A pooled writer's buffer back to its pool, once nothing reads its bytes; the writer is empty and takes a new one as it is written again. */
  release(): void {
    if (!this.pool || !this.buf.length) return
    this.pool.give(this.buf)
    this.buf = EMPTY
    this.view = new DataView(EMPTY.buffer, EMPTY.byteOffset, 0)
    this.pos = 0
  }

  u8(v: number): void {
    this.ensure(1)
    this.buf[this.pos++] = v
  }

  varint(v: number): void {
    this.ensure(10)
    while (v >= 0x80) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80
      v = Math.floor(v / 128)
    }
    this.buf[this.pos++] = v
  }

  string(s: string): void {
    const len = s.length
    if (len < 128) {
      // One length byte, then the characters while they are ASCII (one byte each in UTF-8).
      this.ensure(len + 1)
      const buf = this.buf
      const start = this.pos
      let i = 0
      for (; i < len; i++) {
        const ch = s.charCodeAt(i)
        if (ch >= 0x80) break
        buf[start + 1 + i] = ch
      }
      if (i === len) {
        buf[start] = len
        this.pos = start + 1 + len
        return
      }
    }
    const n = Buffer.byteLength(s, 'utf8')
    this.varint(n)
    this.ensure(n)
    this.pos += this.buf.write(s, this.pos, n, 'utf8')
  }

  f64(v: number): void {
    this.ensure(8)
    this.view.setFloat64(this.pos, v, true)
    this.pos += 8
  }

  /** A signed or unsigned integer of 1, 2 or 4 bytes (already range-checked). */
  int(v: number, bytes: 1 | 2 | 4): void {
    this.ensure(4)
    const buf = this.buf
    const p = this.pos
    buf[p] = v & 0xff
    if (bytes > 1) buf[p + 1] = (v >>> 8) & 0xff
    if (bytes > 2) {
      buf[p + 2] = (v >>> 16) & 0xff
      buf[p + 3] = (v >>> 24) & 0xff
    }
    this.pos = p + bytes
  }

  /** A safe integer as 8 bytes, two's complement. */
  int64(v: number): void {
    this.ensure(8)
    const lo = v >>> 0
    const hi = Math.floor(v / 4294967296) | 0
    this.view.setUint32(this.pos, lo, true)
    this.view.setInt32(this.pos + 4, hi, true)
    this.pos += 8
  }

  bytes(): Buffer {
    return this.buf.subarray(0, this.pos)
  }
}

export type Encoder = (w: ByteWriter, v: unknown) => void

const unsupported = (what: string): never => {
  throw new RowBinaryUnsupported(what)
}

/** The encoder of a ClickHouse column type (as system.columns spells it); throws RowBinaryUnsupported for a type it does not know. */
export function encoderFor(type: string): Encoder {
  type = type.trim()
  const m = /^(\w+)(?:\((.*)\))?$/s.exec(type)
  if (!m) return unsupported(`type ${type}`)
  const [, name, args] = m as unknown as [string, string, string | undefined]
  switch (name) {
    case 'LowCardinality':
      return encoderFor(args!)
    case 'Nullable': {
      const inner = encoderFor(args!)
      return (w, v) => {
        if (v === null || v === undefined) return w.u8(1)
        w.u8(0)
        inner(w, v)
      }
    }
    case 'Array': {
      const inner = encoderFor(args!)
      return (w, v) => {
        if (!Array.isArray(v)) unsupported(`${type} value ${typeof v}`)
        const a = v as unknown[]
        w.varint(a.length)
        for (let i = 0; i < a.length; i++) inner(w, a[i])
      }
    }
    case 'Tuple':
      return tupleEncoder(type, splitArgs(args!))
    case 'String':
      return (w, v) => (typeof v === 'string' ? w.string(v) : unsupported(`String value ${typeof v}`))
    case 'UInt8':
    case 'Bool':
      return intEncoder(type, 1, false)
    case 'UInt16':
      return intEncoder(type, 2, false)
    case 'UInt32':
      return intEncoder(type, 4, false)
    case 'UInt64':
      return int64Encoder(type, false)
    case 'Int8':
      return intEncoder(type, 1, true)
    case 'Int16':
      return intEncoder(type, 2, true)
    case 'Int32':
      return intEncoder(type, 4, true)
    case 'Int64':
      return int64Encoder(type, true)
    case 'Float64':
      return (w, v) => {
        // JSON writes NaN and ±Infinity as null: left to it, so both paths store the same.
        if (typeof v !== 'number' || !Number.isFinite(v)) unsupported(`Float64 value ${String(v)}`)
        w.f64(v as number)
      }
    case 'Decimal': {
      const [p, s] = splitArgs(args ?? '').map(Number) as [number, number]
      if (!(p <= 18) || !(s >= 0 && s <= p)) return unsupported(`type ${type}`)
      return decimalEncoder(p <= 9 ? 4 : 8, s)
    }
    case 'DateTime64': {
      const [p, tz] = splitArgs(args ?? '')
      const precision = Number(p)
      // Only in UTC: a column without a zone reads JSON's times in the server's zone.
      if (!(precision >= 3 && precision <= 6) || tz !== "'UTC'") return unsupported(`type ${type}`)
      return dateTimeEncoder(10 ** (precision - 3))
    }
    case 'Date':
      return (w, v) => {
        const days = dayNumber(v)
        if (days < 0 || days > 0xffff) unsupported(`Date value ${String(v)}`)
        w.int(days, 2)
      }
    default:
      return unsupported(`type ${type}`)
  }
}

/** The comma-separated arguments of a type, split at the top level ("a String, b Tuple(x, y)" → two). */
export function splitArgs(args: string): string[] {
  const out: string[] = []
  let depth = 0
  let quoted = false
  let start = 0
  for (let i = 0; i < args.length; i++) {
    const ch = args[i]
    if (ch === "'" && args[i - 1] !== '\\') quoted = !quoted
    if (quoted) continue
    if (ch === '(') depth++
    else if (ch === ')') depth--
    else if (ch === ',' && depth === 0) {
      out.push(args.slice(start, i).trim())
      start = i + 1
    }
  }
  const last = args.slice(start).trim()
  if (last) out.push(last)
  return out
}

function tupleEncoder(type: string, elements: string[]): Encoder {
  // Named elements ("sku String") take an object's keys; a tuple given as an array goes by position.
  // "sku String" is named; "String", "Nullable(String)" or "Decimal(15, 2)" are not.
  const named = elements.map((el) => /^([A-Za-z_]\w*)\s+(\S.*)$/s.exec(el))
  const names = named.every((n) => n !== null) ? named.map((n) => n![1]!) : null
  const encoders = elements.map((el, i) => encoderFor(names ? named[i]![2]! : el))
  return (w, v) => {
    if (Array.isArray(v)) {
      if (v.length !== encoders.length) unsupported(`${type} value of ${v.length} elements`)
      for (let i = 0; i < encoders.length; i++) encoders[i]!(w, v[i])
      return
    }
    if (!names || typeof v !== 'object' || v === null) return unsupported(`${type} value ${typeof v}`)
    const o = v as Record<string, unknown>
    for (let i = 0; i < encoders.length; i++) encoders[i]!(w, o[names[i]!])
  }
}

function intEncoder(type: string, bytes: 1 | 2 | 4, signed: boolean): Encoder {
  const bits = bytes * 8
  const min = signed ? -(2 ** (bits - 1)) : 0
  const max = signed ? 2 ** (bits - 1) - 1 : 2 ** bits - 1
  return (w, v) => {
    const n = typeof v === 'boolean' && bytes === 1 ? Number(v) : v
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) unsupported(`${type} value ${String(v)}`)
    w.int(n as number, bytes)
  }
}

function int64Encoder(type: string, signed: boolean): Encoder {
  return (w, v) => {
    if (typeof v === 'number' && Number.isSafeInteger(v) && (signed || v >= 0)) return w.int64(v)
    w.ensure(8)
    let b: bigint
    if (typeof v === 'bigint') b = v
    else if (typeof v === 'string' && /^-?\d{1,20}$/.test(v)) b = BigInt(v)
    else return unsupported(`${type} value ${String(v)}`)
    if (signed ? b < -(2n ** 63n) || b >= 2n ** 63n : b < 0n || b >= 2n ** 64n) unsupported(`${type} value ${String(v)}`)
    w.pos = signed ? w.buf.writeBigInt64LE(b, w.pos) : w.buf.writeBigUInt64LE(b, w.pos)
  }
}

/** Decimal(P, S) as its scaled integer; a value with more decimals than S is not rounded here (JSON would be). */
function decimalEncoder(bytes: 4 | 8, scale: number): Encoder {
  const limit = 10 ** (bytes === 4 ? 9 : 18)
  return (w, v) => {
    const units = scaledUnits(v, scale)
    if (units === null || Math.abs(units) >= limit) return unsupported(`Decimal value ${String(v)}`)
    if (bytes === 4) w.int(units, 4)
    else w.int64(units)
  }
}

/**
 * DateTime64(P ≥ 3) in UTC as ticks: a time's epoch milliseconds × `perMs`. A number is taken as
 * ticks already, as ClickHouse reads a number in JSON (1500 is 1.5 s at P = 3, 1.5 ms at P = 6).
 */
function dateTimeEncoder(perMs: number): Encoder {
  return (w, v) => {
    const ticks = typeof v === 'number' ? (v >= 0 ? v : NaN) : typeof v === 'string' ? isoMs(v) * perMs : NaN
    if (!Number.isSafeInteger(ticks)) return unsupported(`DateTime64 value ${String(v)}`)
    w.int64(ticks)
  }
}

/**
 * Epoch milliseconds of "YYYY-MM-DDTHH:MM:SS(.f to .fff)(Z)" (or a space for the T; without a Z,
 * UTC, the columns' zone), else NaN: anything else, such as an offset, a date that does not exist
 * or more than millisecond digits, is left to ClickHouse's own parser (JSON). Read by character
 * codes: a regular expression and a Date took most of an insert's encoding time.
 */
export function isoMs(s: string): number {
  const n = s.length
  if (n < 19 || n > 24) return NaN
  const c10 = s.charCodeAt(10)
  if (s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || (c10 !== 84 && c10 !== 32) || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) return NaN
  const y = digits(s, 0, 4)
  const mo = digits(s, 5, 2)
  const d = digits(s, 8, 2)
  const h = digits(s, 11, 2)
  const mi = digits(s, 14, 2)
  const sec = digits(s, 17, 2)
  let ms = 0
  let i = 19
  if (i < n && s.charCodeAt(i) === 46) {
    let k = 0
    for (i++; i < n && k < 3; i++, k++) {
      const c = s.charCodeAt(i) - 48
      if (c < 0 || c > 9) break
      ms = ms * 10 + c
    }
    if (k === 0) return NaN
    for (; k < 3; k++) ms *= 10
  }
  if (i < n && s.charCodeAt(i) === 90) i++
  if (i !== n) return NaN
  // DateTime64's range (1900 to 2299): ClickHouse clamps what lies outside, JSON shows how.
  if (!(dateInRange(y, mo, d) && h <= 23 && mi <= 59 && sec <= 59)) return NaN
  return daysFromCivil(y, mo, d) * 86_400_000 + h * 3_600_000 + mi * 60_000 + sec * 1000 + ms
}

/** The decimal number of `len` digits at `at`, or NaN. */
function digits(s: string, at: number, len: number): number {
  let v = 0
  for (let i = at; i < at + len; i++) {
    const c = s.charCodeAt(i) - 48
    if (c < 0 || c > 9) return NaN
    v = v * 10 + c
  }
  return v
}

/** A calendar date in DateTime64's range (1900 to 2299): what `isoMs` and `dayNumber` accept (NaN parts are not). */
function dateInRange(y: number, mo: number, d: number): boolean {
  return y >= 1900 && y <= 2299 && mo >= 1 && mo <= 12 && d >= 1 && d <= daysInMonth(y, mo)
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
}

/**
 * Days since 1970-01-01 of a 'YYYY-MM-DD' text, read by character codes like `isoMs` (the dates
 * it accepts, 1900 to 2299). A regular expression and the text made a time for `isoMs` took a
 * quarter of a second over a million feature rows.
 */
function dayNumber(v: unknown): number {
  if (typeof v === 'string' && v.length === 10 && v.charCodeAt(4) === 45 && v.charCodeAt(7) === 45) {
    const y = digits(v, 0, 4)
    const mo = digits(v, 5, 2)
    const d = digits(v, 8, 2)
    if (dateInRange(y, mo, d)) return daysFromCivil(y, mo, d)
  }
  return unsupported(`Date value ${String(v)}`)
}

/** The encoders of these column types, or null when one of them has none (the caller sends JSON instead). */
export function encodersFor(types: readonly string[]): Encoder[] | null {
  try {
    return types.map(encoderFor)
  } catch (err) {
    if (err instanceof RowBinaryUnsupported) return null
    throw err
  }
}

/** One row (values in the encoders' order) written at the end of `w`; throws RowBinaryUnsupported part-way. */
function writeRow(w: ByteWriter, encoders: readonly Encoder[], row: readonly unknown[]): void {
  if (row.length !== encoders.length) unsupported(`a row of ${row.length} values for ${encoders.length} columns`)
  for (let i = 0; i < encoders.length; i++) encoders[i]!(w, row[i])
}

/** The rows (values in the encoders' order) as RowBinary. */
export function encodeRows(encoders: readonly Encoder[], rows: readonly (readonly unknown[])[]): Buffer {
  const w = new ByteWriter(Math.max(1 << 16, rows.length * encoders.length * 8))
  for (const row of rows) writeRow(w, encoders, row)
  return w.bytes()
}

/** encodeRows, or null when a row holds a value RowBinary does not take exactly (RowBinaryUnsupported): the caller sends those rows as values. */
export function encodeRowsOrNull(encoders: readonly Encoder[], rows: readonly (readonly unknown[])[]): Buffer | null {
  try {
    return encodeRows(encoders, rows)
  } catch (err) {
    if (err instanceof RowBinaryUnsupported) return null
    throw err
  }
}

/** The size of RowEncoder's slabs; a row that finds less than a 256th of one left starts another. */
const SLAB_BYTES = 1 << 20

/**
 * Rows encoded one at a time, as each is made, each one a view of a shared slab of bytes. A
 * consumer that holds rows until a later insert then holds their bytes, off V8's heap, instead of
 * the objects they were made from: those die young, where collecting them costs nothing, rather
 * than surviving into the old generation (docs/analytics-performance.md, "Ingest"). The views'
 * bytes are never written again: a slab that fills up is left to its rows and a new one begun.
 */
export class RowEncoder {
  private w: ByteWriter

  constructor(
    readonly encoders: readonly Encoder[],
    private readonly slabBytes = SLAB_BYTES,
  ) {
    this.w = new ByteWriter(slabBytes)
  }

  /** One row's bytes; throws RowBinaryUnsupported, having kept nothing of the row, as encodeRows would for it. */
  encode(values: readonly unknown[]): Uint8Array {
    let w = this.w
    if (w.buf.length - w.pos < this.slabBytes >> 8) w = this.w = new ByteWriter(this.slabBytes)
    const start = w.pos
    this.encodeInto(w, values)
    return w.buf.subarray(start, w.pos)
  }

  /** One row written at the end of `w` (a body of rows built elsewhere); throws RowBinaryUnsupported, having written nothing. */
  encodeInto(w: ByteWriter, values: readonly unknown[]): void {
    const start = w.pos
    try {
      writeRow(w, this.encoders, values)
    } catch (err) {
      w.pos = start
      throw err
    }
  }
}
