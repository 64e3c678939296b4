import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import zlib from 'node:zlib'
import { EventEmitter } from 'node:events'
import { PARTITIONS_CONSUMED_CONCURRENTLY, type Batch, type ConsumeOptions, type ConsumerHandle, type EventLog, type LogRecord, type OutRecord, type PartitionOffset, type TopicConfig } from './port.ts'
import { partitionFor } from './partitioner.ts'
import { PartitionFlow, retryPauseMs } from './partition-flow.ts'
import { writeJsonAtomic } from '../json-file.ts'
import { BufferPool, WRITE_BUFFERS } from '../buffer-pool.ts'
import { grown } from '../typed-arrays.ts'

/**
 * The embedded event log: one append-only file per topic partition under `dir`, with
 * Kafka's semantics for what we use (see port.ts). One process owns a directory (lock file).
 *
 * Frame: u32 bodyLength | u32 crc32(body) | body
 * body:  i64 timestampMs | i32 keyLen (-1 = null) | key | i32 valueLen (-1 = null) | value | u16 headerCount | (u16 len, name, u32 len, value)*
 * A torn tail (crash in the middle of an append) fails its length or CRC check and is cut off on open.
 * Compaction of compacted topics is not performed: readers of such a topic keep the last value
 * per key, which is all compaction guarantees; it only costs disk.
 */
const FRAME_HEADER = 8
const READ_CHUNK = 4 * 1024 * 1024
/**
 * The chunks read for consumers whose records' bytes end with their batch (recordBytesEndWithBatch):
 * a partition's batches in flight at a time, a few MB each, kept for the next ones.
 */
const READ_BUFFERS = new BufferPool(64 << 20)

class PartitionLog {
  /** File position of each record, by offset. */
  private positions: Float64Array = new Float64Array(1024)
  /**
   * Stream time at each offset: the largest record timestamp up to it (timestamps are append times),
   * in ms after the first record's, as float32: exact for the first 4.6 hours, then to 1/16,000,000
   * of the span (a quarter of a second a month). What aligned consumers read by (consume's
   * alignTopics), for four bytes a record.
   */
  private stamps: Float32Array = new Float32Array(1024)
  private firstStamp = NaN
  private lastStamp = -Infinity
  count = 0
  private size = 0
  private appending: Promise<void> = Promise.resolve()

  private constructor(
    readonly file: string,
    private readonly fd: fsp.FileHandle,
  ) {}

  static async open(file: string): Promise<PartitionLog> {
    fs.mkdirSync(path.dirname(file), { recursive: true })
    const fd = await fsp.open(file, fs.existsSync(file) ? 'r+' : 'w+')
    const p = new PartitionLog(file, fd)
    await p.recover()
    return p
  }

  private async recover(): Promise<void> {
    const { size } = await this.fd.stat()
    let pos = 0
    const head = Buffer.alloc(FRAME_HEADER)
    while (pos + FRAME_HEADER <= size) {
      await this.fd.read(head, 0, FRAME_HEADER, pos)
      const len = head.readUInt32BE(0)
      if (pos + FRAME_HEADER + len > size) break
      const body = Buffer.alloc(len)
      await this.fd.read(body, 0, len, pos + FRAME_HEADER)
      if (zlib.crc32(body) !== head.readUInt32BE(4)) break
      this.index(pos, timestampAt(body, 0))
      pos += FRAME_HEADER + len
    }
    if (pos < size) await this.fd.truncate(pos)
    this.size = pos
  }

  private index(pos: number, timestamp: number): void {
    if (this.count === this.positions.length) {
      this.positions = grown(this.positions, this.positions.length * 2)
      this.stamps = grown(this.stamps, this.stamps.length * 2)
    }
    if (this.count === 0) this.firstStamp = timestamp
    this.lastStamp = Math.max(this.lastStamp, timestamp)
    this.stamps[this.count] = this.lastStamp - this.firstStamp
    this.positions[this.count++] = pos
  }

  /** Stream time at `offset` (below count), in the stamps' precision. */
  stampAt(offset: number): number {
    return this.firstStamp + this.stamps[offset]!
  }

  /** The first offset in [from, to) whose stream time is after `ms` (to when none), in the stamps' precision. */
  firstAfter(ms: number, from: number, to: number): number {
    const after = Math.fround(ms - this.firstStamp)
    let lo = from
    let hi = to
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.stamps[mid]! > after) hi = mid
      else lo = mid + 1
    }
    return lo
  }

  /**
   * Appends frames laid end to end in `frames` and fsyncs; resolves with the first offset. Appends
   * are serialised per partition.
   */
  append(frames: Buffer): Promise<number> {
    const run = this.appending.then(async () => {
      const first = this.count
      await this.fd.write(frames, 0, frames.length, this.size)
      await this.fd.datasync()
      // Each frame starts with its body's length, as recover() reads them.
      for (let at = 0; at < frames.length; at += FRAME_HEADER + frames.readUInt32BE(at)) this.index(this.size + at, timestampAt(frames, at + FRAME_HEADER))
      this.size += frames.length
      return first
    })
    this.appending = run.then(() => undefined, () => undefined)
    return run
  }

  /**
   * Reads up to `max` records from `offset`. With a pool, the chunks they are read into come from
   * it and are pushed on `chunks`: the caller gives them back once nothing reads the records' bytes.
   */
  async read(topic: string, partition: number, offset: number, max: number, pool: BufferPool | null = null, chunks: Buffer[] = []): Promise<LogRecord[]> {
    const end = Math.min(this.count, offset + max)
    if (offset >= end) return []
    const out: LogRecord[] = []
    let o = offset
    while (o < end) {
      const start = this.positions[o]!
      // Read a chunk covering as many whole records as fit.
      let last = o
      while (last + 1 < end && this.positionOf(last + 2) - start <= READ_CHUNK) last++
      const stop = this.positionOf(last + 1)
      // Not zeroed first: every byte is read over, and a short read is an error.
      let buf: Buffer
      if (pool) {
        const whole = pool.take(stop - start)
        chunks.push(whole)
        buf = whole.subarray(0, stop - start)
      } else buf = Buffer.allocUnsafe(stop - start)
      const { bytesRead } = await this.fd.read(buf, 0, buf.length, start)
      if (bytesRead !== buf.length) throw new Error(`short read of ${topic}-${partition} at offset ${o}: ${bytesRead} of ${buf.length} bytes`)
      let p = 0
      const chunk = new Chunk(topic, partition, buf)
      for (let i = o; i <= last; i++) {
        const len = buf.readUInt32BE(p)
        out.push(decodeBody(chunk, i, p + FRAME_HEADER, p + FRAME_HEADER + len))
        p += FRAME_HEADER + len
      }
      o = last + 1
    }
    return out
  }

  private positionOf(offset: number): number {
    return offset < this.count ? this.positions[offset]! : this.size
  }

  async close(): Promise<void> {
    await this.appending
    await this.fd.close()
  }
}

/** A consumer's place in one topic partition (consume). */
interface Position {
  topic: string
  partition: number
  /** The next offset to hand out. */
  next: number
  /** The offset after the records read (a batch being handled included): what an aligned peer follows. */
  read: number
}

/** A record's header bytes, when it has headers: each name and value as bytes. */
type HeaderBytes = readonly (readonly [Buffer, Buffer])[]

function headerBytesOf(r: OutRecord): HeaderBytes {
  return r.headers ? Object.entries(r.headers).map(([k, v]) => [Buffer.from(k), Buffer.from(v)] as const) : NO_HEADER_BYTES
}

/** The bytes of a record's frame: its header (FRAME_HEADER) and its body. */
function frameLength(key: Buffer | string | null, value: Buffer | null, headers: HeaderBytes): number {
  let len = FRAME_HEADER + 8 + 4 + byteLength(key) + 4 + (value?.length ?? 0) + 2
  for (let i = 0; i < headers.length; i++) len += 6 + headers[i]![0].length + headers[i]![1].length
  return len
}

/** The timestamp a frame's body starts with (an i64 of ms, as writeFrame writes it), the body at buf[at…]. */
function timestampAt(buf: Buffer, at: number): number {
  return buf.readInt32BE(at) * 0x1_0000_0000 + buf.readUInt32BE(at + 4)
}

/** Writes a record's frame at buf[at, end), end - at being its frameLength. */
function writeFrame(buf: Buffer, at: number, end: number, key: Buffer | string | null, value: Buffer | null, headers: HeaderBytes, timestamp: number): void {
  let p = at + FRAME_HEADER
  buf.writeInt32BE(Math.floor(timestamp / 0x1_0000_0000), p)
  buf.writeUInt32BE(timestamp % 0x1_0000_0000 >>> 0, p + 4); p += 8
  p = writeBytes(buf, p, key)
  p = writeBytes(buf, p, value)
  buf.writeUInt16BE(headers.length, p); p += 2
  for (const [k, v] of headers) {
    buf.writeUInt16BE(k.length, p); p += 2
    k.copy(buf, p); p += k.length
    buf.writeUInt32BE(v.length, p); p += 4
    v.copy(buf, p); p += v.length
  }
  buf.writeUInt32BE(end - at - FRAME_HEADER, at)
  buf.writeUInt32BE(zlib.crc32(buf.subarray(at + FRAME_HEADER, end)), at + 4)
}

function writeBytes(buf: Buffer, p: number, b: Buffer | string | null): number {
  if (b === null) {
    buf.writeInt32BE(-1, p)
    return p + 4
  }
  if (typeof b === 'string') {
    // A string's UTF-8 bytes (byteLength's count): an ASCII key's are its character codes.
    const n = byteLength(b)
    buf.writeInt32BE(n, p)
    if (n === b.length) for (let i = 0; i < n; i++) buf[p + 4 + i] = b.charCodeAt(i)
    else buf.write(b, p + 4, n, 'utf8')
    return p + 4 + n
  }
  buf.writeInt32BE(b.length, p)
  b.copy(buf, p + 4)
  return p + 4 + b.length
}

/** A key's or value's bytes: a string's in UTF-8 (its length when it is ASCII, counted without Buffer.byteLength up to 64 characters). */
function byteLength(b: Buffer | string | null): number {
  if (b === null) return 0
  if (typeof b !== 'string') return b.length
  const n = b.length
  if (n > 64) return Buffer.byteLength(b, 'utf8')
  for (let i = 0; i < n; i++) if (b.charCodeAt(i) >= 0x80) return Buffer.byteLength(b, 'utf8')
  return n
}

const NO_HEADER_BYTES: readonly (readonly [Buffer, Buffer])[] = []

/** The headers of every record that has none: one frozen object, not one per record. */
const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>

/** What the records of one chunk read from the log share. */
class Chunk {
  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly bytes: Buffer,
  ) {}
}

/**
 * A record as it lies in a chunk read from the log: its fields are read from the chunk's bytes
 * when asked for, and its key and value are views made then. A consumer holds a whole batch of
 * records until the batch is written, so whatever a record keeps outlives the young generation
 * and is copied and promoted with it: a view and a string kept per record made each one three
 * objects more (docs/analytics-performance.md, "Ingest"), and its own topic, timestamp (a heap
 * number) and field offsets made it 120 bytes in two objects; now it is one of 48. The chunk is
 * never written again, so every read of it gives the same fields.
 */
class ChunkRecord implements LogRecord {
  // Private (#): a record spread or logged shows its own fields, never the 4 MB chunk under them.
  readonly #of: Chunk
  readonly #n: number
  /** Where its frame's body starts in the chunk. */
  readonly #at: number

  constructor(of: Chunk, n: number, at: number) {
    this.#of = of
    this.#n = n
    this.#at = at
  }

  get topic(): string {
    return this.#of.topic
  }

  get partition(): number {
    return this.#of.partition
  }

  get offset(): string {
    return String(this.#n)
  }

  get timestamp(): number {
    return timestampAt(this.#of.bytes, this.#at)
  }

  get key(): Buffer | null {
    const b = this.#of.bytes
    const n = b.readInt32BE(this.#at + 8)
    return n < 0 ? null : b.subarray(this.#at + 12, this.#at + 12 + n)
  }

  get value(): Buffer | null {
    const b = this.#of.bytes
    const at = this.valueAt()
    const n = b.readInt32BE(at - 4)
    return n < 0 ? null : b.subarray(at, at + n)
  }

  get headers(): Record<string, string> {
    const b = this.#of.bytes
    let p = this.valueAt() + Math.max(0, this.valueLength)
    const count = b.readUInt16BE(p)
    p += 2
    if (count === 0) return NO_HEADERS
    const headers: Record<string, string> = {}
    for (let i = 0; i < count; i++) {
      const kl = b.readUInt16BE(p); p += 2
      const k = b.toString('utf8', p, p + kl); p += kl
      const vl = b.readUInt32BE(p); p += 4
      headers[k] = b.toString('utf8', p, p + vl); p += vl
    }
    return headers
  }

  get valueLength(): number {
    return this.#of.bytes.readInt32BE(this.valueAt() - 4)
  }

  copyValueInto(target: Uint8Array, at: number): void {
    // TypedArray's set of a plain view, not Buffer's copy (which makes a view too, behind argument checks) nor subarray (a Buffer by species lookup).
    const b = this.#of.bytes
    const from = this.valueAt()
    const n = b.readInt32BE(from - 4)
    if (n > 0) target.set(new Uint8Array(b.buffer, b.byteOffset + from, n), at)
  }

  /** Where the value's bytes start (its length is the i32 before them). */
  private valueAt(): number {
    const b = this.#of.bytes
    return this.#at + 16 + Math.max(0, b.readInt32BE(this.#at + 8))
  }
}

/** The record whose frame body is chunk.bytes[p, end), its fields checked to lie within it. */
function decodeBody(chunk: Chunk, offset: number, p: number, end: number): LogRecord {
  const b = chunk.bytes
  // Read inline, not by a closure made per record (tsx's keepNames names each closure as it is made).
  let q = p + 8
  const kn = b.readInt32BE(q)
  q += 4 + Math.max(0, kn)
  const vn = b.readInt32BE(q)
  q += 4 + Math.max(0, vn)
  const hc = b.readUInt16BE(q); q += 2
  for (let i = 0; i < hc; i++) {
    q += 2 + b.readUInt16BE(q)
    q += 4 + b.readUInt32BE(q)
  }
  if (q > end) throw new Error(`corrupt record at offset ${offset} of ${chunk.topic}-${chunk.partition}: its fields run past its frame`)
  return new ChunkRecord(chunk, offset, p)
}

interface TopicMeta {
  partitions: number
  compacted: boolean
}

export class LogLockedError extends Error {
  constructor(public readonly dir: string, public readonly holder: { pid: number; apiUrl?: string }) {
    super(`the embedded event log at ${dir} is in use by process ${holder.pid}${holder.apiUrl ? ` (its API is at ${holder.apiUrl})` : ''}`)
    this.name = 'LogLockedError'
  }
}

export class EmbeddedEventLog implements EventLog {
  readonly kind = 'embedded' as const
  private readonly partitions = new Map<string, PartitionLog[]>()
  private readonly meta: Record<string, TopicMeta>
  private readonly appended = new EventEmitter()
  private readonly consumers = new Set<string>()
  private rr = 0
  private closed = false

  private constructor(private readonly dir: string) {
    this.appended.setMaxListeners(0)
    const metaFile = path.join(dir, 'topics.json')
    this.meta = fs.existsSync(metaFile) ? JSON.parse(fs.readFileSync(metaFile, 'utf8')) : {}
  }

  /** Opens (creating) the log under `dir` and takes its lock. */
  static async open(dir: string, opts: { apiUrl?: string } = {}): Promise<EmbeddedEventLog> {
    fs.mkdirSync(dir, { recursive: true })
    takeLock(dir, opts.apiUrl)
    const log = new EmbeddedEventLog(dir)
    for (const [name, m] of Object.entries(log.meta)) await log.openTopic(name, m.partitions)
    return log
  }

  /** Who holds the lock of `dir`, if a live process does. */
  static lockHolder(dir: string): { pid: number; apiUrl?: string } | null {
    return readLiveLock(dir)
  }

  private async openTopic(name: string, n: number): Promise<void> {
    const parts: PartitionLog[] = []
    for (let p = 0; p < n; p++) parts.push(await PartitionLog.open(path.join(this.dir, 'topics', name, `${p}.log`)))
    this.partitions.set(name, parts)
  }

  async createTopics(topics: TopicConfig[]): Promise<void> {
    let changed = false
    for (const t of topics) {
      if (this.meta[t.name]) continue
      this.meta[t.name] = { partitions: t.partitions, compacted: t.compacted }
      await this.openTopic(t.name, t.partitions)
      changed = true
    }
    if (changed) writeJsonAtomic(path.join(this.dir, 'topics.json'), this.meta)
  }

  private parts(topic: string): PartitionLog[] {
    const p = this.partitions.get(topic)
    if (!p) throw new Error(`unknown topic ${topic}: create it first`)
    return p
  }

  async send(topic: string, records: OutRecord[]): Promise<void> {
    if (this.closed) throw new Error('event log is closed')
    const parts = this.parts(topic)
    const now = Date.now()
    // Made once per send, not per record (tsx's keepNames names each closure as it is made).
    const roundRobin = () => this.rr++
    // Each partition's frames are written end to end into one buffer (its append writes that
    // buffer as it is): no buffer a record, and no second copy to join them.
    const keys: (Buffer | string | null)[] = new Array(records.length)
    const headers: HeaderBytes[] = new Array(records.length)
    const partitionOf = new Int32Array(records.length)
    const sizes = new Int32Array(records.length)
    const bytes = new Map<number, number>()
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!
      // A string key is hashed and framed from its characters: no Buffer a record.
      const key = r.key
      const p = partitionFor(key, parts.length, roundRobin)
      const h = headerBytesOf(r)
      keys[i] = key
      headers[i] = h
      partitionOf[i] = p
      sizes[i] = frameLength(key, r.value, h)
      bytes.set(p, (bytes.get(p) ?? 0) + sizes[i]!)
    }
    // From the pool (buffer-pool.ts), back to it once appended: a send's frames are dropped whole.
    const frames = new Map<number, { buf: Buffer; at: number }>()
    for (const [p, n] of bytes) frames.set(p, { buf: WRITE_BUFFERS.take(n), at: 0 })
    try {
      for (let i = 0; i < records.length; i++) {
        const f = frames.get(partitionOf[i]!)!
        const end = f.at + sizes[i]!
        writeFrame(f.buf, f.at, end, keys[i] ?? null, records[i]!.value, headers[i]!, now)
        f.at = end
      }
      // Every append settles (a failed one too) before the buffers are given back.
      const appended = await Promise.allSettled([...frames].map(([p, f]) => parts[p]!.append(f.buf.subarray(0, f.at))))
      for (const r of appended) if (r.status === 'rejected') throw r.reason
    } finally {
      for (const f of frames.values()) WRITE_BUFFERS.give(f.buf)
    }
    this.appended.emit(topic)
  }

  async endOffsets(topic: string): Promise<PartitionOffset[]> {
    return this.parts(topic).map((p, i) => ({ partition: i, offset: String(p.count) }))
  }

  private offsetsFile(groupId: string): string {
    return path.join(this.dir, 'groups', `${encodeURIComponent(groupId)}.json`)
  }

  private readGroup(groupId: string): Record<string, Record<string, string>> {
    const f = this.offsetsFile(groupId)
    return fs.existsSync(f) ? JSON.parse(fs.readFileSync(f, 'utf8')) : {}
  }

  async committedOffsets(groupId: string, topic: string): Promise<PartitionOffset[]> {
    const g = this.readGroup(groupId)[topic] ?? {}
    return this.parts(topic).map((_, i) => ({ partition: i, offset: g[String(i)] ?? '-1' }))
  }

  async resetGroup(groupId: string, topics: string[]): Promise<void> {
    if (this.consumers.has(groupId)) throw new Error(`group ${groupId} is running; stop it before resetting its offsets`)
    const g = this.readGroup(groupId)
    for (const t of topics) delete g[t]
    writeJsonAtomic(this.offsetsFile(groupId), g)
  }

  async consume(opts: ConsumeOptions): Promise<ConsumerHandle> {
    if (this.consumers.has(opts.groupId)) throw new Error(`group ${opts.groupId} already has a member in this process`)
    this.consumers.add(opts.groupId)
    const maxBatch = opts.maxBatch ?? 5000
    const group = this.readGroup(opts.groupId)
    let running = true
    // Loops waiting for records (or a backoff) wake when records arrive or the consumer stops.
    const wakers = new Set<() => void>()
    // Followers of aligned peers (alignedEnd) waiting for a peer's read: woken by it as well, apart
    // from the loops in a retry's backoff, which a read must not cut short.
    const following = new Set<() => void>()
    const wake = () => {
      wakeFollowers()
      const waiting = [...wakers]
      wakers.clear()
      for (const w of waiting) w()
    }
    const wakeFollowers = () => {
      const waiting = [...following]
      following.clear()
      for (const w of waiting) w()
    }
    for (const t of opts.topics) this.appended.on(t, wake)

    const positions: Position[] = []
    for (const topic of opts.topics) {
      const parts = this.parts(topic)
      parts.forEach((p, i) => {
        const committed = group[topic]?.[String(i)]
        const next = committed !== undefined ? Number(committed) : opts.fromBeginning === false ? p.count : 0
        positions.push({ topic, partition: i, next, read: next })
      })
    }
    // The same partition of the other aligned topics (alignTopics).
    const aligned = new Set(opts.alignTopics ?? [])
    const peers = new Map<Position, Position[]>()
    for (const pos of positions) {
      if (aligned.has(pos.topic)) peers.set(pos, positions.filter((q) => q !== pos && q.partition === pos.partition && aligned.has(q.topic)))
    }
    /**
     * Where a read from `pos.next` may end: up to maxBatch records, unless a peer would reach less
     * far in stream time with its own next batch. Then this position follows that peer: it reads
     * only records no later than those the peer has read, and waits (0 records) when the peer has
     * read nothing past its next one. The peer leads and does not wait for this one (should both,
     * judging at different moments as the logs grow, briefly take the other for the leader, the
     * next read, append or 250 ms pause ends it); a peer with nothing left to read holds no one back.
     */
    const alignedEnd = (pos: Position, part: PartitionLog): number => {
      let end = Math.min(part.count, pos.next + maxBatch)
      const own = peers.get(pos)
      if (!own || end <= pos.next) return end
      const reach = part.stampAt(end - 1)
      for (const q of own) {
        const qPart = this.parts(q.topic)[q.partition]!
        if (q.read >= qPart.count) continue
        const qReach = qPart.stampAt(Math.min(qPart.count, q.read + maxBatch) - 1)
        if (reach <= qReach) continue
        end = q.read > 0 ? part.firstAfter(qPart.stampAt(q.read - 1), pos.next, end) : pos.next
        if (end <= pos.next) break
      }
      return end
    }

    opts.onAssign?.(positions.map(({ topic, partition }) => ({ topic, partition })))

    const commit = (topic: string, partition: number, next: number) => {
      const t = (group[topic] ??= {})
      t[String(partition)] = String(next)
      writeJsonAtomic(this.offsetsFile(opts.groupId), group)
    }

    // Each partition has a loop of its own, and up to PARTITIONS_CONSUMED_CONCURRENTLY batches are
    // handled at once (kafkajs' partitionsConsumedConcurrently, as the Kafka adapter sets it): one
    // partition's decode runs while another's sink writes. Within a partition, batches stay in order.
    // With inFlight above 1 a slot is held while a batch is read and handed, not while it is handled.
    const slots = new Semaphore(PARTITIONS_CONSUMED_CONCURRENTLY)
    // Aligned positions of one partition are one unit of work (as Kafka Streams' task is): they
    // share a slot, so that a follower reads and is handled beside the batch it follows.
    const shared = new Map<number, SharedSlot>()
    const slotFor = (pos: Position): Promise<() => void> => {
      if (!peers.has(pos)) return slots.acquire()
      let slot = shared.get(pos.partition)
      if (!slot) shared.set(pos.partition, (slot = new SharedSlot(slots)))
      return slot.acquire(pos)
    }
    /** Waits `ms`, or less when records arrive or the consumer stops (or, for a follower, when a peer reads). */
    const pause = (ms: number, set = wakers) =>
      new Promise<void>((resolve) => {
        const done = () => {
          set.delete(done)
          clearTimeout(timer)
          resolve()
        }
        const timer = setTimeout(done, ms)
        timer.unref()
        set.add(done)
      })
    const inFlight = opts.inFlight ?? 1
    const partitionLoop = async (pos: Position) => {
      let failures = 0
      const part = this.parts(pos.topic)[pos.partition]!
      let commitFailure: Error | null = null
      // inFlight above 1: batches are handed (pos.next moves on) before they are handled, committed
      // in order as they succeed; a failure moves pos.next back to the failed batch (partition-flow.ts).
      const flow =
        inFlight > 1
          ? new PartitionFlow(inFlight, {
              commit: async (next) => commit(pos.topic, pos.partition, Number(next)),
              rewind: (offset) => {
                pos.next = Number(offset)
                pos.read = pos.next
                wake()
              },
              onError: (err) => opts.onError?.(err, { topic: pos.topic, partition: pos.partition }),
              // The offsets file could not be written: the loop fails, as a read that fails does.
              onCommitError: (err) => {
                commitFailure ??= err as Error
              },
            })
          : null
      while (running) {
        if (commitFailure) throw commitFailure
        if (pos.next >= part.count) {
          await pause(250)
          continue
        }
        if (flow) await flow.room()
        // A follower with nothing it may read yet waits without a slot: joining its pair's hold only
        // to leave it would use up its one join of that hold (SharedSlot).
        if (peers.has(pos) && alignedEnd(pos, part) <= pos.next) {
          await pause(250, following)
          continue
        }
        const release = await slotFor(pos)
        try {
          if (!running) break
          const from = pos.next
          const end = alignedEnd(pos, part)
          if (end <= from) {
            // Following a peer that has not read past this one's next record: woken when it reads.
            release()
            await pause(250, following)
            continue
          }
          const chunks: Buffer[] = []
          const giveBack = () => chunks.forEach((c) => READ_BUFFERS.give(c))
          const records = await part.read(pos.topic, pos.partition, from, end - from, opts.recordBytesEndWithBatch ? READ_BUFFERS : null, chunks)
          // Read before a rewind moved pos.next back (inFlight above 1): read again from there.
          if (pos.next !== from) {
            giveBack()
            continue
          }
          pos.read = from + records.length
          if (peers.has(pos)) wakeFollowers()
          const batch: Batch = {
            topic: pos.topic,
            partition: pos.partition,
            records,
            highWatermark: String(part.count),
            heartbeat: async () => {},
          }
          if (flow) {
            pos.next = from + records.length
            flow.hand(String(from), String(pos.next - 1), () => opts.onBatch(batch).finally(giveBack))
            continue
          }
          try {
            await opts.onBatch(batch).finally(giveBack)
            pos.next += records.length
            commit(pos.topic, pos.partition, pos.next)
            failures = 0
          } catch (err) {
            opts.onError?.(err, { topic: pos.topic, partition: pos.partition })
            // Redeliver the same batch after a growing pause, as a Kafka consumer restart would.
            failures++
            pos.read = pos.next
            release()
            await pause(retryPauseMs(failures))
            continue
          }
        } finally {
          release()
        }
      }
      await flow?.drain()
      if (commitFailure) throw commitFailure
    }
    // A loop that fails (a read or an offsets write) stops the others too, and stop() waits for all.
    const loop = Promise.allSettled(
      positions.map((pos) =>
        partitionLoop(pos).catch((err) => {
          running = false
          wake()
          throw err
        }),
      ),
    ).then((results) => {
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
      if (failed) throw failed.reason
    })

    return {
      stop: async () => {
        running = false
        wake()
        await loop
        for (const t of opts.topics) this.appended.off(t, wake)
        this.consumers.delete(opts.groupId)
      },
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    for (const parts of this.partitions.values()) for (const p of parts) await p.close()
    releaseLock(this.dir)
  }
}


/**
 * One slot of a consumer's Semaphore held by the aligned positions of a partition together: the
 * first to come takes a slot, the others join its hold. A position joins a hold once: to go again it
 * waits for the hold to end and then takes (or joins) a fresh one, so a pair gives its slot back
 * between batches, as any other loop does, and the loops queued meanwhile get theirs.
 */
export class SharedSlot {
  private holders = 0
  private hold = 0
  private release: (() => void) | null = null
  private taking: Promise<void> | null = null
  private ended: Promise<void> = Promise.resolve()
  private end: () => void = () => {}
  private readonly joined = new Map<object, number>()

  constructor(private readonly slots: Semaphore) {}

  async acquire(who: object): Promise<() => void> {
    while (this.holders > 0 && this.joined.get(who) === this.hold) await this.ended
    if (this.holders === 0) {
      this.hold++
      this.ended = new Promise<void>((resolve) => (this.end = resolve))
      this.taking = this.slots.acquire().then((release) => {
        this.release = release
        this.taking = null
      })
    }
    this.holders++
    this.joined.set(who, this.hold)
    if (this.taking) await this.taking
    let held = true
    return () => {
      if (!held) return
      held = false
      if (--this.holders === 0) {
        this.release?.()
        this.release = null
        this.end()
      }
    }
  }
}

/** At most `n` holders at once; `acquire` resolves to a release that may be called more than once. */
export class Semaphore {
  private free: number
  private readonly waiting: (() => void)[] = []
  constructor(n: number) {
    this.free = n
  }
  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free--
    else await new Promise<void>((resolve) => this.waiting.push(resolve))
    let held = true
    return () => {
      if (!held) return
      held = false
      const next = this.waiting.shift()
      if (next) next()
      else this.free++
    }
  }
}

const lockFile = (dir: string) => path.join(dir, 'LOCK')

function readLiveLock(dir: string): { pid: number; apiUrl?: string } | null {
  try {
    const holder = JSON.parse(fs.readFileSync(lockFile(dir), 'utf8')) as { pid: number; apiUrl?: string }
    process.kill(holder.pid, 0)
    return holder
  } catch {
    return null
  }
}

function takeLock(dir: string, apiUrl?: string): void {
  const holder = readLiveLock(dir)
  if (holder && holder.pid !== process.pid) throw new LogLockedError(dir, holder)
  fs.writeFileSync(lockFile(dir), JSON.stringify({ pid: process.pid, apiUrl }))
}

function releaseLock(dir: string): void {
  const holder = readLiveLock(dir)
  if (holder?.pid === process.pid) fs.rmSync(lockFile(dir), { force: true })
}
