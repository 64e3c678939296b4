import { createRequire } from 'node:module'
import type avsc from 'avsc'

/**
 * A record's Avro writer with the common field kinds written in place: longs, ints, doubles,
 * booleans, short ASCII strings and the null branch of a nullable union go straight into the
 * buffer; every other field (a non-ASCII or long string, a decimal, an array, a nested record, an
 * invalid value) is written by avsc's own `_write` for its type, through a tap of our own. So the
 * bytes are avsc's, and a value avsc refuses throws avsc's error.
 *
 * avsc's generated record writer calls a type's `_write` per field, a nullable field's union
 * looking up the branch by the value's kind; the feature consumer publishes a quarter of a million
 * such events a backlog of half a million records, and that dispatch was a tenth of its thread.
 */

/** What a writer answers when `buf` is too short: the caller grows it and writes again. */
export const NO_ROOM = -1

/** Writes `value` at buf[pos…]; answers its end, or NO_ROOM when buf is too short (what it wrote is then garbage). */
export type RecordWriter = (buf: Buffer, pos: number, value: unknown) => number

type Tap = { buf: Buffer; pos: number }
type Walked = avsc.Type & {
  fields?: { name: string; type: Walked; defaultValue(): unknown }[]
  types?: Walked[]
  _write(tap: Tap, v: unknown): void
}

// avsc does not export its Tap (its own buffer cursor, which every `_write` takes); its module does.
const { Tap } = createRequire(import.meta.url)('avsc/lib/utils') as { Tap: new (buf: Buffer, pos?: number) => Tap }

const writers = new WeakMap<avsc.Type, RecordWriter | null>()

/** The record writer of `t`, made once per type; null when `t` is not a record (avsc writes it). */
export function recordWriterOf(t: avsc.Type): RecordWriter | null {
  let w = writers.get(t)
  if (w === undefined) {
    w = (t as Walked).typeName === 'record' ? compile(t as Walked) : null
    writers.set(t, w)
  }
  return w
}

/** The fast kinds: how a plain value of the type is written in place. */
type Kind = 'long' | 'int' | 'double' | 'boolean' | 'string'
const KINDS: ReadonlySet<string> = new Set<Kind>(['long', 'int', 'double', 'boolean', 'string'])

function kindOf(t: Walked): Kind | null {
  // A logical type avsc knows (our decimal) is a LogicalType, typeName 'logical:…'; one it ignores (timestamp-millis) is its plain type.
  return KINDS.has(t.typeName) ? (t.typeName as Kind) : null
}

/** The statements writing `x` of kind `kind` at `p`, or calling the slow write `slow` when `x` is not a plain value of that kind. */
function inPlace(kind: Kind, slow: string): string {
  switch (kind) {
    case 'long':
      // avsc's bound (isSafeLong), one short of Number.MAX_SAFE_INTEGER.
      return `if (typeof x === 'number' && Math.floor(x) === x && x <= 9007199254740990 && x >= -9007199254740990) { if (p + 10 > n) return ${NO_ROOM}; p = long(buf, p, x) } else ${slow}`
    case 'int':
      // Kind first: in a union, avsc refuses a BigInt or an object by its kind, never converting it.
      return `if (typeof x === 'number' && x === (x | 0)) { if (p + 5 > n) return ${NO_ROOM}; p = long(buf, p, x) } else ${slow}`
    case 'double':
      return `if (typeof x === 'number') { if (p + 8 > n) return ${NO_ROOM}; p = double(buf, p, x) } else ${slow}`
    case 'boolean':
      return `if (typeof x === 'boolean') { if (p + 1 > n) return ${NO_ROOM}; buf[p++] = x ? 1 : 0 } else ${slow}`
    case 'string':
      return `q = typeof x === 'string' ? ascii(buf, p, n, x) : -1; if (q >= 0) p = q; else ${slow}`
  }
}

function compile(record: Walked): RecordWriter {
  const names: string[] = ['long', 'double', 'ascii', 'tap']
  const values: unknown[] = [long, double, shortAscii, new Tap(Buffer.alloc(0))]
  const body: string[] = []
  record.fields!.forEach((field, i) => {
    const t = field.type
    names.push(`t${i}`)
    values.push(t)
    // avsc's own write of the field, through our tap (checks the value, throws as avsc does).
    const slow = `{ tap.buf = buf; tap.pos = p; t${i}._write(tap, x); p = tap.pos; if (p > n) return ${NO_ROOM} }`
    let write = slow
    const kind = kindOf(t)
    if (kind) write = inPlace(kind, slow)
    else if (t.typeName === 'union:unwrapped') {
      const branches = t.types!
      const nullAt = branches.findIndex((b) => b.typeName === 'null')
      const other = branches.length === 2 && nullAt >= 0 ? kindOf(branches[1 - nullAt]!) : null
      // A union's index is a zig-zag varint: index k (0 or 1 here) is the byte 2k.
      if (other) write = `if (x === null) { if (p + 1 > n) return ${NO_ROOM}; buf[p++] = ${nullAt * 2} } else { if (p + 1 > n) return ${NO_ROOM}; buf[p++] = ${(1 - nullAt) * 2}; ${inPlace(other, `{ p--; ${slow} }`)} }`
    }
    let statement = `x = v.${field.name}; ${write}`
    // As avsc's writer: a field with a default takes its default's bytes when the value is undefined.
    if (field.defaultValue() !== undefined) {
      names.push(`d${i}`)
      values.push(t.toBuffer(field.defaultValue()))
      statement = `x = v.${field.name}; if (x === undefined) { if (p + d${i}.length > n) return ${NO_ROOM}; d${i}.copy(buf, p); p += d${i}.length } else { ${write} }`
    }
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(field.name)) throw new Error(`not an Avro field name: ${field.name}`)
    body.push(statement)
  })
  const source = `return function write(buf, p, v) {\n  const n = buf.length\n  let x, q\n  ${body.join('\n  ')}\n  return p\n}`
  return new Function(...names, source)(...values) as RecordWriter
}

/** A long's zig-zag varint at buf[p…] (room checked by the caller); its end. The same bytes as avsc's Tap.writeLong. */
function long(buf: Buffer, p: number, n: number): number {
  if (n >= -1073741824 && n < 1073741824) {
    let m = n >= 0 ? n << 1 : (~n << 1) | 1
    while (m > 0x7f) {
      buf[p++] = (m & 0x7f) | 0x80
      m >>>= 7
    }
    buf[p++] = m
    return p
  }
  // At least 2^31 once zig-zagged (times in ms are): its low 28 bits are four bytes with more to
  // come, the rest (below 2^27) an int's varint. Beyond 2^52 in size the zig-zag value rounds as
  // it does in avsc's Tap.writeLong: the same bytes.
  const z = n >= 0 ? n * 2 : -n * 2 - 1
  const lo = z % 268435456
  let hi = (z - lo) / 268435456
  buf[p] = (lo & 0x7f) | 0x80
  buf[p + 1] = ((lo >>> 7) & 0x7f) | 0x80
  buf[p + 2] = ((lo >>> 14) & 0x7f) | 0x80
  buf[p + 3] = ((lo >>> 21) & 0x7f) | 0x80
  p += 4
  while (hi > 0x7f) {
    buf[p++] = (hi & 0x7f) | 0x80
    hi >>>= 7
  }
  buf[p++] = hi
  return p
}

const f64 = new Float64Array(1)
const f64Bytes = new Uint8Array(f64.buffer)
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1

/** A double's 8 little-endian bytes at buf[p…] (room checked by the caller); its end. */
function double(buf: Buffer, p: number, d: number): number {
  if (!LITTLE_ENDIAN) {
    buf.writeDoubleLE(d, p)
    return p + 8
  }
  f64[0] = d
  buf[p] = f64Bytes[0]!
  buf[p + 1] = f64Bytes[1]!
  buf[p + 2] = f64Bytes[2]!
  buf[p + 3] = f64Bytes[3]!
  buf[p + 4] = f64Bytes[4]!
  buf[p + 5] = f64Bytes[5]!
  buf[p + 6] = f64Bytes[6]!
  buf[p + 7] = f64Bytes[7]!
  return p + 8
}

/**
 * A string of under 64 ASCII characters at buf[p…], buf being n bytes long (its length's varint is
 * one byte); its end. Otherwise -1: the caller writes it avsc's way (which also finds out whether
 * it has room). Also wire-format.ts' AsciiStringType, for strings avsc writes itself.
 */
export function shortAscii(buf: Buffer, p: number, n: number, s: string): number {
  const len = s.length
  if (len >= 64 || p + 1 + len > n) return -1
  for (let i = 0; i < len; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0x80) return -1
    buf[p + 1 + i] = c
  }
  buf[p] = len << 1
  return p + 1 + len
}
