import type { TransactionModelName, TransactionParams } from './clv/index.ts'
import { expectedCurve } from './features.ts'

/** A list of (x, T) whose purchase curves a worker computes (parallel-fit.ts prefillClvMemo). */
export interface ClvSumsJob {
  kind: 'clv-sums'
  model: TransactionModelName
  params: TransactionParams
  months: number
  x: Float64Array
  T: Float64Array
}

/** Each (x, T)'s `months` cumulative expected purchases if alive (features.ts expectedCurve), one curve after another. */
export interface ClvSums {
  cumulative: Float64Array
}

/** ClvMemo's curves of a list of (x, T), in one column. */
export function clvSumsOf(job: ClvSumsJob, from = 0, to = job.x.length): ClvSums {
  const n = to - from
  const cumulative = new Float64Array(n * job.months)
  const clv = { model: job.model, params: job.params }
  for (let i = 0; i < n; i++) cumulative.set(expectedCurve(clv, job.x[from + i]!, job.T[from + i]!, job.months), i * job.months)
  return { cumulative }
}
