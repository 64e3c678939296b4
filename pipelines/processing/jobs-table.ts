import type { Store } from '../../common/store/clickhouse.ts'
import type { Analysis } from '../features/index.ts'
import { RANK_STEP } from '../../common/store/versions.ts'
import { JobTable, type JobTableSpec } from '../../common/jobs/table.ts'
import { leaseCutoff } from '../../common/jobs/lease.ts'
import type { LockClaim } from '../../common/jobs/lock.ts'

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
  /** The tenant's data version (common/store/data-changes.ts) as the run started; '' before it did. */
  data_version: string
}

export function isLive(status: JobStatus): boolean {
  return (LIVE_STATUSES as readonly string[]).includes(status)
}

export function isFinal(status: JobStatus): boolean {
  return (FINAL_STATUSES as readonly string[]).includes(status)
}

/** See 003_processing.sql: later lifecycle stages win over earlier ones whatever the clocks say. */
function rank(row: JobRow): number {
  if (row.status === 'cancelling') return 2
  return isFinal(row.status) ? 3 : 1
}

/**
 * The write counter inside a version: orders runs whose clock times are equal (a coarse or
 * injected clock). Runs of a tenant never overlap, so the later run's writes come after the
 * earlier run's last one.
 */
const WRITE_SEQ = `(version % ${RANK_STEP})`

const SPEC: JobTableSpec<JobRow> = {
  table: 'processing_jobs',
  columns: ['tenant_id', 'job_id', 'kind', 'schedule_id', 'occurrence_at', 'status', 'replica_id', 'analyses', 'batch_size', 'force', 'claimed_at', 'heartbeat_at', 'started_at', 'finished_at', 'records_processed', 'total_time', 'results', 'error', 'data_version'],
  timeColumns: ['occurrence_at', 'claimed_at', 'heartbeat_at', 'started_at', 'finished_at'],
  flagColumns: ['force'],
  numberColumns: ['tenant_id', 'batch_size', 'records_processed', 'total_time'],
  rank,
}

/** A claim as the tenant lock sees it (common/jobs/lock.ts). */
export const lockClaim = (j: JobRow): LockClaim & { row: JobRow } => ({ id: j.job_id, racing: j.status === 'processing', started: j.started_at !== null, row: j })

export class JobsTable {
  readonly #table: JobTable<JobRow>

  constructor(store: Store) {
    this.#table = new JobTable(store, SPEC)
  }

  /** Writes the whole row as its new state (ReplacingMergeTree: the highest version wins). */
  write(row: JobRow): Promise<void> {
    return this.#table.write(row)
  }

  /** Claims of the tenant that hold or wait for its lock: live status and a heartbeat within the lease, in lock order. */
  live(tenantId: number, now: number, leaseMs: number): Promise<JobRow[]> {
    return this.#select(`status IN ('queued', 'processing', 'cancelling') AND heartbeat_at >= fromUnixTimestamp64Milli({cutoff:Int64}, 'UTC')`, 'ORDER BY claimed_at, job_id', {
      tenant: tenantId,
      cutoff: leaseCutoff(now, leaseMs),
    })
  }

  async get(tenantId: number, jobId: string): Promise<JobRow | undefined> {
    const [row] = await this.#select('job_id = {job:String}', '', { tenant: tenantId, job: jobId }, true)
    return row
  }

  /** The tenant's most recent run that got the lock (whatever its outcome; lost claims excluded). */
  async latestStarted(tenantId: number): Promise<JobRow | undefined> {
    const [row] = await this.#select(`started_at IS NOT NULL AND status != 'rejected'`, `ORDER BY started_at DESC, ${WRITE_SEQ} DESC LIMIT 1`, { tenant: tenantId })
    return row
  }

  /** The tenant's most recent successful run. */
  async lastProcessed(tenantId: number, withResults = false): Promise<JobRow | undefined> {
    const [row] = await this.#select(`status = 'processed'`, `ORDER BY finished_at DESC, ${WRITE_SEQ} DESC LIMIT 1`, { tenant: tenantId }, withResults)
    return row
  }

  /** Jobs (not lost claims) serving one occurrence of a schedule. */
  forOccurrence(tenantId: number, scheduleId: string, occurrenceAt: number): Promise<JobRow[]> {
    return this.#select(
      `schedule_id = {schedule:String} AND occurrence_at = fromUnixTimestamp64Milli({occurrence:Int64}, 'UTC') AND status != 'rejected'`,
      'ORDER BY claimed_at, job_id',
      { tenant: tenantId, schedule: scheduleId, occurrence: occurrenceAt },
    )
  }

  #select(where: string, tail: string, params: Record<string, unknown>, withResults = false): Promise<JobRow[]> {
    return this.#table.select({ key: 'tenant_id = {tenant:UInt64}', where, tail, params, skip: withResults ? [] : ['results'] })
  }
}
