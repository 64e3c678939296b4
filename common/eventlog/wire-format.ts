import avsc from 'avsc'
import { AVRO_LOGICAL_TYPES } from './decimal-logical-type.ts'
import { recordWriterOf, shortAscii } from './record-writer.ts'
import type { BufferPool } from '../buffer-pool.ts'

/**
 * The Confluent wire format (magic byte 0, 4-byte big-endian schema id, Avro binary) and Avro
 * types, without a registry: what a decode thread loads (decode-thread-worker.ts), which the
 * registry client's own dependencies would take most of half a second to load.
 */

export class UndecodableRecordError extends Error {
  readonly retriable = false
}

/**
 * The schema registry did not answer (down, timed out, a 5xx after the client's retries, refused
 * credentials): no fault of the record, so its batch comes again (a consumer's RedeliverError)
 * instead of the record being dead-lettered for an outage.
 */
export class RegistryUnavailableError extends Error {
  readonly retriable = true
}

/** A record whose Avro type is not the one its topic carries. */
export class SchemaMismatchError extends Error {
  readonly retriable = false
}

/** How every Avro type of ours is read: our logical types, unions as their plain values. */
export const AVRO_OPTS = { logicalTypes: AVRO_LOGICAL_TYPES, wrapUnions: false as const }

export function avroType(schema: string | object): avsc.Type {
  return avsc.Type.forSchema((typeof schema === 'string' ? JSON.parse(schema) : schema) as avsc.Schema, { ...AVRO_OPTS, typeHook: ourTypes } as never)
}

/** The end of the value readPayload is reading (its blocks may not claim more than the bytes before it). */
let readEnd = Infinity

type Tap = { buf: Buffer; pos: number; readLong(): number; skipLong(): void; readString(): string }
type Walked = avsc.Type & { fields?: { type: avsc.Type }[]; types?: avsc.Type[]; itemsType?: avsc.Type; valuesType?: avsc.Type; underlyingType?: avsc.Type; size?: number; _read(tap: Tap): unknown }

/**
 * The fewest bytes a value of `t` takes in Avro binary: a lower bound, 0 for a type met again within
 * itself. Kept per type (`least`), so a schema whose records nest others twice over costs a visit a
 * type, not one a path.
 */
function leastBytes(t: Walked, within = new Set<avsc.Type>()): number {
  const known = least.get(t)
  if (known !== undefined) return known
  if (within.has(t)) return 0
  let n: number
  switch (t.typeName) {
    case 'null':
      n = 0
      break
    case 'float':
      n = 4
      break
    case 'double':
      n = 8
      break
    case 'fixed':
      n = t.size!
      break
    case 'record':
    case 'error':
      within.add(t)
      n = t.fields!.reduce((sum, f) => sum + leastBytes(f.type as Walked, within), 0)
      within.delete(t)
      break
    case 'union:unwrapped':
    case 'union:wrapped':
      n = 1 + Math.min(...t.types!.map((b) => leastBytes(b as Walked, within)))
      break
    default:
      n = t.underlyingType ? leastBytes(t.underlyingType as Walked, within) : 1 // ints, longs, strings, bytes, enums, booleans, arrays, maps
  }
  least.set(t, n)
  return n
}

/** By type: the least bytes one of its values takes (leastBytes), found at an array's first read (a named type may be defined later in its schema). */
const least = new WeakMap<avsc.Type, number>()

/** The most items an array may hold when its items can take no byte (an array of nulls): avsc would make every one claimed. */
const MAX_EMPTY_ITEMS = 1_000_000

type Block = new (schema: object, opts: object) => Walked
const ArrayType = (avsc.types as unknown as { ArrayType: Block }).ArrayType
const MapType = (avsc.types as unknown as { MapType: Block }).MapType
const StringType = (avsc.types as unknown as { StringType: new () => Walked & { _write(tap: Tap, val: unknown): void } }).StringType

/**
 * avsc reads an array's or a map's block count as written and then that many items, past the end
 * of the value if need be: a damaged or hostile count of 10^8 made 10^8 items, and the process ran
 * out of memory on one record before the end could be checked. Our arrays and maps refuse a block
 * whose count the bytes left cannot hold (for items that can take no byte, such as nulls, a count
 * above MAX_EMPTY_ITEMS), as a truncated value is refused: readPayload's UndecodableRecordError,
 * the record dead-lettered.
 */
class BoundedArrayType extends ArrayType {
  override _read(tap: Tap): unknown {
    const items = this.itemsType as Walked
    return readBlocks(tap, leastBytes(items), [] as unknown[], (out, i) => (out[i] = items._read(tap)))
  }
}

class BoundedMapType extends MapType {
  override _read(tap: Tap): unknown {
    const values = this.valuesType as Walked
    return readBlocks(tap, 1 + leastBytes(values), {} as Record<string, unknown>, (out) => (out[tap.readString()] = values._read(tap)))
  }
}

/**
 * Strings written without avsc's Buffer.byteLength per value when they are short and ASCII (ids,
 * codes, segment names: most of what the publishers and the feature consumer write), in about half
 * the time; the same bytes. Others go avsc's way.
 */
class AsciiStringType extends StringType {
  override _write(tap: Tap, val: unknown): void {
    const end = typeof val === 'string' ? shortAscii(tap.buf, tap.pos, tap.buf.length, val) : -1
    if (end >= 0) tap.pos = end
    else super._write(tap, val)
  }
}

/** Our Avro types' hook: arrays and maps read within their bytes (BoundedArrayType), ASCII strings written directly. */
function ourTypes(schema: unknown, opts: object): avsc.Type | undefined {
  // avsc asks again with { type: 'string' } for the name 'string'. A logical type of ours keeps avsc's way (it makes the
  // logical type, whose underlying type this hook is asked for again); one avsc ignores makes the plain type, as here.
  if (typeof schema !== 'object' || schema === null) return undefined
  const logical = (schema as { logicalType?: unknown }).logicalType
  if (typeof logical === 'string' && Object.hasOwn(AVRO_LOGICAL_TYPES, logical)) return undefined
  const { type } = schema as { type?: unknown }
  if (type === 'array') return new BoundedArrayType(schema, opts) as unknown as avsc.Type
  if (type === 'map') return new BoundedMapType(schema, opts) as unknown as avsc.Type
  if (type === 'string') return new AsciiStringType() as unknown as avsc.Type
  return undefined
}

/** avsc's block reading, refusing a count of items of `least` bytes each that the bytes left cannot hold. */
function readBlocks<T>(tap: Tap, least: number, out: T, item: (out: T, i: number) => void): T {
  let i = 0
  for (let n = tap.readLong(); n !== 0; n = tap.readLong()) {
    if (n < 0) {
      n = -n
      tap.skipLong() // the block's size in bytes
    }
    if (!(least > 0 ? n * least <= Math.min(readEnd, tap.buf.length) - tap.pos : i + n <= MAX_EMPTY_ITEMS)) {
      tap.pos = tap.buf.length + 1 // invalid: decode answers offset -1, a truncated value
      return out
    }
    for (; n > 0; n--) item(out, i++)
  }
  return out
}

let scratch = Buffer.allocUnsafe(64 * 1024)
const EMPTY = Buffer.alloc(0)

/**
 * Writes `value` in the Confluent wire format (magic byte 0, schema id, Avro payload) at
 * buf[start…]; returns its end, or, when `buf` is too short, a negative number: at most the bytes
 * it needs minus buf.length (avsc's own answer for a payload past the end; a record writer's
 * NO_ROOM says only that more is needed, and the caller grows by doubling). Throws as avsc does for a value
 * the type refuses.
 */
function writeFramed(buf: Buffer, start: number, id: number, t: avsc.Type, value: unknown): number {
  // The guard only keeps explicit what avsc would answer for a start past the end anyway.
  if (start + 5 > buf.length) return buf.length - (start + 5)
  // A record's fields in place where they are plain (recordWriterOf), avsc's bytes either way.
  const write = recordWriterOf(t)
  const end = write ? write(buf, start + 5, value) : t.encode(value, buf, start + 5)
  if (end >= 0) {
    buf[start] = 0
    buf.writeUInt32BE(id, start + 1)
  }
  return end
}

/**
 * `value` in the Confluent wire format. It is written in a buffer kept for the purpose, then
 * copied once into a buffer of its exact size (avsc's toBuffer would allocate and zero one, and
 * framing copy it again).
 */
export function frame(id: number, t: avsc.Type, value: unknown): Buffer {
  let end = writeFramed(scratch, 0, id, t, value)
  while (end < 0) {
    scratch = Buffer.allocUnsafe(Math.max(scratch.length * 2, scratch.length - end))
    end = writeFramed(scratch, 0, id, t, value)
  }
  const out = Buffer.allocUnsafe(end)
  scratch.copy(out, 0, 0, end)
  return out
}

/**
 * Values framed in the Confluent wire format one after another in one buffer, as they are
 * encoded: a producer of many records makes no buffer per value (and copies none out of a scratch
 * buffer). `value(i)` is a view of the i-th; the buffer is never written again under a view.
 */
export class FramedValues {
  /** Allocated at the first value (a producer that adds none allocates nothing), then grown by doubling. */
  private buf: Buffer = EMPTY
  private at = 0
  private readonly ends: number[] = []
  /** A view of `buf` was handed out (value()): a buffer grown out of is then left to them, not given back to the pool. */
  private viewed = false

  /**
   * @param initialBytes the buffer's size at the first value (more if that value needs it).
   * @param pool where the buffers come from and go back to (release): for values dropped whole once sent.
   */
  constructor(
    private readonly initialBytes = 64 * 1024,
    private readonly pool: BufferPool | null = null,
  ) {}

  get length(): number {
    return this.ends.length
  }

  /** Appends `value` framed with schema `id` (its type `t`); throws as avsc does for a value the type refuses (nothing is appended then). */
  add(id: number, t: avsc.Type, value: unknown): void {
    const start = this.at
    for (;;) {
      const end = writeFramed(this.buf, start, id, t, value)
      if (end >= 0) {
        this.at = end
        this.ends.push(end)
        return
      }
      // Views already made keep reading the old buffer, which is never written again.
      const size = Math.max(this.initialBytes, this.buf.length * 2, this.buf.length - end)
      const grown = this.pool ? this.pool.take(size) : Buffer.allocUnsafe(size)
      this.buf.copy(grown, 0, 0, start)
      if (this.pool && !this.viewed && this.buf !== EMPTY) this.pool.give(this.buf)
      this.buf = grown
    }
  }

  /**
   * The values are dropped: the buffer goes back to the pool, and the next value starts afresh.
   * Nothing may read a view of them (value()) after this: a send that took them has settled.
   */
  release(): void {
    if (this.pool && this.buf !== EMPTY) this.pool.give(this.buf)
    this.buf = EMPTY
    this.at = 0
    this.ends.length = 0
    this.viewed = false
  }

  /** An empty slot, for a value encoded elsewhere (its schema had to be fetched first). */
  skip(): void {
    this.ends.push(this.at)
  }

  /** The i-th value, framed: a view of the shared buffer. */
  value(i: number): Buffer {
    this.viewed = true
    return this.buf.subarray(i === 0 ? 0 : this.ends[i - 1]!, this.ends[i]!)
  }
}

/**
 * The schema id of a value in the Confluent wire format, the value being buf[start, end) (the
 * whole buffer by default); its Avro payload starts 5 bytes in.
 */
export function schemaIdOf(buf: Buffer, start = 0, end = buf.length): number {
  if (!Buffer.isBuffer(buf) || end - start < 5 || buf[start] !== 0) {
    throw new UndecodableRecordError('value is not in the Confluent wire format (magic byte 0 + schema id)')
  }
  return buf.readUInt32BE(start + 1)
}

/**
 * The Avro value after the header of the framed value buf[start, end), read in place (no view of
 * the payload per record), and exactly to its end, as `fromBuffer` would: a truncated or overlong
 * payload is undecodable.
 */
export function readPayload(t: avsc.Type, schemaId: number, framed: Buffer, start = 0, end = framed.length): unknown {
  let read: { value: unknown; offset: number }
  readEnd = end
  try {
    read = t.decode(framed, start + 5)
  } catch (e) {
    throw new UndecodableRecordError(`Avro payload does not match schema ${schemaId}: ${(e as Error).message}`)
  } finally {
    readEnd = Infinity
  }
  if (read.offset !== end) throw new UndecodableRecordError(`Avro payload does not match schema ${schemaId}: ${read.offset < 0 ? 'truncated buffer' : 'trailing data'}`)
  return read.value
}

/** avsc decodes records into instances of a generated class named after the record. */
export function typeNameOf(v: unknown): string | null {
  const ctor = (v as { constructor?: { type?: { name?: string } } }).constructor
  return ctor?.type?.name ?? null
}
