import { Worker } from 'node:worker_threads'
import type { LogRecord } from '../../common/eventlog/port.ts'
import type { SchemaRegistryPort } from '../../common/eventlog/schema-registry.ts'
import type { OrderRowsJob, OrderRowsReply } from './order-rows-worker.ts'

export type { OrderRowsReply }

/** An idle thread ends after this long; the next job starts another. */
const IDLE_MS = 30_000

/**
 * The projection's decode thread: decodes order records, checks them and encodes their rows
 * (order-rows-worker.ts) while the main thread reads the log and writes to the store. On two
 * cores the main thread did all of it, and was the ingest's bottleneck (docs/analytics-performance.md,
 * "Ingest"). Jobs are answered in the order they are sent. A thread that fails fails the jobs it
 * holds (their batches are delivered again) and the next job starts a new one.
 */
export class OrderRowsThread {
  private worker: Worker | null = null
  private seq = 0
  private readonly pending = new Map<number, { resolve: (r: OrderRowsReply) => void; reject: (err: Error) => void }>()
  /** Schema ids the current thread has been sent. */
  private sent = new Set<number>()
  private setupSent = false
  private idleTimer: NodeJS.Timeout | null = null

  /** Starts the thread ahead of its first job (it loads its modules meanwhile). */
  start(): void {
    if (!this.worker) this.spawn()
  }

  /**
   * The rows of these records' values (schemas the registry knows are sent along). `setup`: the
   * rows' column types and the record type of the orders topic, sent to a thread with its first job.
   */
  rows(records: readonly LogRecord[], registry: SchemaRegistryPort, setup: { types: string[]; expected: string }): Promise<OrderRowsReply> {
    const worker = this.worker ?? this.spawn()
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = null
    worker.ref()
    const n = records.length
    // Each value read once: an embedded log record makes a view of its chunk at every read.
    const read: (Buffer | null)[] = new Array(n)
    let total = 0
    for (let i = 0; i < n; i++) total += (read[i] = records[i]!.value)?.length ?? 0
    const values = new Uint8Array(total)
    const ends = new Int32Array(n)
    const schemas: [number, string][] = []
    let pos = 0
    let lastId = -1
    for (let i = 0; i < n; i++) {
      const v = read[i]
      if (v) {
        values.set(v, pos)
        pos += v.length
        if (v.length >= 5 && v[0] === 0) {
          const id = v.readUInt32BE(1)
          if (id !== lastId && !this.sent.has(id)) {
            const schema = registry.knownSchema(id)
            if (schema !== undefined) {
              schemas.push([id, schema])
              this.sent.add(id)
            }
          }
          lastId = id
        }
      }
      ends[i] = pos
    }
    const id = ++this.seq
    const job: OrderRowsJob = { kind: 'rows', id, values, ends, schemas, setup: this.setupSent ? null : setup, now: Date.now() }
    this.setupSent = true
    return new Promise<OrderRowsReply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      try {
        worker.postMessage(job, [values.buffer, ends.buffer])
      } catch (err) {
        this.pending.delete(id)
        if (this.pending.size === 0 && this.worker === worker) this.idle(worker)
        reject(err as Error)
      }
    })
  }

  async close(): Promise<void> {
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = null
    const worker = this.worker
    this.forget(new Error('the order rows thread was closed'))
    await worker?.terminate()
  }

  private spawn(): Worker {
    const worker = new Worker(new URL('./order-rows-worker.mjs', import.meta.url))
    this.worker = worker
    this.sent = new Set()
    this.setupSent = false
    worker.unref()
    worker.on('message', (reply: OrderRowsReply | { id: number; error: string }) => {
      const waiting = this.pending.get(reply.id)
      if (!waiting) return
      this.pending.delete(reply.id)
      if ('error' in reply) {
        // A job the thread could not do at all: this thread is done with (what it holds fails too),
        // and the next job starts another, sent its setup and schemas afresh.
        waiting.reject(new Error(`order rows thread: ${reply.error}`))
        if (this.worker === worker) this.forget(new Error(`order rows thread: ${reply.error}`))
        void worker.terminate()
        return
      }
      waiting.resolve(reply)
      if (this.pending.size === 0 && this.worker === worker) this.idle(worker)
    })
    const fail = (err: Error) => {
      if (this.worker === worker) this.forget(err)
    }
    worker.on('error', fail)
    worker.once('exit', (code) => fail(new Error(`the order rows thread exited (code ${code})`)))
    this.idle(worker)
    return worker
  }

  /** No job held: the thread no longer keeps the process alive, and ends if none comes. */
  private idle(worker: Worker): void {
    worker.unref()
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = setTimeout(() => {
      if (this.worker !== worker || this.pending.size) return
      this.worker = null
      void worker.terminate()
    }, IDLE_MS)
    this.idleTimer.unref()
  }

  /** The thread is gone: its jobs fail, and the next job starts a new one. */
  private forget(err: Error): void {
    this.worker = null
    const waiting = [...this.pending.values()]
    this.pending.clear()
    for (const w of waiting) w.reject(err)
  }
}
