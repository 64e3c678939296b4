import os from 'node:os'
import { Worker } from 'node:worker_threads'
import type { Logger } from '../../common/logger.ts'
import { workerBundle } from '../../common/runtime/worker-bundle.ts'
import { float64Of } from '../../common/typed-arrays.ts'
import { bestMbgNbd, compressPatterns, fitGammaGamma, fitMbgNbdFromDefault, fitMbgNbdSeeded, mbgNbdNeedsSeed, seedSample, TRANSACTION_MODELS, type GammaGammaFit, type TransactionFit, type TransactionModelName } from './clv/index.ts'
import { buildTenantModel, clvFitOf, clvInputs, clvRefitNeeded, fitClvOn, rfmModelPart, type ClvFit, type TenantModel } from './model.ts'
import { customerAgeDays, type CustomerAggregates } from './order-facts.ts'
import type { WorkerJob } from './compute-worker.ts'
import { clvSumsOf, type ClvSums, type ClvSumsJob } from './clv-sums.ts'
import { memoKey, type ClvMemo } from './features.ts'

/**
 * A tenant's CLV fit on more than one core (docs/features.md, "Full recompute"): the same fits as
 * `fitClv` (model.ts), with their independent parts on worker threads beside the main one.
 *
 * - Gamma-Gamma (the spend model) does not depend on the purchase model: a worker fits it.
 * - MBG/NBD runs a second time from the BG/NBD optimum when its first run ends on the rare-dropout
 *   ridge (clv/mbgnbd.ts). That second run does not depend on the first, so a worker starts it at
 *   once; it is kept only when the first run asks for it, and stopped otherwise.
 *
 * Each worker runs the same pure functions on the same numbers, so the fit is identical to the one
 * thread's, bit for bit (tested). Below `minCustomers` buyers, or when a worker cannot start or
 * fails, everything is fitted here, in order.
 */
export const PARALLEL_FIT_FROM = 100_000

export interface Pending<T> {
  result: Promise<T>
  stop(): void
}

/**
 * Fit workers alive in this process, busy or idle, at most one per core the process may use (at
 * least two): concurrent recomputes of large tenants (the scheduler runs schedules side by side)
 * then fit on their own thread rather than pile threads and copies of a million customers onto the
 * cores. A worker that has answered waits IDLE_MS for its next job (a recompute's CLV sums follow
 * its fit) without keeping the process alive, then ends.
 */
const MAX_WORKERS = Math.max(2, os.availableParallelism())
const IDLE_MS = 30_000
let alive = 0
let started = 0
const idle: Worker[] = []
const idleTimers = new Map<Worker, NodeJS.Timeout>()

/** An idle worker, else a new one while fewer than MAX_WORKERS are alive; null otherwise. */
function acquire(): Worker | null {
  const ready = idle.pop()
  if (ready) {
    clearTimeout(idleTimers.get(ready))
    idleTimers.delete(ready)
    ready.ref()
    return ready
  }
  return alive < MAX_WORKERS ? startWorker() : null
}

function startWorker(): Worker {
  // From one bundled file once one is built (common/runtime/worker-bundle.ts): its modules load in
  // tens of milliseconds where tsx transforms each one (about half a second of a core a thread).
  const worker = new Worker(workerBundle(new URL('./compute-worker.ts', import.meta.url)) ?? new URL('./compute-worker.mjs', import.meta.url))
  alive++
  started++
  // A busy worker's error rejects its job (spawn); an idle one's must not go unhandled.
  worker.on('error', () => undefined)
  worker.once('exit', () => {
    alive--
    clearTimeout(idleTimers.get(worker))
    idleTimers.delete(worker)
    const i = idle.indexOf(worker)
    if (i >= 0) idle.splice(i, 1)
  })
  return worker
}

function release(worker: Worker): void {
  worker.unref()
  idle.push(worker)
  const timer = setTimeout(() => {
    // Out of the pool before it ends, so no job is given to a worker on its way out.
    const i = idle.indexOf(worker)
    if (i >= 0) idle.splice(i, 1)
    idleTimers.delete(worker)
    void worker.terminate()
  }, IDLE_MS)
  timer.unref()
  idleTimers.set(worker, timer)
}

/**
 * Makes up to `n` workers idle ahead of a large fit (starting those missing), so that they load their modules (the TypeScript
 * sources through tsx, about half a second) while the caller still reads its data.
 */
export function prestartFitWorkers(n: number): void {
  for (let i = idle.length; i < n && alive < MAX_WORKERS; i++) release(startWorker())
}

/** Fit workers alive (busy or idle), idle, and started since the process began. */
export function fitWorkerCounts(): { alive: number; idle: number; started: number } {
  return { alive, idle: idle.length, started }
}

/**
 * A worker thread for one job, sent with `send` (it may come later: a new worker loads its modules
 * meanwhile); null when MAX_WORKERS are busy (the caller computes it itself).
 */
function spawn<T>(): (Pending<T> & { send(job: WorkerJob, transfer?: ArrayBuffer[]): void }) | null {
  const worker = acquire()
  if (!worker) return null
  let settled = false
  let stopped = false
  let sent = false
  let onMessage!: (m: { ok: boolean; fit?: T; error?: string }) => void
  let onError!: (err: Error) => void
  let onExit!: (code: number) => void
  const done = () => {
    settled = true
    worker.off('message', onMessage).off('error', onError).off('exit', onExit)
  }
  const result = new Promise<T>((resolve, reject) => {
    onMessage = (m) => {
      done()
      if (!stopped) release(worker)
      if (m.ok) resolve(m.fit!)
      else reject(new Error(m.error))
    }
    onError = (err) => {
      done()
      reject(err)
    }
    onExit = (code) => {
      done()
      reject(new Error(`fit worker exited with code ${code}`))
    }
    worker.once('message', onMessage).once('error', onError).once('exit', onExit)
  })
  // An answer nobody waits for any more (a stopped run) is no unhandled rejection.
  result.catch(() => undefined)
  // stop() ends a worker whose answer is no longer wanted (it may still be computing); one that
  // was never sent a job goes back to the pool as it was.
  const stop = () => {
    if (settled) return
    if (!sent) {
      done()
      release(worker)
      return
    }
    stopped = true
    void worker.terminate()
  }
  const send = (job: WorkerJob, transfer: ArrayBuffer[] = []) => {
    sent = true
    try {
      worker.postMessage(job, transfer)
    } catch (err) {
      stop()
      throw err
    }
  }
  return { result, stop, send }
}

/** The job on a worker thread; null when MAX_WORKERS are busy (the caller computes it itself). */
export function inWorker<T>(job: WorkerJob, transfer: ArrayBuffer[]): Pending<T> | null {
  const w = spawn<T>()
  w?.send(job, transfer)
  return w
}

export async function fitClvParallel(
  aggs: readonly CustomerAggregates[],
  nowMs: number,
  modelName: TransactionModelName,
  referenceMs: number,
  opts: { minCustomers?: number; logger?: Logger } = {},
): Promise<ClvFit | null> {
  return (await fitClvParallelWithWork(aggs, nowMs, modelName, referenceMs, opts))?.clv ?? null
}

/** fitClvParallel with the purchase model's own fit (its iterations and evaluations, which ClvFit leaves out). */
export async function fitClvParallelWithWork(
  aggs: readonly CustomerAggregates[],
  nowMs: number,
  modelName: TransactionModelName,
  referenceMs: number,
  opts: { minCustomers?: number; logger?: Logger } = {},
): Promise<{ clv: ClvFit; transaction: TransactionFit } | null> {
  const inputs = clvInputs(aggs, modelName, referenceMs)
  if (!inputs) return null
  const { data, spend, options } = inputs
  const serial = () => fitClvOn(inputs, nowMs)
  if (data.length < (opts.minCustomers ?? PARALLEL_FIT_FROM)) return serial()

  const fallback = <T>(what: string, compute: () => T) => (err: unknown): T => {
    opts.logger?.warn({ err: (err as Error).message, fit: what }, 'a CLV fit worker failed; fitting on the main thread')
    return compute()
  }
  let gg: Pending<GammaGammaFit> | null = null
  let seeded: ReturnType<typeof spawn<TransactionFit>> = null
  try {
    // Started first: the seeded run's worker loads its modules while the patterns are compressed.
    if (modelName === 'mbgnbd' && options?.initial === undefined) seeded = spawn<TransactionFit>()
    if (inputs.fitsSpend) {
      const x = float64Of(spend.length, (i) => spend[i]!.x)
      const zbar = float64Of(spend.length, (i) => spend[i]!.zbar)
      gg = inWorker<GammaGammaFit>({ kind: 'gamma-gamma', x, zbar }, [x.buffer as ArrayBuffer, zbar.buffer as ArrayBuffer])
    }
  } catch (err) {
    gg?.stop()
    seeded?.stop()
    opts.logger?.warn({ err: (err as Error).message }, 'CLV fit workers could not start; fitting on the main thread')
    return serial()
  }

  try {
    let fit: TransactionFit
    if (modelName === 'mbgnbd') {
      // Both MBG/NBD runs fit the same patterns, compressed once here (a copy goes to the worker).
      const patterns = compressPatterns(data)
      const sample = seedSample(data)
      if (seeded) {
        const x = float64Of(sample.length, (i) => sample[i]!.x)
        const tx = float64Of(sample.length, (i) => sample[i]!.tx)
        const T = float64Of(sample.length, (i) => sample[i]!.T)
        try {
          seeded.send({ kind: 'mbgnbd-seeded', patterns, x, tx, T, options }, [x.buffer as ArrayBuffer, tx.buffer as ArrayBuffer, T.buffer as ArrayBuffer])
        } catch (err) {
          opts.logger?.warn({ err: (err as Error).message }, 'a CLV fit worker could not start; fitting on the main thread')
          seeded = null
        }
      }
      const first = fitMbgNbdFromDefault(patterns, options)
      if (mbgNbdNeedsSeed(first, options)) {
        const here = () => fitMbgNbdSeeded(patterns, sample, options)
        const second = seeded ? await seeded.result.catch(fallback('mbgnbd-seeded', here)) : here()
        fit = bestMbgNbd(first, second)
      } else fit = first
    } else fit = TRANSACTION_MODELS[modelName].fit(data, options)
    const spendFit = inputs.fitsSpend ? (gg ? await gg.result.catch(fallback('gamma-gamma', () => fitGammaGamma(spend))) : fitGammaGamma(spend)) : null
    return { clv: clvFitOf(inputs, fit, spendFit, nowMs), transaction: fit }
  } finally {
    // A worker whose answer was not needed (or a run that failed here) stops now.
    gg?.stop()
    seeded?.stop()
  }
}

/**
 * buildTenantModel (model.ts) with the CLV, when it is due, fitted by fitClvParallel: the same
 * model, sooner on a large tenant. What the recompute and the feature consumer's model refresh use.
 */
export async function buildTenantModelParallel(
  aggs: readonly CustomerAggregates[],
  nowMs: number,
  opts: Parameters<typeof buildTenantModel>[2],
  logger?: Logger,
): Promise<TenantModel> {
  if (!clvRefitNeeded(opts, nowMs)) return buildTenantModel(aggs, nowMs, opts)
  // This thread's share of the fit runs before the first await; the quintiles and the median are
  // computed here while the workers finish theirs.
  const fitting = fitClvParallel(aggs, nowMs, opts.clvModel, opts.referenceMs ?? nowMs, { logger })
  // Should the quintiles throw, the fit's own failure must not go unhandled.
  fitting.catch(() => undefined)
  const rfm = rfmModelPart(aggs, nowMs)
  return buildTenantModel(aggs, nowMs, { ...opts, fitted: await fitting, rfm })
}

/** Distinct (x, T) from which the purchase curves are split with a worker. */
export const PARALLEL_SUMS_FROM = 50_000

/**
 * Fills `memo` with the purchase curve of every distinct (x, T) of `aggs` (the cumulative expected
 * purchases if alive at each month's end: 12 hypergeometric series with a 12-month horizon), half
 * of them computed on a worker thread while this thread computes the other half. The scoring that
 * follows then finds every curve in the memo. Same function, same numbers: the curves are the ones
 * the memo would have computed itself. Below PARALLEL_SUMS_FROM curves, or with more than the memo
 * holds, it leaves the memo to compute as it goes; a failed worker's half is computed here.
 */
export async function prefillClvMemo(memo: ClvMemo, clv: ClvFit, aggs: readonly CustomerAggregates[], today: number, months: number, opts: { minCurves?: number; logger?: Logger } = {}): Promise<number> {
  const keys = new Set<number>()
  const xs: number[] = []
  const Ts: number[] = []
  for (const a of aggs) {
    if (a.orderCount === 0) continue
    const x = a.repeatPurchases
    const T = customerAgeDays(a, today)
    const key = memoKey(x, T)
    if (key === null || keys.has(key)) continue
    keys.add(key)
    xs.push(x)
    Ts.push(T)
  }
  const n = xs.length
  // A horizon of no month has empty curves: nothing to sum.
  if (n < (opts.minCurves ?? PARALLEL_SUMS_FROM) || months === 0 || !memo.room(n)) return 0
  const job: ClvSumsJob = { kind: 'clv-sums', model: clv.model, params: clv.params, months, x: Float64Array.from(xs), T: Float64Array.from(Ts) }
  const half = Math.floor(n / 2)
  const theirs: ClvSumsJob = { ...job, x: job.x.slice(half), T: job.T.slice(half) }
  let worker: Pending<ClvSums> | null = null
  try {
    worker = inWorker<ClvSums>(theirs, [theirs.x.buffer as ArrayBuffer, theirs.T.buffer as ArrayBuffer])
  } catch (err) {
    opts.logger?.warn({ err: (err as Error).message }, 'a CLV worker could not start; computing every curve here')
  }
  const put = (sums: ClvSums, from: number) => {
    for (let i = 0; i < sums.cumulative.length / months; i++) {
      const j = from + i
      memo.put(clv, months, memoKey(job.x[j]!, job.T[j]!)!, Array.from(sums.cumulative.subarray(i * months, (i + 1) * months)))
    }
  }
  if (!worker) {
    put(clvSumsOf(job, 0, n), 0)
    return n
  }
  try {
    put(clvSumsOf(job, 0, half), 0)
    const rest = await worker.result.catch((err: unknown) => {
      opts.logger?.warn({ err: (err as Error).message }, 'a CLV worker failed; computing its curves here')
      return clvSumsOf(job, half, n)
    })
    put(rest, half)
    return n
  } finally {
    worker.stop()
  }
}
