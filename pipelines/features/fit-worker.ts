import { parentPort } from 'node:worker_threads'
import { fitGammaGamma, fitMbgNbdSeeded, type Patterns, type TransactionFitOptions } from './clv/index.ts'
import { clvSumsOf, type ClvSumsJob } from './clv-sums.ts'

/**
 * The worker side of parallel-fit.ts: a fit of pure code (clv/) on the columns it is sent, its
 * result sent back, then the next job. The same functions on the same numbers as the main thread would run them, so
 * the answer is the same to the last bit.
 */
export type FitJob =
  | { kind: 'gamma-gamma'; x: Float64Array; zbar: Float64Array }
  /** The patterns of every customer (a structured copy) and the customers of the seed sample (seedSample). */
  | { kind: 'mbgnbd-seeded'; patterns: Patterns; x: Float64Array; tx: Float64Array; T: Float64Array; options: TransactionFitOptions | undefined }
  | ClvSumsJob

parentPort?.on('message', (job: FitJob) => {
  try {
    if (job.kind === 'gamma-gamma') {
      const spend = Array.from(job.x, (x, i) => ({ x, zbar: job.zbar[i]! }))
      parentPort!.postMessage({ ok: true, fit: fitGammaGamma(spend) })
    } else if (job.kind === 'clv-sums') {
      const sums = clvSumsOf(job)
      parentPort!.postMessage({ ok: true, fit: sums }, [sums.pAlive.buffer as ArrayBuffer, sums.cumulative.buffer as ArrayBuffer])
    } else {
      const sample = Array.from(job.x, (x, i) => ({ x, tx: job.tx[i]!, T: job.T[i]! }))
      parentPort!.postMessage({ ok: true, fit: fitMbgNbdSeeded(job.patterns, sample, job.options) })
    }
  } catch (err) {
    parentPort!.postMessage({ ok: false, error: (err as Error).message })
  }
})
