import os from 'node:os'
import { Worker } from 'node:worker_threads'
import type { Logger } from '../../common/logger.ts'
import { bestMbgNbd, fitGammaGamma, fitMbgNbdFromDefault, fitMbgNbdSeeded, mbgNbdNeedsSeed, TRANSACTION_MODELS, type GammaGammaFit, type TransactionFit, type TransactionModelName } from './clv/index.ts'
import { buildTenantModel, clvFitOf, clvInputs, clvRefitNeeded, fitClvOn, type ClvFit, type TenantModel } from './model.ts'
import type { CustomerAggregates } from './order-facts.ts'
import type { FitJob } from './fit-worker.ts'
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

interface Pending<T> {
  result: Promise<T>
  stop(): void
}

/**
 * Fit workers running in this process, at most one per core the process may use (at least two):
 * concurrent recomputes of large tenants (the scheduler runs schedules side by side) then fit on
 * their own thread rather than pile threads and copies of a million customers onto the cores.
 */
const MAX_WORKERS = Math.max(2, os.availableParallelism())
let running = 0

/** The job on a new worker thread; null when MAX_WORKERS already run (the caller computes it itself). */
function inWorker<T>(job: FitJob, transfer: ArrayBuffer[]): Pending<T> | null {
  if (running >= MAX_WORKERS) return null
  const worker = new Worker(new URL('./fit-worker.mjs', import.meta.url))
  running++
  let ended = false
  const end = () => {
    if (ended) return
    ended = true
    running--
    void worker.terminate()
  }
  const result = new Promise<T>((resolve, reject) => {
    worker.once('message', (m: { ok: boolean; fit?: T; error?: string }) => (m.ok ? resolve(m.fit!) : reject(new Error(m.error))))
    worker.once('error', reject)
    worker.once('exit', (code) => reject(new Error(`fit worker exited with code ${code}`)))
  })
  // The worker ends after answering; stop() ends one whose answer is no longer wanted.
  result.then(end, end)
  try {
    worker.postMessage(job, transfer)
  } catch (err) {
    end()
    throw err
  }
  return { result, stop: end }
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
  let seeded: Pending<TransactionFit> | null = null
  try {
    if (inputs.fitsSpend) {
      const x = Float64Array.from(spend, (s) => s.x)
      const zbar = Float64Array.from(spend, (s) => s.zbar)
      gg = inWorker<GammaGammaFit>({ kind: 'gamma-gamma', x, zbar }, [x.buffer as ArrayBuffer, zbar.buffer as ArrayBuffer])
    }
    if (modelName === 'mbgnbd' && options?.initial === undefined) {
      const x = Float64Array.from(data, (d) => d.x)
      const tx = Float64Array.from(data, (d) => d.tx)
      const T = Float64Array.from(data, (d) => d.T)
      seeded = inWorker<TransactionFit>({ kind: 'mbgnbd-seeded', x, tx, T, options }, [x.buffer as ArrayBuffer, tx.buffer as ArrayBuffer, T.buffer as ArrayBuffer])
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
      const first = fitMbgNbdFromDefault(data, options)
      if (mbgNbdNeedsSeed(first, options)) {
        const second = seeded ? await seeded.result.catch(fallback('mbgnbd-seeded', () => fitMbgNbdSeeded(data, options))) : fitMbgNbdSeeded(data, options)
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
  const fitted = clvRefitNeeded(opts, nowMs) ? await fitClvParallel(aggs, nowMs, opts.clvModel, opts.referenceMs ?? nowMs, { logger }) : undefined
  return buildTenantModel(aggs, nowMs, { ...opts, fitted })
}

/** Distinct purchase patterns from which the CLV sums are split with a worker. */
export const PARALLEL_SUMS_FROM = 50_000

/**
 * Fills `memo` with the CLV sums of every distinct purchase pattern of `aggs` (P(alive) and the
 * cumulative expected purchases at each month's end: 13 hypergeometric series a pattern), half of
 * them computed on a worker thread while this thread computes the other half. The scoring that
 * follows then finds every pattern in the memo. Same function, same numbers: the sums are the ones
 * the memo would have computed itself. Below PARALLEL_SUMS_FROM patterns, or with more than the memo
 * holds, it leaves the memo to compute as it goes; a failed worker's half is computed here.
 */
export async function prefillClvMemo(memo: ClvMemo, clv: ClvFit, aggs: readonly CustomerAggregates[], today: number, months: number, opts: { minPatterns?: number; logger?: Logger } = {}): Promise<number> {
  const keys = new Set<number>()
  const xs: number[] = []
  const txs: number[] = []
  const Ts: number[] = []
  for (const a of aggs) {
    if (a.orderCount === 0) continue
    const x = a.repeatPurchases
    const tx = a.repeatSpanDays
    const T = Math.max(today - a.firstDay!, tx)
    const key = memoKey(x, tx, T)
    if (key === null || keys.has(key)) continue
    keys.add(key)
    xs.push(x)
    txs.push(tx)
    Ts.push(T)
  }
  const n = xs.length
  if (n < (opts.minPatterns ?? PARALLEL_SUMS_FROM) || !memo.room(n)) return 0
  const job: ClvSumsJob = { kind: 'clv-sums', model: clv.model, params: clv.params, months, x: Float64Array.from(xs), tx: Float64Array.from(txs), T: Float64Array.from(Ts) }
  const half = Math.floor(n / 2)
  const theirs: ClvSumsJob = { ...job, x: job.x.slice(half), tx: job.tx.slice(half), T: job.T.slice(half) }
  let worker: Pending<ClvSums> | null = null
  try {
    worker = inWorker<ClvSums>(theirs, [theirs.x.buffer as ArrayBuffer, theirs.tx.buffer as ArrayBuffer, theirs.T.buffer as ArrayBuffer])
  } catch (err) {
    opts.logger?.warn({ err: (err as Error).message }, 'a CLV worker could not start; computing every pattern here')
  }
  const put = (sums: ClvSums, from: number) => {
    for (let i = 0; i < sums.pAlive.length; i++) {
      const j = from + i
      memo.put(clv, months, memoKey(job.x[j]!, job.tx[j]!, job.T[j]!)!, { pAlive: sums.pAlive[i]!, cumulative: Array.from(sums.cumulative.subarray(i * months, (i + 1) * months)) })
    }
  }
  if (!worker) {
    put(clvSumsOf(job, 0, n), 0)
    return n
  }
  try {
    put(clvSumsOf(job, 0, half), 0)
    const rest = await worker.result.catch((err: unknown) => {
      opts.logger?.warn({ err: (err as Error).message }, 'a CLV worker failed; computing its patterns here')
      return clvSumsOf(job, half, n)
    })
    put(rest, half)
    return n
  } finally {
    worker.stop()
  }
}
