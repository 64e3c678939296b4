import { randomBytes } from 'node:crypto'
import { encodedInsertFor, insertJsonRows, insertValueRows, NO_MERGE_ON_INSERT, queryNativeColumns, type Store } from '../../common/store/clickhouse.ts'
import { tenantExists } from '../../common/store/tenants.ts'
import { encodeRowsOrNull, encodersFor } from '../../common/store/row-binary.ts'
import type { Logger } from '../../common/logger.ts'
import type { TransactionModelName } from './clv/index.ts'
import { EMPTY_AGGREGATES, EMPTY_HISTORY, utcDay, withCredits } from './order-facts.ts'
import { TenantSettingsStore } from '../../common/store/tenant-settings.ts'
import { referenceDate, referenceMetadata, resolveReference, type Reference } from '../../common/reference-date.ts'
import { ClvMemo, computeFeatures, DEFAULT_FEATURE_OPTIONS, type FeatureOptions } from './features.ts'
import { buildTenantModelParallel, inWorker, PARALLEL_FIT_FROM, prefillClvMemo, prestartFitWorkers, type Pending } from './parallel-fit.ts'
import { customerColumns, scoreBatch, scoringSide, ScoreTally, type BatchCustomer, type FeatureRowsJob, type FeatureRowsReply, type RowScoring, type ScoredBatch } from './feature-batches.ts'
import { customerIdentity, deletedFeatureRow, FEATURE_ROW_COLUMNS } from './rows.ts'
import { loadModels, saveModel, writeSegmentSnapshot } from './feature-store.ts'
import { SEGMENTS } from './segments.ts'
import { churnRate } from './churn.ts'
import type { Analysis, ProcessingEngine, ProcessingResults, RunOptions } from './analyses.ts'

/**
 * The careful batch computation: a tenant's features recomputed from its stored orders (the raw
 * `orders` projection read with FINAL: the latest event of each order by version; docs/features.md,
 * "Which state of an order counts", says where a tie differs from the stream), with the CLV refitted. SQL does the per-customer aggregation; the
 * scoring is the same pure code the stream runs.
 */
export interface RecomputeDeps {
  store: Store
  logger: Logger
  partitions: number
  now?: () => number
  features?: FeatureOptions
  clvModel?: TransactionModelName
  /** Customers from which every other batch of rows is scored on a worker thread (default PARALLEL_ROWS_FROM). */
  parallelRowsFrom?: number
}

/**
 * A tenant of this many customers has its rows scored on two threads. Below, the worker's start
 * and the copies to it cost more than they save.
 */
export const PARALLEL_ROWS_FROM = 100_000

/**
 * Inserts of a run's rows given to the store at once while it scores on. With one, each chunk's
 * second insert waited for its first (chdb runs them in turn: what this saves is the wait, not the
 * insert), and both threads idled a fifth of the loop (1,000,000 customers).
 */
const INSERTS_IN_FLIGHT = 2

export type { BatchCustomer } from './feature-batches.ts'

/** Customers absorbed into another customer's profile (pipelines/identity): their orders count for that profile. */
const ABSORBED = `(SELECT customer_id, profile_id FROM customer_profiles FINAL WHERE tenant_id = {t:UInt64} AND profile_id != customer_id)`

/**
 * The latest state of every order of the tenant (`FINAL`: the highest version, which is what the
 * `orders` table itself keeps once its parts merge), with the profile it counts for
 * (`customer_id`). FINAL merges the sorted parts as it reads them, several times cheaper than
 * grouping ten million (customer, order) keys by hand (docs/features.md, "Full recompute"); its
 * filters apply after the merge, so a cancelled latest state is never replaced by an older one.
 *
 * The profile is looked up in the absorbed pairs, read once as one array of pairs (split into two
 * arrays in the same order) and applied by `transform`, which keeps them in a hash map: a LEFT
 * JOIN probed a join's hash table for each of ten million orders and made the columns Nullable,
 * about 1 CPU-s more on the bench tenant.
 */
const LATEST_ORDERS = (where = '') => `(
        WITH (SELECT (arrayMap(p -> p.1, pairs), arrayMap(p -> p.2, pairs)) FROM (SELECT groupArray((customer_id, profile_id)) AS pairs FROM ${ABSORBED})) AS absorbed
        SELECT transform(o.customer_id, absorbed.1, absorbed.2, o.customer_id) AS customer_id, o.placed_ms AS placed_ms, o.cents AS cents, o.cancelled AS cancelled
        FROM (
            SELECT customer_id, toUnixTimestamp64Milli(placed_at) AS placed_ms, toInt64(total * 100) AS cents, is_cancelled AS cancelled
            FROM orders FINAL WHERE tenant_id = {t:UInt64} ${where}
        ) AS o
    )`

/**
 * A profile's aggregates from its history (days are UTC days: ms / 86,400,000), staged with it: the
 * arrays are at hand as they are built, where reading them back from the staged table to compute
 * these cost a million customers' recompute about a third of a second more.
 */
const AGGREGATE_COLUMNS = `length(times) AS n, arraySum(cents) AS total, times[1] AS first_at, times[-1] AS last_at,
       length(arrayDistinct(arrayMap(t -> intDiv(t, 86400000), times))) AS days,
       intDiv(times[1], 86400000) AS first_day, intDiv(times[-1], 86400000) AS last_day,
       arraySum(arrayFilter((c, t) -> intDiv(t, 86400000) = first_day, cents, times)) AS first_day_cents`

/**
 * The settings of the run's INSERT … SELECTs: ClickHouse writes the rows of an INSERT … SELECT
 * with one thread unless told otherwise (`max_insert_threads`), and builds a join's hash table
 * with one (`parallel_hash` splits it). Joining the histories into the feature rows of a million
 * customers took 4.7 s with one thread and 2.3–2.4 s with these on 2 cores.
 */
const PARALLEL_INSERT = "max_insert_threads = 4"

/**
 * An order's (time, cents) as one UInt128 that sorts as the pair does: the time's bits with the
 * sign bit flipped (so an Int64 sorts as unsigned) above the cents (positive here). Grouping and
 * sorting one number per order instead of a tuple took the histories of ten million orders from
 * 5.3 to 3.6 CPU-s; ORDER_TIME and ORDER_CENTS take the pair back.
 */
const ORDER_KEY = 'bitOr(bitShiftLeft(toUInt128(bitXor(reinterpretAsUInt64(placed_ms), 9223372036854775808)), 64), toUInt128(cents))'
const ORDER_TIME = (k: string) => `reinterpretAsInt64(bitXor(toUInt64(bitShiftRight(${k}, 64)), 9223372036854775808))`
const ORDER_CENTS = (k: string) => `toInt64(toUInt64(${k}))` // the low 64 bits

/**
 * Each profile's counting orders up to the cutoff, ascending by (time, cents): the history the
 * feature rows keep, and its aggregates (AGGREGATE_COLUMNS). Staged once per run in a Memory
 * table (`stageHistories`), so the orders are read once.
 */
const HISTORIES_SQL = `
SELECT customer_id, times, cents, ${AGGREGATE_COLUMNS}
FROM (
    SELECT customer_id, arrayMap(k -> ${ORDER_TIME('k')}, h) AS times, arrayMap(k -> ${ORDER_CENTS('k')}, h) AS cents
    FROM (
        SELECT customer_id, arraySort(groupArray(${ORDER_KEY})) AS h
        FROM ${LATEST_ORDERS()}
        WHERE cancelled = 0 AND cents > 0 AND placed_ms <= {cutoff:Int64}
        GROUP BY customer_id
    )
)
SETTINGS ${PARALLEL_INSERT}`

/** The profiles' aggregates (and histories), as staged, by customer. */
const AGGREGATES_SQL = (histories: string, withHistory: boolean) => `
SELECT customer_id, n, total, first_at, last_at, days, first_day, last_day, first_day_cents
       ${withHistory ? ', times, cents' : ''}
FROM ${histories}
ORDER BY customer_id`

/**
 * Each customer's credited cents: credit notes (the only orders ever with a negative total) whose
 * latest state is still a credit (a cancelled credit note credits nothing), up to the cutoff.
 */
const CREDITS_SQL = `
SELECT customer_id, sum(-cents)
FROM ${LATEST_ORDERS('AND (customer_id, order_id) IN (SELECT customer_id, order_id FROM orders WHERE tenant_id = {t:UInt64} AND total < 0)')}
WHERE cancelled = 0 AND cents < 0 AND placed_ms <= {cutoff:Int64}
GROUP BY customer_id`

/**
 * A query's result as one array per column (JSONColumnsWithMetadata), 64-bit integers as JSON
 * numbers: for the million-row reads of a recompute, less parsing than an array per row, and no
 * string per Int64 to convert (every one read here, ids, cents and milliseconds, is a safe integer).
 */
async function queryColumns<T extends unknown[]>(store: Store, query: string, params: Record<string, unknown> = {}): Promise<T> {
  const rs = await store.query({ query, query_params: params, format: 'JSONColumnsWithMetadata', clickhouse_settings: { output_format_json_quote_64bit_integers: 0 } })
  const { meta, data } = (await rs.json()) as unknown as { meta: { name: string }[]; data: Record<string, unknown[]> }
  // No rows: `data` has no columns at all.
  return meta.map((m) => data[m.name] ?? []) as T
}

/** Int64 bound for "no cutoff". */
const NO_CUTOFF = '9223372036854775807'
/** The `{cutoff:Int64}` parameter of a cutoff (Infinity: none). */
const cutoffParam = (cutoffMs: number) => (Number.isFinite(cutoffMs) ? cutoffMs : NO_CUTOFF)

/**
 * Every profile's own customer with its email and that email's version: the latest event's (ties
 * to the greatest email). An absorbed customer is no profile.
 */
const PROFILE_EMAILS_SQL = `
SELECT customer_id, argMax(coalesce(email, ''), tuple(version, coalesce(email, ''))) AS email, max(version) AS email_version
FROM customers WHERE tenant_id = {t:UInt64} AND customer_id NOT IN (SELECT customer_id FROM ${ABSORBED})
GROUP BY customer_id`

const PROFILES_SQL = `${PROFILE_EMAILS_SQL}
ORDER BY customer_id`

/**
 * A query of numbers only, one array per column: from chdb's Native output where it can (no JSON
 * printed, decoded and parsed for a million rows), as JSON otherwise. No rows: `columns` empty ones.
 */
async function queryNumberColumns<T extends unknown[]>(store: Store, sql: string, columns: number): Promise<T> {
  const cols = await queryNativeColumns(store, sql)
  if (cols === null) return queryColumns<T>(store, sql)
  return (cols.length ? cols : Array.from({ length: columns }, () => [])) as T
}

/**
 * The customers of a tenant absorbed into another customer's profile (they have no row of their
 * own), with their email: a split can make one a profile again before its next event.
 */
export async function absorbedCustomers(store: Store, tenantId: number): Promise<{ customerId: number; email: string; emailVersion: number }[]> {
  const rs = await store.query({
    query: `SELECT a.customer_id, coalesce(c.email, ''), coalesce(c.v, 0)
            FROM ${ABSORBED} AS a
            LEFT JOIN (SELECT customer_id, argMax(coalesce(email, ''), tuple(version, coalesce(email, ''))) AS email, max(version) AS v FROM customers
                       WHERE tenant_id = {t:UInt64} AND customer_id IN (SELECT customer_id FROM ${ABSORBED})
                       GROUP BY customer_id) AS c ON c.customer_id = a.customer_id
            ORDER BY a.customer_id
            SETTINGS join_use_nulls = 1`,
    query_params: { t: tenantId },
    format: 'JSONCompactEachRow',
  })
  return (await rs.json<[string, string, string]>()).map(([c, email, v]) => ({ customerId: Number(c), email, emailVersion: Number(v) }))
}

/** A run's staged rows (a Memory table of one query's rows); `drop` removes it. */
export interface Staged {
  table: string
  drop(): Promise<void>
}

/** A run's staged histories (`HISTORIES_SQL`'s rows). */
export type StagedHistories = Staged
/** A run's staged profiles (`PROFILE_EMAILS_SQL`'s rows: customer_id, email, email_version). */
export type StagedProfiles = Staged

/** Stages a query's rows in a Memory table of their own, named `<kind>_<tenant>_<random>`. */
async function stage(store: Store, kind: string, tenantId: number, sql: string, params: Record<string, unknown>): Promise<Staged> {
  const table = `${kind}_${tenantId}_${randomBytes(6).toString('hex')}`
  // Never throws: a failed drop must not hide the error that ended the run (a Memory table left
  // behind holds nothing after a restart).
  const drop = () => store.command({ query: `DROP TABLE IF EXISTS ${table}` }).then(() => undefined, () => undefined)
  try {
    await store.command({ query: `CREATE TABLE ${table} ENGINE = Memory AS ${sql}`, query_params: params })
  } catch (err) {
    await drop()
    throw err
  }
  return { table, drop }
}

/** Stages every profile's counting order history (up to `cutoffMs`). */
export function stageHistories(store: Store, tenantId: number, cutoffMs = Infinity): Promise<StagedHistories> {
  return stage(store, 'recompute_histories', tenantId, HISTORIES_SQL, { t: tenantId, cutoff: cutoffParam(cutoffMs) })
}

/** Stages every profile with its email, for the writer to join into the rows (the emails never reach JavaScript). */
export function stageProfiles(store: Store, tenantId: number): Promise<StagedProfiles> {
  return stage(store, 'recompute_profiles', tenantId, PROFILE_EMAILS_SQL, { t: tenantId })
}

/**
 * Every profile of a tenant (a customer with or without orders, or the surviving customer of a
 * merge: pipelines/identity) and the aggregates of all its members' orders, from the raw
 * projections; orders and credit notes placed after `cutoffMs` left out. The email is the
 * profile's own customer's. `history: false` leaves the order histories out (the recompute has
 * ClickHouse join them to the rows it writes); `histories` reads already staged ones. With
 * `profiles` (staged ones), only the profiles' ids are read: each email is '' and its version 0,
 * for the writer to join in from the staged profiles.
 */
export async function loadTenantCustomers(store: Store, tenantId: number, cutoffMs = Infinity, opts: { history?: boolean; histories?: StagedHistories | Promise<StagedHistories>; profiles?: StagedProfiles | Promise<StagedProfiles> } = {}): Promise<BatchCustomer[]> {
  const cutoff = cutoffParam(cutoffMs)
  const withHistory = opts.history ?? true
  // The emails and the credit notes do not need the staged histories: asked for while they are
  // staged (or while a caller stages them).
  const profilesP: Promise<[number[], string[]?, number[]?]> = opts.profiles
    ? Promise.resolve(opts.profiles).then((p) => queryNumberColumns<[number[]]>(store, `SELECT customer_id FROM ${p.table} ORDER BY customer_id`, 1))
    : queryColumns<[number[], string[], number[]]>(store, PROFILES_SQL, { t: tenantId })
  const creditsP = store.query({ query: CREDITS_SQL, query_params: { t: tenantId, cutoff }, format: 'JSONCompactEachRow' }).then((r) => r.json<[number, number]>())
  // Settled either way, so a failure elsewhere leaves no unhandled rejection behind.
  profilesP.catch(() => undefined)
  creditsP.catch(() => undefined)
  const staged = await (opts.histories ?? stageHistories(store, tenantId, cutoffMs))
  try {
    type AggColumns = [number[], number[], number[], number[], number[], number[], number[], number[], number[], number[][]?, number[][]?]
    // The aggregates are numbers only and take no parameter (Native where it can).
    const aggP = queryNumberColumns<AggColumns>(store, AGGREGATES_SQL(staged.table, withHistory), withHistory ? 11 : 9)
    const [agg, [profileIds, emails, emailVersions], creditRows] = await Promise.all([aggP, profilesP, creditsP])
    const credits = new Map(creditRows.map(([c, cents]) => [Number(c), Number(cents)]))
    const [ids, n, cents, firstAt, lastAt, days, firstDay, lastDay, firstDayCents, times, orderCents] = agg
    // Both lists come sorted by customer: merged in one pass, a profile without orders (only in
    // the first) or orders without a profile row (only in the second) kept either way.
    const out: BatchCustomer[] = []
    let p = 0
    for (let i = 0; i <= ids.length; i++) {
      const id = i < ids.length ? ids[i]! : Infinity
      while (p < profileIds.length && profileIds[p]! < id) {
        out.push({ customerId: profileIds[p]!, email: emails?.[p] ?? '', emailVersion: emailVersions?.[p] ?? 0, agg: EMPTY_AGGREGATES, history: EMPTY_HISTORY })
        p++
      }
      if (i === ids.length) break
      const own = p < profileIds.length && profileIds[p] === id
      const c: BatchCustomer = { customerId: id, email: (own && emails?.[p]) || '', emailVersion: (own && emailVersions?.[p]) || 0, agg: EMPTY_AGGREGATES, history: EMPTY_HISTORY }
      if (own) p++
      if (times && orderCents) c.history = { times: times[i]!, cents: orderCents[i]! }
      const x = days[i]! - 1
      c.agg = withCredits({
        orderCount: n[i]!,
        monetaryCents: cents[i]!,
        firstOrderAt: firstAt[i]!,
        lastOrderAt: lastAt[i]!,
        purchaseDays: days[i]!,
        firstDay: firstDay[i]!,
        lastDay: lastDay[i]!,
        repeatPurchases: x,
        repeatSpanDays: lastDay[i]! - firstDay[i]!,
        repeatAvgCents: x > 0 ? (cents[i]! - firstDayCents[i]!) / x : 0,
      }, credits.get(id) ?? 0)
      out.push(c)
    }
    return out
  } finally {
    if (!opts.histories) await staged.drop()
  }
}

export class AbortError extends Error {
  constructor() {
    super('processing cancelled')
    this.name = 'AbortError'
  }
}

const seconds = (ms: number) => Math.round(ms) / 1000
const pct = (n: number, total: number) => (total ? Math.round((n / total) * 10000) / 100 : 0)

/** Where a computation's rows go: the tenant's features, or the as-of table for one date. */
type Target = { table: 'customer_features' } | { table: 'customer_features_as_of'; asOf: string }

export function createRecomputeEngine(deps: RecomputeDeps): ProcessingEngine {
  const now = deps.now ?? Date.now
  const opts = deps.features ?? DEFAULT_FEATURE_OPTIONS
  const clvModel = deps.clvModel ?? 'mbgnbd'
  const settings = new TenantSettingsStore(deps.store, now)

  /**
   * A tenant's features from its stored orders as of `ref`, written to `target`. The tenant's own
   * run also stores the model and the day's segment snapshot; an as-of run stores only its rows.
   */
  async function compute(tenantId: number, ref: Reference, target: Target, run: Pick<RunOptions, 'analyses' | 'batchSize' | 'signal' | 'onProgress'>): Promise<ProcessingResults> {
    const check = () => {
      if (run.signal.aborted) throw new AbortError()
    }
    const at = now()
    const own = target.table === 'customer_features'
    let t0 = performance.now()
    // A large tenant's CLV fit runs on worker threads (parallel-fit.ts): started now, they load
    // their modules while the orders are read. Orders bound the buyers from above.
    const orders = await queryColumns<[number[]]>(deps.store, 'SELECT count() FROM orders WHERE tenant_id = {t:UInt64}', { t: tenantId })
    if ((orders[0][0] ?? 0) >= PARALLEL_FIT_FROM) prestartFitWorkers(2)
    // The histories and the profiles (with their emails) are staged side by side; loading starts the
    // credit notes' query meanwhile. The emails stay in ClickHouse: the rows' final insert joins them.
    const staging = stageHistories(deps.store, tenantId, ref.cutoffMs)
    const profiling = stageProfiles(deps.store, tenantId)
    const loaded = loadTenantCustomers(deps.store, tenantId, ref.cutoffMs, { history: false, histories: staging, profiles: profiling })
    // It may fail while the profiles are still staged (its aggregates or credits query), before it
    // is awaited: not an unhandled rejection, which would end the process.
    loaded.catch(() => undefined)
    const staged = Promise.allSettled([staging, profiling])
    try {
      const [histories, profiles] = await Promise.all([staging, profiling])
      return await computeFrom(histories, profiles, await loaded)
    } finally {
      await loaded.catch(() => undefined)
      for (const s of await staged) if (s.status === 'fulfilled') await s.value.drop()
    }

    async function computeFrom(histories: StagedHistories, profiles: StagedProfiles, customers: BatchCustomer[]): Promise<ProcessingResults> {
      check()
      const previous = (await loadModels(deps.store, [tenantId])).get(tenantId) ?? null
      const refit = !own || run.analyses.includes('clv') || run.analyses.includes('churn') || !previous?.clv
      const aggs = customers.map((c) => c.agg)
      const rfmLoad = performance.now() - t0
      t0 = performance.now()
      // The fit's independent parts run on worker threads beside this one (parallel-fit.ts); the
      // model is the one the one-thread fit gives.
      const model = await buildTenantModelParallel(aggs, at, { clvModel, refitClv: refit, previous: own ? previous : null, referenceMs: ref.ms }, deps.logger)
      const fitMs = performance.now() - t0
      if (own) await saveModel(deps.store, tenantId, model)

      const today = utcDay(ref.ms)
      let clvMs = 0
      let prefillMs = 0
      let scoreMs = 0
      // Each customer is scored as its batch of rows is built: the run keeps the counts the results
      // report, not a million scores (less for the collector to walk).
      const tally = new ScoreTally()
      const scoring: RowScoring = { tenantId, partitions: deps.partitions, model, refMs: ref.ms, processedAt: at, opts, baseVersion: at * 1000, asOf: target.table === 'customer_features' ? null : target.asOf }
      // A large tenant's batches alternate between this thread and a worker thread, each with a
      // CLV memo of its own that fills as it goes. A smaller tenant's are scored here; customers of one
      // x and T share their purchase curve, summed up front (half on a worker when there are many:
      // parallel-fit.ts).
      const parallel = customers.length >= (deps.parallelRowsFrom ?? PARALLEL_ROWS_FROM)
      const memo = new ClvMemo()
      if (model.clv && !parallel) {
        const s = performance.now()
        await prefillClvMemo(memo, model.clv, aggs, today, opts.horizonMonths, { logger: deps.logger })
        prefillMs = performance.now() - s
      }
      const warnFailed = (f: ScoredBatch['failed'][number]) => deps.logger.warn({ tenantId, customerId: f.customerId, err: f.err ?? { message: f.message, stack: f.stack } }, 'customer could not be scored')
      let workerClvMs = 0
      let workerScoreMs = 0
      let workerBatches = 0
      let workerWaitMs = 0
      t0 = performance.now()
      // The rows go to a staging table without their order histories and emails; one INSERT …
      // SELECT then writes them to the target with each profile's history and email joined in by
      // ClickHouse, so ten million orders never travel through JSON (docs/features.md, "Full
      // recompute").
      let historyMs = 0
      const staging = `recompute_staging_${tenantId}_${randomBytes(6).toString('hex')}`
      await deps.store.command({ query: `CREATE TABLE ${staging} AS ${target.table} ENGINE = Memory` })
      // The staging table's inserts not yet awaited: all of them settle before it is dropped, also
      // when one of them has failed the run.
      const inFlight: Promise<void>[] = []
      try {
        const columns = target.table === 'customer_features' ? FEATURE_ROW_COLUMNS : [...FEATURE_ROW_COLUMNS, 'as_of']
        // Rows are encoded as RowBinary by the staging table's column types (chdb) as soon as they
        // are scored, by the worker and by this thread: a batch waiting for its insert then holds
        // bytes, not an array and objects a row, which the young generation's collections would
        // copy and promote (this thread collected three times as long).
        const encoded = await encodedInsertFor(deps.store, staging, columns)
        const encoders = encoded && encodersFor(encoded.types)
        const runId = randomBytes(6).toString('hex')
        // Inserts run while the next rows are scored, up to INSERTS_IN_FLIGHT given at once (chdb
        // runs them one after another, a server side by side): a write waits only when that many
        // are in flight, for the oldest. The rows go to a Memory table that the final INSERT …
        // SELECT reads whole: their order does not matter.
        const write = async (insert: () => Promise<void>) => {
          while (inFlight.length >= INSERTS_IN_FLIGHT) await inFlight.shift()
          const p = insert()
          p.catch(() => undefined) // awaited in its turn
          inFlight.push(p)
        }
        const scoreHere = (indices: number[]) => {
          const batch = scoreBatch(scoring, indices.map((j) => customers[j]!), indices, memo, tally)
          clvMs += batch.clvMs
          scoreMs += batch.scoreMs
          batch.failed.forEach(warnFailed)
          return batch.rows
        }
        const writeHere = async (indices: number[]) => {
          const rows = indices.length ? scoreHere(indices) : []
          if (!rows.length) return
          const body = encoders && encodeRowsOrNull(encoders, rows)
          if (body) await write(() => encoded!.insert(body))
          else await write(() => insertValueRows(deps.store, staging, columns, rows))
        }
        // The worker's answer for a chunk, written once the worker has the next chunk: it scores on
        // while this thread hands the answer to an insert.
        type Answered = { reply: FeatureRowsReply | null; others: number[]; end: number }
        const writeTheirs = async ({ reply, others, end }: Answered) => {
          if (reply?.body) await write(() => encoded!.insert(reply.body!))
          else if (reply?.rows?.length) await write(() => insertValueRows(deps.store, staging, columns, reply.rows!))
          else if (!reply) await writeHere(others) // no worker free, or it failed
          run.onProgress?.(end, customers.length)
        }
        let answered: Answered | null = null
        // Two threads take a run's customers two batches at a time, each customer to the thread of
        // its (x, T) (scoringSide): a purchase curve is summed once.
        const chunk = parallel ? 2 * run.batchSize : run.batchSize
        for (let i = 0; i < customers.length; i += chunk) {
          // Aborted: the finally waits for the inserts in flight before it drops the table.
          check()
          const end = Math.min(customers.length, i + chunk)
          const mine: number[] = []
          const others: number[] = []
          for (let j = i; j < end; j++) (parallel && scoringSide(customers[j]!, today) === 1 ? others : mine).push(j)
          // The worker's share is sent before this thread writes the last answer and scores its own.
          let theirs: Pending<FeatureRowsReply> | null = null
          if (others.length) {
            const job: FeatureRowsJob = { kind: 'feature-rows', run: runId, scoring, types: encoded?.types ?? null, customers: customerColumns(customers, others) }
            const { indices, ids, emailVersions, aggs } = job.customers
            try {
              theirs = inWorker<FeatureRowsReply>(job, [indices, ids, emailVersions, ...aggs].map((a) => a.buffer as ArrayBuffer))
            } catch (err) {
              deps.logger.warn({ err: (err as Error).message }, 'a feature rows worker could not start; scoring its batch here')
            }
          }
          try {
            if (answered) await writeTheirs(answered)
            answered = null
            await writeHere(mine)
          } catch (err) {
            theirs?.stop() // its rows would not be written
            throw err
          }
          if (!others.length) {
            run.onProgress?.(end, customers.length)
            continue
          }
          const w0 = performance.now()
          const reply = theirs
            ? await theirs.result.catch((err: unknown) => {
                deps.logger.warn({ err: (err as Error).message }, 'a feature rows worker failed; scoring its batch here')
                return null
              })
            : null
          workerWaitMs += performance.now() - w0
          if (reply) {
            workerBatches++
            tally.merge(reply.tally)
            workerClvMs += reply.clvMs
            workerScoreMs += reply.scoreMs
            reply.failed.forEach(warnFailed)
          }
          answered = { reply, others, end }
        }
        if (answered) await writeTheirs(answered)
        while (inFlight.length) await inFlight.shift()
        check()
        const h0 = performance.now()
        await deps.store.command({
          query: `INSERT INTO ${target.table}
                  SELECT s.* REPLACE (h.times AS order_times, h.cents AS order_cents, p.email AS email, p.email_version AS email_version)
                  FROM ${staging} AS s
                  LEFT JOIN ${histories.table} AS h ON h.customer_id = s.customer_id
                  LEFT JOIN ${profiles.table} AS p ON p.customer_id = s.customer_id
                  SETTINGS join_algorithm = 'parallel_hash', ${PARALLEL_INSERT}`, // a customer without orders gets [], orders without a profile row '' and 0
          // One row per profile: the block has no duplicate for ClickHouse to collapse as it writes.
          clickhouse_settings: NO_MERGE_ON_INSERT.settings,
        })
        historyMs = performance.now() - h0
      } finally {
        await Promise.allSettled(inFlight)
        await deps.store.command({ query: `DROP TABLE IF EXISTS ${staging}` })
      }
      // Two threads scored side by side: their time is the span's, not its sum.
      const threads = parallel ? 2 : 1
      clvMs = prefillMs + (clvMs + workerClvMs) / threads
      scoreMs = (scoreMs + workerScoreMs) / threads
      // Customers absorbed into another's profile: a delete marker over any row of their own.
      const absorbed = await absorbedCustomers(deps.store, tenantId)
      if (absorbed.length) {
        const empty = computeFeatures(EMPTY_AGGREGATES, null, ref.ms, opts, null)
        const markers = absorbed.map((a, k) => {
          const row = deletedFeatureRow(customerIdentity(tenantId, a.customerId, deps.partitions, a.email, a.emailVersion), empty, at, scoring.baseVersion + customers.length + k)
          return target.table === 'customer_features' ? row : { ...row, as_of: target.asOf }
        })
        await insertJsonRows(deps.store, target.table, markers)
      }
      if (own) await writeSegmentSnapshot(deps.store, [tenantId], ref.ms, at)
      // The CLV sums summed up front (prefillClvMemo) came before t0: only the rows' own share is in this span.
      const writeMs = performance.now() - t0 - (clvMs - prefillMs) - scoreMs
      const { errors } = tally

      const results: ProcessingResults = { metadata: referenceMetadata(ref) }
      if (run.analyses.includes('rfm')) {
        results.rfm = {
          total_processed: tally.scored,
          segments: SEGMENTS.map((segment) => ({ segment, count: tally.segments.get(segment) ?? 0, percentage: pct(tally.segments.get(segment) ?? 0, tally.scored) })),
          processing_time: seconds(rfmLoad + scoreMs + writeMs),
          errors,
        }
      }
      if (run.analyses.includes('clv')) {
        results.metadata = { ...results.metadata!, clv_model: model.clv?.model ?? null, clv_method: model.clv ? (model.clv.method ?? 'maximum_likelihood') : null }
        results.clv = {
          processed: tally.withClv,
          avg_clv: tally.withClv ? Math.round(tally.clvCents / tally.withClv) / 100 : 0,
          processing_time: seconds(fitMs + clvMs),
        }
      }
      if (run.analyses.includes('churn')) {
        results.churn = {
          processed: tally.scored,
          at_risk: tally.atRisk,
          churn_rate: churnRate(tally.churned, tally.withRisk),
          processing_time: seconds(scoreMs),
        }
      }
      const phases = { load: Math.round(rfmLoad), fit: Math.round(fitMs), clv: Math.round(clvMs), score: Math.round(scoreMs), write: Math.round(writeMs - historyMs), history: Math.round(historyMs) }
      deps.logger.info({ tenantId, customers: customers.length, errors, reference: referenceDate(ref), table: target.table, ms: Math.round(rfmLoad + fitMs + clvMs + scoreMs + writeMs), phases, workerBatches, workerWaitMs: Math.round(workerWaitMs) }, 'tenant recomputed')
      return results
    }
  }

  const engine: ProcessingEngine = {
    tenantExists: (tenantId) => tenantExists(deps.store, tenantId),
    async run(tenantId: number, run: RunOptions): Promise<ProcessingResults> {
      return compute(tenantId, await settings.reference(tenantId, now()), { table: 'customer_features' }, run)
    },
    async runAsOf(tenantId: number, asOf: string, analyses: Analysis[]): Promise<ProcessingResults> {
      const ref = resolveReference(asOf as Reference['setting'], { wallMs: now(), dataEndMs: null }, 'as_of')
      return compute(tenantId, ref, { table: 'customer_features_as_of', asOf }, { analyses, batchSize: 10_000, signal: new AbortController().signal })
    },
  }
  return engine
}
