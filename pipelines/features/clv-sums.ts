import type { TransactionModelName, TransactionParams } from './clv/index.ts'
import { patternSums } from './features.ts'

/** A list of purchase patterns whose CLV sums a worker computes (parallel-fit.ts prefillClvMemo). */
export interface ClvSumsJob {
  kind: 'clv-sums'
  model: TransactionModelName
  params: TransactionParams
  months: number
  x: Float64Array
  tx: Float64Array
  T: Float64Array
}

/** Each pattern's P(alive), and its `months` cumulative expected purchases one after another. */
export interface ClvSums {
  pAlive: Float64Array
  cumulative: Float64Array
}

/** ClvMemo's sums (features.ts patternSums) of a list of patterns, in columns. */
export function clvSumsOf(job: ClvSumsJob, from = 0, to = job.x.length): ClvSums {
  const n = to - from
  const pAlive = new Float64Array(n)
  const cumulative = new Float64Array(n * job.months)
  const clv = { model: job.model, params: job.params }
  for (let i = 0; i < n; i++) {
    const s = patternSums(clv, job.x[from + i]!, job.tx[from + i]!, job.T[from + i]!, job.months)
    pAlive[i] = s.pAlive
    cumulative.set(s.cumulative, i * job.months)
  }
  return { pAlive, cumulative }
}

