import type { Store } from '../../common/store/clickhouse.ts'
import type { Analysis } from '../features/index.ts'
import { nextSeq, RANK_STEP } from '../../common/store/versions.ts'
import { iso } from '../../common/time.ts'

export type JobKind = 'manual' | 'scheduled'
/**
 * queued: waits for the tenant's lock (scheduled jobs). processing: holds or is racing for it.
 * cancelling: a cancel mark the owner has not acted on yet. processed | failed | cancelled: done.
 * rejected: a claim that lost the race, or a duplicate run of a schedule occurrence.
 */
export type JobStatus = 'queued' | 'processing' | 'cancelling' | 'processed' | 'failed' | 'cancelled' | 'rejected'
export const LIVE_STATUSES = ['queued', 'processing', 'cancelling'] as const satisfies JobStatus[]
export const FINAL_STATUSES = ['processed', 'failed', 'cancelled', 'rejected'] as const satisfies JobStatus[]

/** One row of processing_jobs; times are epoch ms. */
export interface JobRow {
  tenant_id: number
  job_id: string
  kind: JobKind
  schedule_id: string
  occurrence_at: number | null
  status: JobStatus
  replica_id: string
  analyses: Analysis[]
  batch_size: number
  force: boolean
  claimed_at: number
  heartbeat_at: number
  started_at: number | null
  finished_at: number | null
  records_processed: number
  total_time: number
  /** JSON of the results object once processed; '' otherwise, and in rows read without results. */
  results: string
  error: string
}

export function isLive(status: JobStatus): boolean {
  return (LIVE_STATUSES as readonly string[]).includes(status)
}

export function isFinal(status: JobStatus): boolean {
  return (FINAL_STATUSES as readonly string[]).includes(status)
}

/** See 003_processing.sql: later lifecycle stages win over earlier ones whatever the clocks say. */
function rank(status: JobStatus): number {
  if (status === 'cancelling') return 2
  return isFinal(status) ? 3 : 1
}

/** Times leave ClickHouse as epoch ms under a distinct alias (an alias named like its column would shadow it in WHERE). */
const TIME_COLUMNS = ['occurrence_at', 'claimed_at', 'heartbeat_at', 'started_at', 'finished_at'] as const
const ms = (col: string) => `toUnixTimestamp64Milli(${col}) AS ${col}_ms`

/**
 * The write counter inside a version: orders runs whose clock times are equal (a coarse or
 * injected clock). Runs of a tenant never overlap, so the later run's writes come after the
 * earlier run's last one.
 */
const WRITE_SEQ = `(version % ${RANK_STEP})`

function columns(withResults: boolean): string {
  return [
    'tenant_id', 'job_id', 'kind', 'schedule_id', ms('occurrence_at'), 'status', 'replica_id', 'analyses', 'batch_size', 'force',
    ms('claimed_at'), ms('heartbeat_at'), ms('started_at'), ms('finished_at'), 'records_processed', 'total_time',
    withResults ? 'results' : `'' AS results`, 'error',
  ].join(', ')
}

type RawRow = Omit<JobRow, 'force' | (typeof TIME_COLUMNS)[number]> & { force: number | boolean } & Record<`${(typeof TIME_COLUMNS)[number]}_ms`, number | null>

/** The processing_jobs table. Every SQL value is a bound `{name:Type}` parameter. */
export class JobsTable {
  constructor(private readonly store: Store) {}

  /** Writes the whole row as its new state (ReplacingMergeTree: the highest version wins). */
  async write(row: JobRow): Promise<void> {
    await this.store.insert({
      table: 'processing_jobs',
      format: 'JSONEachRow',
      values: [
        {
          ...row,
          force: row.force ? 1 : 0,
          occurrence_at: iso(row.occurrence_at),
          claimed_at: iso(row.claimed_at),
          heartbeat_at: iso(row.heartbeat_at),
          started_at: iso(row.started_at),
          finished_at: iso(row.finished_at),
          version: rank(row.status) * RANK_STEP + nextSeq(),
        },
      ],
    })
  }

  /** Claims of the tenant that hold or wait for its lock: live status and a heartbeat within the lease, in lock order. */
  async live(tenantId: number, now: number, leaseMs: number): Promise<JobRow[]> {
    return this.#select(
      `WHERE status IN ('queued', 'processing', 'cancelling') AND heartbeat_at >= fromUnixTimestamp64Milli({cutoff:Int64}, 'UTC')
       ORDER BY claimed_at, job_id`,
      { tenant: tenantId, cutoff: now - leaseMs },
    )
  }

  async get(tenantId: number, jobId: string): Promise<JobRow | undefined> {
    const [row] = await this.#select('WHERE job_id = {job:String}', { tenant: tenantId, job: jobId }, true)
    return row
  }

  /** The tenant's most recent run that got the lock (whatever its outcome; lost claims excluded). */
  async latestStarted(tenantId: number): Promise<JobRow | undefined> {
    const [row] = await this.#select(`WHERE started_at IS NOT NULL AND status != 'rejected' ORDER BY started_at DESC, ${WRITE_SEQ} DESC LIMIT 1`, { tenant: tenantId })
    return row
  }

  /** The tenant's most recent successful run. */
  async lastProcessed(tenantId: number, withResults = false): Promise<JobRow | undefined> {
    const [row] = await this.#select(`WHERE status = 'processed' ORDER BY finished_at DESC, ${WRITE_SEQ} DESC LIMIT 1`, { tenant: tenantId }, withResults)
    return row
  }

  /** Jobs (not lost claims) serving one occurrence of a schedule. */
  async forOccurrence(tenantId: number, scheduleId: string, occurrenceAt: number): Promise<JobRow[]> {
    return this.#select(
      `WHERE schedule_id = {schedule:String} AND occurrence_at = fromUnixTimestamp64Milli({occurrence:Int64}, 'UTC') AND status != 'rejected'
       ORDER BY claimed_at, job_id`,
      { tenant: tenantId, schedule: scheduleId, occurrence: occurrenceAt },
    )
  }

  /**
   * FINAL first, filters on non-key columns after it (in the outer query), so a superseded
   * state of a row can never match.
   */
  async #select(tail: string, params: Record<string, unknown>, withResults = false): Promise<JobRow[]> {
    const rs = await this.store.query({
      query: `SELECT ${columns(withResults)} FROM (SELECT * FROM processing_jobs FINAL WHERE tenant_id = {tenant:UInt64}) ${tail}`,
      query_params: params,
      format: 'JSONEachRow',
    })
    const rows = await rs.json<RawRow>()
    return rows.map((r) => ({
      tenant_id: Number(r.tenant_id),
      job_id: r.job_id,
      kind: r.kind,
      schedule_id: r.schedule_id,
      occurrence_at: r.occurrence_at_ms,
      status: r.status,
      replica_id: r.replica_id,
      analyses: r.analyses,
      batch_size: Number(r.batch_size),
      force: Boolean(Number(r.force)),
      claimed_at: Number(r.claimed_at_ms),
      heartbeat_at: Number(r.heartbeat_at_ms),
      started_at: r.started_at_ms,
      finished_at: r.finished_at_ms,
      records_processed: Number(r.records_processed),
      total_time: Number(r.total_time),
      results: r.results,
      error: r.error,
    }))
  }
}
