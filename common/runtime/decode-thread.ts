import { Worker } from 'node:worker_threads'
import type { LogRecord } from '../eventlog/port.ts'
import type { SchemaRegistryPort } from '../eventlog/schema-registry.ts'
import type { DecodeJob } from './decode-thread-worker.ts'
import { workerBundle } from './worker-bundle.ts'

export type { DecodeJob }

/** An idle thread ends after this long; the next job starts another. */
const IDLE_MS = 30_000
/** After a thread that could not load, start() waits this long before another. */
const RESPAWN_AFTER_MS = 30_000

/**
 * A consumer's decode thread: record values go to a worker (its entry module serves them with
 * `serveDecodeJobs`, decode-thread-worker.ts), which decodes and checks them while the main thread
 * reads the log and writes to the store. On two cores the main thread did all of it, and was the
 * bottleneck of the projection and of the feature consumer (docs/analytics-performance.md,
 * "Ingest"). Jobs are answered in the order they are sent, but for groups (run). A thread that
 * fails fails the jobs it holds (their batches are delivered again) and the next job starts a new one.
 *
 * `Setup` is what a thread needs once (sent with its first job); `Reply` what the worker answers.
 */
export class DecodeThread<Setup, Reply extends { id: number }> {
  private worker: Worker | null = null
  private seq = 0
  /** Jobs sent and not answered yet, by id: with their group. */
  private readonly pending = new Map<number, { resolve: (r: Reply) => void; reject: (err: Error) => void; group: number | undefined }>()
  /** Schema ids the current thread has been sent. */
  private sent = new Set<number>()
  private setupSent = false
  private idleTimer: NodeJS.Timeout | null = null
  private readyWorker: Worker | null = null
  /** When a thread last ended before it had loaded: start() waits RESPAWN_AFTER_MS before trying again. */
  private failedLoadAt = -Infinity
  /** Of the current thread: true once it says it has loaded, false if it ends first. */
  private loaded: Promise<boolean> = Promise.resolve(false)
  /** Threads whenReady gave up on. */
  private readonly waitedInVain = new WeakSet<Worker>()
  /** Threads this side ended (closed, idle, failed a job): their exit is no failure to load. */
  private readonly ended = new WeakSet<Worker>()

  /**
   * @param entry the worker's `.mjs` entry (it registers tsx and imports the `.ts` module of the same
   * name, which a thread starts from directly once it is bundled: worker-bundle.ts); @param label
   * names the thread in errors.
   */
  constructor(
    private readonly entry: URL,
    private readonly label: string,
  ) {}

  /**
   * Starts the thread ahead of its first job (it loads its modules meanwhile). After a thread that
   * ended before it had loaded, not again for RESPAWN_AFTER_MS: a consumer decodes on its own
   * thread meanwhile instead of spending half a second of CPU on every batch.
   */
  start(): void {
    if (!this.worker && Date.now() - this.failedLoadAt >= RESPAWN_AFTER_MS) this.spawn()
  }

  /**
   * The thread has loaded its modules and answers at once. A worker takes about a tenth of a second
   * to load them from its bundle (worker-bundle.ts), a quarter of a second through tsx; a consumer
   * decodes small batches on its own thread until then rather than wait (start() begins it).
   */
  get ready(): boolean {
    return this.worker !== null && this.readyWorker === this.worker
  }

  /**
   * True once the thread has loaded (started now if none runs); false when it ended first, could
   * not be started (RESPAWN_AFTER_MS), or `timeoutMs` passed. A consumer's first large batches
   * wait for it: decoding them on the consumer's thread would hold up what it does meanwhile
   * (restoring its partitions), and the thread is usually ready sooner than they are decoded.
   */
  whenReady(timeoutMs: number): Promise<boolean> {
    this.start()
    const worker = this.worker
    // A thread that kept one caller waiting in vain keeps no other waiting (it may hang until its idle end).
    if (this.ready || !worker || this.waitedInVain.has(worker)) return Promise.resolve(this.ready)
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs)
      timer.unref()
    })
    return Promise.race([this.loaded, timedOut]).then((ready) => {
      clearTimeout(timer)
      if (!ready) this.waitedInVain.add(worker)
      return ready
    })
  }

  /**
   * The worker's answer for these records' values (schemas the registry knows are sent along;
   * `setup` with a thread's first job); `now` is the time the worker's rules judge by. Jobs are
   * decoded in the order they are sent, except that a job of a `group` is decoded right behind
   * the jobs of its group sent before it and not answered yet (the feature consumer's: a
   * partition's order batch and customer batch, written together once both are decoded).
   */
  run(records: readonly LogRecord[], registry: SchemaRegistryPort, setup: Setup, now = Date.now(), group?: number): Promise<Reply> {
    const worker = this.worker ?? this.spawn()
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = null
    worker.ref()
    const n = records.length
    // Each value read once (copyValueInto where the log has it: an embedded log record makes a
    // view of its chunk at every read of `value`).
    const read: (Buffer | null)[] = new Array(n)
    const lengths = new Int32Array(n)
    let total = 0
    for (let i = 0; i < n; i++) {
      const r = records[i]!
      const len = r.copyValueInto && r.valueLength !== undefined ? r.valueLength : ((read[i] = r.value)?.length ?? -1)
      lengths[i] = len
      if (len > 0) total += len
    }
    const values = new Uint8Array(total)
    const ends = new Int32Array(n)
    const schemas: [number, string][] = []
    let pos = 0
    let lastId = -1
    for (let i = 0; i < n; i++) {
      const len = lengths[i]!
      if (len >= 0) {
        const v = read[i]
        if (v) values.set(v, pos)
        else records[i]!.copyValueInto!(values, pos)
        const at = pos
        pos += len
        if (len >= 5 && values[at] === 0) {
          const id = ((values[at + 1]! << 24) | (values[at + 2]! << 16) | (values[at + 3]! << 8) | values[at + 4]!) >>> 0
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
    let after = id
    // Behind the oldest of its group's jobs still pending, by that job's id (not its place, which may
    // itself come from an older job): a group that always has a job pending does not keep moving ahead.
    if (group !== undefined) for (const [pendingId, p] of this.pending) if (p.group === group) after = Math.min(after, pendingId)
    const job: DecodeJob<Setup> = { id, topic: records[0]?.topic ?? '', values, ends, schemas, setup: this.setupSent ? null : setup, now, after }
    this.setupSent = true
    return new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, group })
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
    this.forget(new Error(`the ${this.label} thread was closed`))
    if (worker) await this.end(worker)
  }

  private end(worker: Worker): Promise<number> {
    this.ended.add(worker)
    return worker.terminate()
  }

  private spawn(): Worker {
    const worker = new Worker(workerBundle(new URL(this.entry.href.replace(/\.mjs$/, '.ts'))) ?? this.entry)
    this.worker = worker
    this.sent = new Set()
    this.setupSent = false
    let settleLoaded!: (ready: boolean) => void
    this.loaded = new Promise((resolve) => (settleLoaded = resolve))
    worker.unref()
    worker.on('message', (reply: Reply | { id: number; error: string } | { ready: true }) => {
      if ('ready' in reply) {
        if (this.worker === worker) this.readyWorker = worker
        settleLoaded(true)
        return
      }
      const waiting = this.pending.get(reply.id)
      if (!waiting) return
      this.pending.delete(reply.id)
      if ('error' in reply) {
        // A job the thread could not do at all: this thread is done with (what it holds fails too),
        // and the next job starts another, sent its setup and schemas afresh.
        const err = new Error(`${this.label} thread: ${reply.error}`)
        waiting.reject(err)
        if (this.worker === worker) this.forget(err)
        void this.end(worker)
        return
      }
      waiting.resolve(reply)
      if (this.pending.size === 0 && this.worker === worker) this.idle(worker)
    })
    const fail = (err: Error) => {
      settleLoaded(false)
      if (this.readyWorker !== worker && !this.ended.has(worker)) this.failedLoadAt = Date.now()
      if (this.worker === worker) this.forget(err)
    }
    worker.on('error', fail)
    worker.once('exit', (code) => fail(new Error(`the ${this.label} thread exited (code ${code})`)))
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
      void this.end(worker)
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
