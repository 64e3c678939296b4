import { EMPTY_HISTORY, type CustomerAggregates, type OrderHistory } from './order-facts.ts'
import { clvFeatures, computeFeatures, type ClvMemo, type ClvPart, type FeatureOptions, type FeatureValues } from './features.ts'
import { customerIdentity, featureRowValues } from './rows.ts'
import { customerAgeDays, utcDay } from './order-facts.ts'
import type { TenantModel } from './model.ts'

/**
 * A recompute's customers scored into feature rows, one batch at a time. Pure: the same function
 * runs on the main thread and, for every other batch of a large tenant, on a worker thread
 * (pipelines/features/recompute.ts), so the rows are the same either way.
 */

export interface BatchCustomer {
  customerId: number
  email: string
  emailVersion: number
  agg: CustomerAggregates
  history: OrderHistory
}

/** What scoring a tenant's customers needs besides the customers; a plain object (it travels to a worker). */
export interface RowScoring {
  tenantId: number
  partitions: number
  model: TenantModel
  /** The reference instant (features are computed as of it) and when the run started (processed_at). */
  refMs: number
  processedAt: number
  opts: FeatureOptions
  /** The row of the customer at index j gets version baseVersion + j. */
  baseVersion: number
  /** The as-of table's date column, appended to each row; null for customer_features. */
  asOf: string | null
}

/** The counts the processing results report, over the scored customers (frequency > 0). */
export interface TallyCounts {
  errors: number
  scored: number
  segments: [string, number][]
  withClv: number
  /** Σ total_clv in whole cents: exact, so the sum does not depend on the order batches are merged in. */
  clvCents: number
  atRisk: number
  churned: number
  withRisk: number
}

export class ScoreTally {
  errors = 0
  scored = 0
  readonly segments = new Map<string, number>()
  withClv = 0
  clvCents = 0
  atRisk = 0
  churned = 0
  withRisk = 0

  add(v: FeatureValues): void {
    if (!(v.frequency > 0)) return
    this.scored++
    if (v.segment) this.segments.set(v.segment, (this.segments.get(v.segment) ?? 0) + 1)
    if (v.total_clv !== null) {
      this.withClv++
      this.clvCents += Math.round(v.total_clv * 100)
    }
    if (v.churn_risk === 'at_risk' || v.churn_risk === 'churning') this.atRisk++
    if (v.churn_risk === 'churned') this.churned++
    if (v.churn_risk !== null) this.withRisk++
  }

  counts(): TallyCounts {
    const { errors, scored, withClv, clvCents, atRisk, churned, withRisk } = this
    return { errors, scored, segments: [...this.segments], withClv, clvCents, atRisk, churned, withRisk }
  }

  /** Adds another tally's counts (a batch scored elsewhere). */
  merge(c: TallyCounts): void {
    this.errors += c.errors
    this.scored += c.scored
    for (const [s, n] of c.segments) this.segments.set(s, (this.segments.get(s) ?? 0) + n)
    this.withClv += c.withClv
    this.clvCents += c.clvCents
    this.atRisk += c.atRisk
    this.churned += c.churned
    this.withRisk += c.withRisk
  }
}

/** A batch's rows, the customers that could not be scored, and the milliseconds spent on the CLV part and on the rest of the scoring. */
export interface ScoredBatch {
  rows: unknown[][]
  failed: { customerId: number; message: string; stack?: string; err?: unknown }[]
  clvMs: number
  scoreMs: number
}

/** The feature rows of `customers`, the k-th being the run's customer indices[k] (its row's version: baseVersion + indices[k]); the tally counts each scored customer. */
export function scoreBatch(s: RowScoring, customers: readonly BatchCustomer[], indices: ArrayLike<number>, memo: ClvMemo, tally: ScoreTally): ScoredBatch {
  const { model, refMs, opts } = s
  const today = utcDay(refMs)
  const out: ScoredBatch = { rows: [], failed: [], clvMs: 0, scoreMs: 0 }
  const fail = (c: BatchCustomer, err: unknown) => {
    tally.errors++
    out.failed.push({ customerId: c.customerId, message: (err as Error).message, stack: (err as Error).stack, err })
  }
  // Three passes, each timed once (a clock read per customer cost more than a tenth of the scoring).
  const n = customers.length
  const parts: (ClvPart | null | undefined)[] = new Array(n)
  let t = performance.now()
  for (let j = 0; j < n; j++) {
    const c = customers[j]!
    try {
      parts[j] = model.clv && c.agg.orderCount > 0 ? clvFeatures(c.agg, model.clv, today, opts, memo) : null
    } catch (err) {
      fail(c, err) // undefined: not scored
    }
  }
  out.clvMs = performance.now() - t
  t = performance.now()
  const values: (FeatureValues | undefined)[] = new Array(n)
  for (let j = 0; j < n; j++) {
    const part = parts[j]
    if (part === undefined) continue
    const c = customers[j]!
    try {
      values[j] = computeFeatures(c.agg, model, refMs, opts, part)
    } catch (err) {
      fail(c, err)
    }
  }
  out.scoreMs = performance.now() - t
  for (let j = 0; j < n; j++) {
    const v = values[j]
    if (v === undefined) continue
    const c = customers[j]!
    tally.add(v)
    const row = featureRowValues(customerIdentity(s.tenantId, c.customerId, s.partitions, c.email, c.emailVersion), c.agg, EMPTY_HISTORY, v, s.processedAt, s.baseVersion + indices[j]!)
    if (s.asOf !== null) row.push(s.asOf)
    out.rows.push(row)
  }
  return out
}

/**
 * The thread (0: the caller's, 1: the worker's) that scores a customer when a run's batches are
 * split between two: by the customer's (x, T), the key of the CLV memo, so that each purchase
 * curve is summed on one thread only; customers without orders alternate.
 */
export function scoringSide(c: BatchCustomer, today: number): 0 | 1 {
  const a = c.agg
  if (a.orderCount === 0 || a.firstDay === null) return (c.customerId & 1) as 0 | 1
  const T = customerAgeDays(a, today)
  return ((Math.imul(a.repeatPurchases, 0x9e3779b1) ^ Math.imul(T, 0xc2b2ae35)) >>> 31) as 0 | 1
}

/** Customers as columns (typed arrays; NaN for a missing time or day): how a batch travels to a worker without a copy of each object. */
export interface CustomerColumns {
  /** Each customer's index in the run (its row's version). */
  indices: Float64Array
  ids: Float64Array
  emails: string[]
  emailVersions: Float64Array
  /** CustomerAggregates' fields, AGG_FIELDS' order, one array each. */
  aggs: Float64Array[]
}

const AGG_FIELDS = ['orderCount', 'monetaryCents', 'firstOrderAt', 'lastOrderAt', 'purchaseDays', 'firstDay', 'lastDay', 'repeatPurchases', 'repeatSpanDays', 'repeatAvgCents'] as const satisfies readonly (keyof CustomerAggregates)[]

export function customerColumns(customers: readonly BatchCustomer[], indices: readonly number[]): CustomerColumns {
  const n = indices.length
  const ids = new Float64Array(n)
  const emailVersions = new Float64Array(n)
  const emails: string[] = []
  const aggs = AGG_FIELDS.map(() => new Float64Array(n))
  // AGG_FIELDS' order, each field read by name: a keyed read in a loop over the fields cost about
  // five times as much.
  const [orderCount, monetaryCents, firstOrderAt, lastOrderAt, purchaseDays, firstDay, lastDay, repeatPurchases, repeatSpanDays, repeatAvgCents] = aggs as [Float64Array, ...Float64Array[]]
  for (let i = 0; i < n; i++) {
    const c = customers[indices[i]!]!
    const a = c.agg
    ids[i] = c.customerId
    emails.push(c.email)
    emailVersions[i] = c.emailVersion
    orderCount[i] = a.orderCount
    monetaryCents![i] = a.monetaryCents
    firstOrderAt![i] = a.firstOrderAt ?? NaN
    lastOrderAt![i] = a.lastOrderAt ?? NaN
    purchaseDays![i] = a.purchaseDays
    firstDay![i] = a.firstDay ?? NaN
    lastDay![i] = a.lastDay ?? NaN
    repeatPurchases![i] = a.repeatPurchases
    repeatSpanDays![i] = a.repeatSpanDays
    repeatAvgCents![i] = a.repeatAvgCents
  }
  return { indices: Float64Array.from(indices), ids, emails, emailVersions, aggs }
}

/** The customers of customerColumns again (without order histories: a recompute's rows get theirs from ClickHouse). */
export function customersOf(cols: CustomerColumns): BatchCustomer[] {
  const out: BatchCustomer[] = []
  // AGG_FIELDS' order. An object literal: filled key by key in a loop, each aggregate cost about
  // a microsecond (half a second for a worker's half of a million customers).
  const [orderCount, monetaryCents, firstOrderAt, lastOrderAt, purchaseDays, firstDay, lastDay, repeatPurchases, repeatSpanDays, repeatAvgCents] = cols.aggs as [Float64Array, ...Float64Array[]]
  const at = (column: Float64Array | undefined, i: number): number | null => {
    const v = column![i]!
    return Number.isNaN(v) ? null : v
  }
  for (let i = 0; i < cols.ids.length; i++) {
    const agg = {
      orderCount: at(orderCount, i),
      monetaryCents: at(monetaryCents, i),
      firstOrderAt: at(firstOrderAt, i),
      lastOrderAt: at(lastOrderAt, i),
      purchaseDays: at(purchaseDays, i),
      firstDay: at(firstDay, i),
      lastDay: at(lastDay, i),
      repeatPurchases: at(repeatPurchases, i),
      repeatSpanDays: at(repeatSpanDays, i),
      repeatAvgCents: at(repeatAvgCents, i),
    } as CustomerAggregates
    out.push({ customerId: cols.ids[i]!, email: cols.emails[i]!, emailVersion: cols.emailVersions[i]!, agg, history: EMPTY_HISTORY })
  }
  return out
}

/** A batch scored on a worker thread (compute-worker.ts): the run's scoring, and the column types to encode its rows as RowBinary by (null: sent back as values). */
export interface FeatureRowsJob {
  kind: 'feature-rows'
  /** One id per recompute: a worker keeps the run's model and CLV memo across its batches. */
  run: string
  scoring: RowScoring
  types: string[] | null
  customers: CustomerColumns
}

export interface FeatureRowsReply {
  /** The rows as RowBinary, or as values when there were no types or a value RowBinary does not take exactly. */
  body: Uint8Array | null
  rows: unknown[][] | null
  tally: TallyCounts
  failed: { customerId: number; message: string; stack?: string }[]
  clvMs: number
  scoreMs: number
}
