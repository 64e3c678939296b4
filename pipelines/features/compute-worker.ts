import { parentPort } from 'node:worker_threads'
import { fitGammaGamma, fitMbgNbdSeeded, type Patterns, type TransactionFitOptions } from './clv/index.ts'
import { clvSumsOf, type ClvSumsJob } from './clv-sums.ts'
import { customersOf, scoreBatch, ScoreTally, type FeatureRowsJob, type FeatureRowsReply } from './feature-batches.ts'
import { ClvMemo } from './features.ts'
import { encodeRowsOrNull, encodersFor, type Encoder } from '../../common/store/row-binary.ts'
import type { TenantModel } from './model.ts'

/**
 * The worker side of parallel-fit.ts: a CLV fit of pure code (clv/) on the columns it is sent, a
 * share of a tenant's CLV sums, or a recompute's batch of feature rows (feature-batches.ts); its
 * result sent back, then the next job. The same functions on the same numbers as the main thread
 * would run them, so the answer is the same to the last bit.
 */
export type WorkerJob =
  | { kind: 'gamma-gamma'; x: Float64Array; zbar: Float64Array }
  /** The patterns of every customer (a structured copy) and the customers of the seed sample (seedSample). */
  | { kind: 'mbgnbd-seeded'; patterns: Patterns; x: Float64Array; tx: Float64Array; T: Float64Array; options: TransactionFitOptions | undefined }
  | ClvSumsJob
  | FeatureRowsJob

/** The recompute whose batches this worker scores: its model (one object, the memo's key), CLV memo and encoders. */
let rowRun: { id: string; model: TenantModel; memo: ClvMemo; encoders: Encoder[] | null } | null = null

function featureRows(job: FeatureRowsJob): { reply: FeatureRowsReply; transfer: ArrayBuffer[] } {
  if (rowRun?.id !== job.run) {
    rowRun = { id: job.run, model: job.scoring.model, memo: new ClvMemo(), encoders: job.types ? encodersFor(job.types) : null }
  }
  const tally = new ScoreTally()
  const customers = customersOf(job.customers)
  const scored = scoreBatch({ ...job.scoring, model: rowRun.model }, customers, job.customers.indices, rowRun.memo, tally)
  const encodedRows = rowRun.encoders && scored.rows.length ? encodeRowsOrNull(rowRun.encoders, scored.rows) : null
  // A copy of its own, so the whole buffer can be handed over.
  const body = encodedRows && new Uint8Array(encodedRows)
  const failed = scored.failed.map(({ customerId, message, stack }) => ({ customerId, message, stack }))
  const reply = { body, rows: body ? null : scored.rows, tally: tally.counts(), failed, clvMs: scored.clvMs, scoreMs: scored.scoreMs }
  return { reply, transfer: body ? [body.buffer as ArrayBuffer] : [] }
}

parentPort?.on('message', (job: WorkerJob) => {
  try {
    if (job.kind === 'gamma-gamma') {
      const spend = Array.from(job.x, (x, i) => ({ x, zbar: job.zbar[i]! }))
      parentPort!.postMessage({ ok: true, fit: fitGammaGamma(spend) })
    } else if (job.kind === 'feature-rows') {
      const { reply, transfer } = featureRows(job)
      parentPort!.postMessage({ ok: true, fit: reply }, transfer)
    } else if (job.kind === 'clv-sums') {
      const sums = clvSumsOf(job)
      parentPort!.postMessage({ ok: true, fit: sums }, [sums.cumulative.buffer as ArrayBuffer])
    } else {
      const sample = Array.from(job.x, (x, i) => ({ x, tx: job.tx[i]!, T: job.T[i]! }))
      parentPort!.postMessage({ ok: true, fit: fitMbgNbdSeeded(job.patterns, sample, job.options) })
    }
  } catch (err) {
    parentPort!.postMessage({ ok: false, error: (err as Error).message })
  }
})
