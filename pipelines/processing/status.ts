import type { JobRow } from './jobs-table.ts'

export type TenantProcessingStatus = 'never_processed' | 'processing' | 'processed' | 'failed' | 'queued'

/** The spec's "Status object" (GET /api/v2/cdp/process/status/{tenantId}). */
export interface StatusObject {
  status: TenantProcessingStatus
  last_processed: string | null
  hours_since_last_sync: number | null
  is_stale: boolean
  records_processed: string
  next_scheduled: string | null
  processing_queue: { position: number | null; estimated_time: string | null }
}

export interface StatusInput {
  /** Live claims in lock order. */
  live: readonly JobRow[]
  /** Most recent run that got the lock (live or not). */
  latestStarted?: JobRow
  /** Most recent successful run. */
  lastProcessed?: JobRow
  /** Earliest next_run of the tenant's active schedules. */
  nextScheduled: number | null
  now: number
  staleAfterMs: number
  /** The tenant's current data version: results of a run that saw another one are stale. */
  dataVersion: string
}

const HOUR_MS = 3_600_000

/**
 * Pure: the status object from the tenant's jobs.
 * - status: `queued` while a job waits for the tenant's lock, else `processing` while one runs,
 *   else the outcome of the latest run that started: `processed`, or `failed` (failed, cancelled
 *   after it started, or its replica died); `never_processed` when no run ever started.
 * - processing_queue: position = place in line of the tenant's most recently queued job (1 runs
 *   next); estimated_time = until that job starts (queued) or until the running job ends
 *   (processing), from the duration of the last successful run; null without one.
 */
export function describeStatus(input: StatusInput): StatusObject {
  const { live, latestStarted, lastProcessed, now } = input
  const waiting = live.filter((j) => j.status === 'queued')
  const running = live.find((j) => j.status !== 'queued')
  const expected = lastProcessed ? lastProcessed.total_time : undefined
  const remaining = running ? (expected === undefined ? undefined : Math.max(0, expected - (now - (running.started_at ?? running.claimed_at)) / 1000)) : 0

  let status: TenantProcessingStatus
  if (waiting.length) status = 'queued'
  else if (running) status = 'processing'
  else if (!latestStarted) status = 'never_processed'
  else status = latestStarted.status === 'processed' ? 'processed' : 'failed'

  let position: number | null = null
  let estimate: number | undefined
  if (waiting.length) {
    position = waiting.length
    estimate = remaining === undefined || expected === undefined ? undefined : remaining + (position - 1) * expected
  } else if (running) estimate = remaining

  const last = lastProcessed?.finished_at ?? null
  return {
    status,
    last_processed: last === null ? null : new Date(last).toISOString(),
    hours_since_last_sync: last === null ? null : Math.max(0, Math.floor((now - last) / HOUR_MS)),
    is_stale: last === null || now - last > input.staleAfterMs || lastProcessed?.data_version !== input.dataVersion,
    records_processed: String(lastProcessed?.records_processed ?? 0),
    next_scheduled: input.nextScheduled === null ? null : new Date(input.nextScheduled).toISOString(),
    processing_queue: { position, estimated_time: estimate === undefined ? null : `${Math.ceil(estimate)}s` },
  }
}
