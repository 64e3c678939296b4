import { Worker } from 'node:worker_threads'
import client from 'prom-client'
import { registry } from '../../../common/runtime/metrics.ts'
import type { Logger } from '../../../common/logger.ts'
import type { Store } from '../../../common/store/clickhouse.ts'
import { columnsMessage, type CustomerColumns } from './customer-columns.ts'
import { NO_CONTENT, type AnalyticsEndpoint } from './endpoint.ts'
import type { CommonOptions } from './options.ts'

/**
 * Analytics body workers: worker threads that compute the bodies of requests answered from a
 * tenant summary, so filtered answers use every core instead of queueing on the thread that also
 * serves HTTP (docs/analytics-performance.md, "Worker threads").
 *
 * Each summary the main thread keeps is published to every worker: the customer columns travel as
 * shared memory (no copy), the stored parts are copied once per refresh (`revive` rebuilds the
 * class instances among them). Once a worker has prepared it (as the main thread did: the orders
 * and groupings the requests walk), a request runs the same endpoint body in the least busy such
 * worker, as of the same reference instant.
 *
 * The queries a body still makes (the rows of a page, segment movements, a filter the columns
 * cannot evaluate) run on the main thread, which holds the store, and their rows go back to the
 * worker. What a worker cannot do (anything but a query's rows) comes back as `live`, and the main
 * thread answers that request itself, as it does every request when a worker fails, does not
 * answer within REPLY_TIMEOUT_MS, or does not hold the tenant's current summary. A body that
 * refuses its request (an error with a 4xx status) is refused on the main thread with the same
 * error, not computed twice. A worker that stops is started again after a back-off (1 s, doubled
 * for each stop in a row, at most a minute); meanwhile the others answer.
 */
export interface BodyRunner {
  /** The body computed by a worker, or null: answer on the main thread. */
  body(ep: AnalyticsEndpoint, q: CommonOptions, nowMs: number): Promise<{ body: unknown } | null>
}

export const LIVE = 'a live query is needed'

/** Main → worker. */
export type WorkerRequest =
  | { kind: 'publish'; tenantId: number; publication: number; referenceMs: number; values: Map<string, unknown>; columns: Record<string, unknown> }
  | { kind: 'drop'; tenantId: number }
  | { kind: 'body'; id: number; tenantId: number; path: string; query: unknown; nowMs: number }
  | { kind: 'rows'; query: number; value?: unknown; error?: string }

/** A query a body makes (its store.query arguments), run on the main thread for a worker. */
export type QueryArgs = { query: string; query_params?: Record<string, unknown>; format?: string }

/** Worker → main: a body's outcome, or a publication prepared (the worker then takes the tenant's requests). */
export type WorkerReply =
  | { id: number; outcome: 'body'; body: unknown; columnar?: number }
  | { id: number; outcome: 'no_content'; columnar?: number }
  | { id: number; outcome: 'live'; needs?: string; columnar?: number }
  | { id: number; outcome: 'failed'; error: string; columnar?: number }
  /** The body itself refused the request (an error with a 4xx status): the main thread answers with the same. */
  | { id: number; outcome: 'refused'; status: number; message: string; columnar?: number }
export type WorkerMessage = WorkerReply | { ready: number; tenantId: number } | { query: number; args: QueryArgs; read: 'json' | 'text' }

/** What a summary publishes: the same objects the main thread answers from. */
export interface PublishedSummary {
  referenceMs: number
  values: Map<string, unknown>
  columns: CustomerColumns
}

const answers = new client.Counter({ name: 'cdp_analytics_worker_answers_total', help: 'Analytics bodies sent to a worker thread, by outcome (body: answered there; refused: the body refused the request, a 4xx; live: it needed what a worker cannot do; failed: the main thread answered)', labelNames: ['outcome'] as const, registers: [registry] })
const workersGauge = new client.Gauge({ name: 'cdp_analytics_workers', help: 'Analytics body worker threads running', registers: [registry] })
const readyGauge = new client.Gauge({ name: 'cdp_analytics_worker_summaries_ready', help: 'Tenant summaries prepared in the analytics workers (one per worker and tenant): a worker takes a tenant\'s requests once its summary is prepared there', registers: [registry] })

/** How long a request waits for its worker before the main thread answers it instead. */
const REPLY_TIMEOUT_MS = 30_000
/** A worker that stopped is started again after this, doubled for each stop in a row, up to RESTART_MAX_MS. */
const RESTART_AFTER_MS = 1000
const RESTART_MAX_MS = 60_000

interface Slot {
  worker: Worker
  pending: Map<number, (r: WorkerReply | null) => void>
  /** Per tenant, the publication the worker has prepared. */
  ready: Map<number, number>
}

export interface BodyWorkersOptions {
  size: number
  /** Runs the queries the workers' bodies make. */
  store: Store
  logger: Logger
  logLevel?: string
  /** The customer columns of the tenant's usable summary now (the summary a request would be answered from). */
  columnsOf: (tenantId: number) => CustomerColumns | undefined
  /** Counts columnar answers the workers made (their own metrics registry is not exported). */
  onColumnar?: (n: number) => void
}

export class BodyWorkers implements BodyRunner {
  private readonly slots: (Slot | null)[]
  private readonly published = new Map<number, { summary: PublishedSummary; message: Extract<WorkerRequest, { kind: 'publish' }> }>()
  private publications = 0
  /** Per slot: stops in a row (reset by a worker that lived a minute) and when it may start again. */
  private readonly stops: number[]
  private readonly restartAt: number[]
  private nextId = 1
  private closed = false

  constructor(private readonly opts: BodyWorkersOptions) {
    this.slots = Array.from({ length: Math.max(0, opts.size) }, () => null)
    this.stops = this.slots.map(() => 0)
    this.restartAt = this.slots.map(() => 0)
  }

  /** Hands a tenant's new summary to every worker (started on the first). */
  publish(tenantId: number, summary: PublishedSummary): void {
    if (this.closed || !this.slots.length) return
    const message = { kind: 'publish' as const, tenantId, publication: ++this.publications, referenceMs: summary.referenceMs, values: summary.values, columns: columnsMessage(summary.columns) }
    this.published.set(tenantId, { summary, message })
    for (let k = 0; k < this.slots.length && this.published.has(tenantId); k++) {
      const s = this.slots[k]
      if (s) this.post(s, message)
      else this.start(k) // which sends it every published summary
    }
    this.countReady()
  }

  /** Forgets a tenant's summary (invalidated or gone): its requests are answered on the main thread. */
  drop(tenantId: number): void {
    if (!this.published.delete(tenantId)) return
    for (const s of this.slots) if (s) this.post(s, { kind: 'drop', tenantId })
    this.countReady()
  }

  async body(ep: AnalyticsEndpoint, q: CommonOptions, nowMs: number): Promise<{ body: unknown } | null> {
    const p = this.published.get(q.tenant_id)
    if (this.closed || !p || this.opts.columnsOf(q.tenant_id) !== p.summary.columns) return null
    const slot = this.leastBusy(q.tenant_id, p.message.publication)
    if (!slot) return null
    const id = this.nextId++
    const reply = await new Promise<WorkerReply | null>((resolve) => {
      const timer = setTimeout(() => {
        slot.pending.delete(id)
        this.opts.logger.warn({ path: ep.path, ms: REPLY_TIMEOUT_MS }, 'an analytics worker did not answer in time; the main thread answers')
        resolve(null)
      }, REPLY_TIMEOUT_MS)
      timer.unref()
      slot.pending.set(id, (r) => {
        clearTimeout(timer)
        resolve(r)
      })
      if (!this.post(slot, { kind: 'body', id, tenantId: q.tenant_id, path: ep.path, query: q, nowMs })) slot.pending.get(id)!(null)
    })
    answers.inc({ outcome: reply?.outcome === 'no_content' ? 'body' : (reply?.outcome ?? 'failed') })
    if (!reply || reply.outcome === 'failed' || reply.outcome === 'live') {
      // The main thread computes the body again, counting its own columnar answers.
      if (reply?.outcome === 'failed') this.opts.logger.warn({ path: ep.path, error: reply.error }, 'an analytics worker failed a body; the main thread answers it')
      if (reply?.outcome === 'live') this.opts.logger.debug({ path: ep.path, needs: reply.needs }, 'an analytics body needs what a worker cannot do: the main thread answers it')
      return null
    }
    if (reply.columnar) this.opts.onColumnar?.(reply.columnar)
    if (reply.outcome === 'refused') throw Object.assign(new Error(reply.message), { status: reply.status })
    return { body: reply.outcome === 'body' ? reply.body : NO_CONTENT }
  }

  /** How many workers have prepared the tenant's current summary (they take its requests). */
  ready(tenantId: number): number {
    const p = this.published.get(tenantId)
    return p ? this.slots.filter((s) => s?.ready.get(tenantId) === p.message.publication).length : 0
  }

  async close(): Promise<void> {
    this.closed = true
    const running = this.slots.filter((s): s is Slot => s !== null)
    this.slots.fill(null)
    this.published.clear()
    workersGauge.set(0)
    readyGauge.set(0)
    for (const s of running) this.settle(s)
    await Promise.all(running.map((s) => s.worker.terminate()))
  }

  /** The least busy worker that has prepared the tenant's current publication, or null (none yet: the main thread answers). */
  private leastBusy(tenantId: number, publication: number): Slot | null {
    let best: Slot | null = null
    for (let k = 0; k < this.slots.length; k++) {
      const s = this.slots[k] ?? this.start(k)
      if (!s || s.ready.get(tenantId) !== publication) continue
      if (!best || s.pending.size < best.pending.size) best = s
    }
    return best
  }

  private countReady(): void {
    let n = 0
    for (const t of this.published.keys()) n += this.ready(t)
    readyGauge.set(n)
  }

  /** Starts slot k's worker, unless it stopped too recently (null: the other workers or the main thread answer meanwhile). */
  private start(k: number): Slot | null {
    if (this.closed || Date.now() < this.restartAt[k]!) return null
    let worker: Worker
    try {
      worker = new Worker(new URL('./body-worker.mjs', import.meta.url), { workerData: { logLevel: this.opts.logLevel } })
    } catch (err) {
      this.backOff(k)
      this.opts.logger.error({ err }, 'an analytics worker could not be started; the main thread answers meanwhile')
      return null
    }
    const started = Date.now()
    const slot: Slot = { worker, pending: new Map(), ready: new Map() }
    this.slots[k] = slot
    worker.unref()
    worker.on('message', (r: WorkerMessage) => {
      if ('ready' in r) {
        slot.ready.set(r.tenantId, r.ready)
        this.countReady()
        return
      }
      if ('args' in r) return void this.runQuery(slot, r.query, r.args, r.read)
      const resolve = slot.pending.get(r.id)
      slot.pending.delete(r.id)
      resolve?.(r)
    })
    const lost = (why: unknown) => {
      if (this.slots[k] !== slot) return
      this.slots[k] = null // a request or publish after the back-off starts another
      if (Date.now() - started >= RESTART_MAX_MS) this.stops[k] = 0
      this.backOff(k)
      workersGauge.set(this.running())
      this.countReady()
      this.settle(slot)
      if (!this.closed) this.opts.logger.error({ err: why, restartInMs: this.restartAt[k]! - Date.now() }, 'an analytics worker stopped; its requests are answered by the others or the main thread')
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`exit code ${code}`)))
    for (const { message } of this.published.values()) this.post(slot, message)
    workersGauge.set(this.running())
    return slot
  }

  /** A worker's query, on the main thread's store: its rows (or its error) go back. */
  private async runQuery(slot: Slot, query: number, args: QueryArgs, read: 'json' | 'text'): Promise<void> {
    let m: WorkerRequest
    try {
      const rs = await this.opts.store.query({ ...args, format: (args.format ?? 'JSONEachRow') as 'JSONEachRow' })
      m = { kind: 'rows', query, value: read === 'json' ? await rs.json() : await rs.text() }
    } catch (err) {
      m = { kind: 'rows', query, error: String((err as Error)?.message ?? err) }
    }
    // Rows that cannot be sent (not copyable) go back as an error, so the worker's body ends.
    if (this.slots.includes(slot) && !this.post(slot, m)) this.post(slot, { kind: 'rows', query, error: 'the rows could not be sent to the worker' })
  }

  private backOff(k: number): void {
    this.stops[k] = this.stops[k]! + 1
    this.restartAt[k] = Date.now() + Math.min(RESTART_MAX_MS, RESTART_AFTER_MS * 2 ** (this.stops[k]! - 1))
  }

  private running(): number {
    return this.slots.filter((s) => s !== null).length
  }

  /** Answers every request a worker still owes with null (the main thread takes them). */
  private settle(slot: Slot): void {
    for (const resolve of slot.pending.values()) resolve(null)
    slot.pending.clear()
  }

  private post(slot: Slot, m: WorkerRequest): boolean {
    try {
      slot.worker.postMessage(m)
      return true
    } catch (err) {
      // A part that cannot be copied (DataCloneError): this tenant stays on the main thread.
      this.opts.logger.warn({ err, kind: m.kind }, 'a message to an analytics worker could not be sent')
      if (m.kind === 'publish') this.drop(m.tenantId)
      return false
    }
  }
}
