import type { JobRow } from './jobs-table.ts'

/**
 * The tenant lock, decided from the tenant's live claims as read from processing_jobs (in lock
 * order: claimed_at, job_id). A claimant inserts its claim row (W1), then
 *   read 1 (`afterClaim`): it may take the lock when no other claim has started and no claim
 *     precedes it; a queued job ahead means "get in line"; a claim ahead that is itself between
 *     its insert and its decision means "read again shortly";
 *   W2: it writes started_at;
 *   read 2 (`afterStart`): it keeps the lock when no live claim precedes it; a started or queued
 *     claim ahead makes it give the lock back; one still deciding means "read again shortly".
 * Why at most one claimant holds the lock, whatever the clocks: say X and Y both kept it, X ahead
 * of Y in lock order. Y's keeping read did not see X live, so X's claim was inserted after that
 * read (X cannot have finished: it still holds the lock), which came after Y's W2; so X's read 1
 * saw Y started and X never took the lock. A race can at worst make both give up (two 409s).
 * This needs read-after-write consistency from the store (docs/processing.md for replicated ClickHouse).
 */
export type AfterClaim = 'take' | 'wait' | 'blocked'
export type AfterStart = 'keep' | 'wait' | 'lost'

export function afterClaim(live: readonly JobRow[], jobId: string): AfterClaim {
  const i = live.findIndex((j) => j.job_id === jobId)
  if (i < 0) return 'blocked'
  if (live.some((j) => j.job_id !== jobId && j.started_at !== null)) return 'blocked'
  const ahead = live.slice(0, i)
  if (ahead.some((j) => j.status !== 'processing')) return 'blocked'
  return ahead.length ? 'wait' : 'take'
}

export function afterStart(live: readonly JobRow[], jobId: string): AfterStart {
  const i = live.findIndex((j) => j.job_id === jobId)
  if (i < 0) return 'lost'
  const ahead = live.slice(0, i)
  if (!ahead.length) return 'keep'
  return ahead.some((j) => j.started_at !== null || j.status !== 'processing') ? 'lost' : 'wait'
}

/** The claim a rejected claimant reports: the running job, else the first in line. */
export function blockerOf(live: readonly JobRow[], jobId: string): JobRow | undefined {
  const others = live.filter((j) => j.job_id !== jobId)
  return others.find((j) => j.started_at !== null) ?? others[0]
}

/** How long a claimant re-reads while another claim ahead of it is still deciding. */
export const RACE_RECHECK_MS = 25

