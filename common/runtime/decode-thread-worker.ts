import { parentPort } from 'node:worker_threads'
import type avsc from 'avsc'
import { avroType, readPayload, schemaIdOf, typeNameOf } from '../eventlog/wire-format.ts'
import { currencyText } from '../order-event-reader.ts'

/** One job of a decode thread (decode-thread.ts): a part of a batch, the records' values one after another. */
export interface DecodeJob<Setup> {
  id: number
  /** The records' topic (a batch is of one topic). */
  topic: string
  /** The records' values one after another; record i's ends at ends[i] (a record without a value is empty). */
  values: Uint8Array
  ends: Int32Array
  /** Writer schemas (id, JSON) this thread has not been sent yet. */
  schemas: [number, string][]
  /** Sent with a thread's first job. */
  setup: Setup | null
  /** The time rules judge by (occurred_at not in the future), as the main thread's check would. */
  now: number
  /**
   * Where it is decoded among the jobs waiting: by (after, id), lowest first. `after` is its own id
   * (when absent too), or, for a job of a group other jobs of which were sent before it and are not
   * answered yet, the oldest one's id: it is decoded right behind the group's earlier jobs, before
   * the jobs sent after that one (DecodeThread.run).
   */
  after?: number
}

/**
 * The writer schemas a decode thread was sent, and the reading of a value by them. Only what is
 * certain is read here: a value whose schema this thread was not given, or that is not a record of
 * the expected type, is null (left to the main thread, which decodes it again and says why); a
 * value the registry's own reading refuses throws (UndecodableRecordError), and the caller leaves
 * that record to the main thread too.
 */
export class ThreadSchemas {
  private readonly types = new Map<number, avsc.Type>()

  add(schemas: readonly [number, string][]): void {
    for (const [id, schema] of schemas) this.types.set(id, avroType(schema))
  }

  /** The type of a writer schema this thread was given. */
  type(id: number): avsc.Type | undefined {
    return this.types.get(id)
  }

  /**
   * A fast path's reader (or transcoder) for the writer schema of the value framed in
   * values[start, end): made by `make` at the schema's first record and kept in `made` (null where
   * `make` makes none); null too while this thread was not given the schema, or for a value without
   * a header. The caller clears `made` when its setup changes.
   */
  madeFor<T>(made: Map<number, T | null>, values: Buffer, start: number, end: number, make: (type: avsc.Type) => T | null): T | null {
    if (end - start < 5) return null
    const id = values.readUInt32BE(start + 1)
    let r = made.get(id)
    if (r === undefined) {
      const type = this.types.get(id)
      if (!type) return null // not given (yet): the general way leaves the record to the main thread
      r = make(type)
      made.set(id, r)
    }
    return r
  }

  /**
   * Each record of a job, in order: `take(i, value)` for a value this thread reads as the expected
   * type (null: none is read), then `after(i)` for every record. A record whose reading or taking
   * throws is left to the main thread, which judges it as its own decode would; `take` must then
   * have kept nothing of it. A record `direct(i, values, start, end)` takes from its bytes (true)
   * is not read.
   */
  each(
    job: DecodeJob<unknown>,
    expected: string | null,
    take: (i: number, value: object) => void,
    after?: (i: number) => void,
    direct?: (i: number, values: Buffer, start: number, end: number) => boolean,
  ): void {
    const values = Buffer.from(job.values.buffer, job.values.byteOffset, job.values.length)
    let start = 0
    for (let i = 0; i < job.ends.length; i++) {
      const end = job.ends[i]!
      try {
        const value = expected === null || direct?.(i, values, start, end) ? null : this.read(values, start, end, expected)
        if (value) take(i, value)
      } catch {
        // Left to the main thread (an undecodable value, a rule that threw, a row RowBinary refused).
      }
      start = end
      after?.(i)
    }
  }

  read(values: Buffer, start: number, end: number, expected: string): object | null {
    const id = schemaIdOf(values, start, end)
    const t = this.types.get(id)
    if (!t) return null
    const value = readPayload(t, id, values, start, end)
    return value !== null && typeof value === 'object' && typeNameOf(value) === expected ? value : null
  }
}

/**
 * Serves a decode thread's jobs with `handle`: a reply is posted with the buffers of `transfer`
 * handed over, not copied; a job that throws is answered with its error (the main thread then
 * ends this thread and starts another). Jobs wait in arrival order and are taken by (after, id)
 * (DecodeJob.after), one per turn of the event loop, so the jobs sent while one is decoded are
 * all here when the next is chosen.
 */
export function serveDecodeJobs<Setup, Reply extends { id: number }>(handle: (job: DecodeJob<Setup>) => Reply, transfer: (reply: Reply) => ArrayBufferLike[]): void {
  const waiting: DecodeJob<Setup>[] = []
  let scheduled = false
  const schedule = () => {
    if (scheduled) return
    scheduled = true
    setImmediate(next)
  }
  const next = () => {
    scheduled = false
    const job = takeNext(waiting)
    if (!job) return
    if (waiting.length) schedule()
    let reply: Reply
    try {
      reply = handle(job)
    } catch (err) {
      parentPort!.postMessage({ id: job.id, error: (err as Error).message ?? String(err) })
      return
    }
    parentPort!.postMessage(reply, transfer(reply) as ArrayBuffer[])
  }
  parentPort?.on('message', (job: DecodeJob<Setup>) => {
    waiting.push(job)
    schedule()
  })
  // Its modules are loaded: the thread takes jobs from now on (DecodeThread.ready).
  parentPort?.postMessage({ ready: true })
}

/**
 * Removes and returns the job to decode next of those waiting (in arrival order): the lowest
 * (after, id). What the jobs that came before it carry for the jobs after them (the setup, writer
 * schemas) it takes along, so a job taken ahead of them is decoded as it would have been after them.
 */
export function takeNext<Setup>(waiting: DecodeJob<Setup>[]): DecodeJob<Setup> | undefined {
  if (!waiting.length) return undefined
  let at = 0
  for (let i = 1; i < waiting.length; i++) {
    const a = waiting[i]!
    const b = waiting[at]!
    const aAfter = a.after ?? a.id
    const bAfter = b.after ?? b.id
    if (aAfter < bAfter || (aAfter === bAfter && a.id < b.id)) at = i
  }
  const job = waiting.splice(at, 1)[0]!
  const carried: [number, string][] = []
  for (let i = 0; i < at; i++) {
    const earlier = waiting[i]!
    if (earlier.setup !== null) {
      job.setup ??= earlier.setup
      earlier.setup = null
    }
    carried.push(...earlier.schemas)
    earlier.schemas = []
  }
  if (carried.length) job.schemas = [...carried, ...job.schemas]
  return job
}

/** `value`'s index in `list`, added at the end when it is not there yet (a reply's few distinct currencies). */
function indexIn(list: string[], value: string): number {
  const i = list.indexOf(value)
  return i < 0 ? list.push(value) - 1 : i
}

/**
 * A reply's currencies (`list`) and each record's index in it: from a decoded event's text, or from
 * a fast path's three-letter number (currencyText), the last of which is remembered (a reply's
 * records are mostly of one currency).
 */
export class Currencies {
  readonly list: string[] = []
  private lastCode = -1
  private lastIndex = 0

  ofText(currency: string): number {
    return indexIn(this.list, currency)
  }

  ofCode(code: number): number {
    if (code !== this.lastCode) {
      this.lastCode = code
      this.lastIndex = indexIn(this.list, currencyText(code))
    }
    return this.lastIndex
  }
}
