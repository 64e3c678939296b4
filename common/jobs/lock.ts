/**
 * Claiming jobs in a ClickHouse job table (table.ts) without a coordinator, in two ways.
 *
 * **A lock per group** (processing: one job per tenant at a time), decided from the group's live
 * claims as read from the table in lock order (claim time, then id). A claimant inserts its claim
 * row (W1), then
 *   read 1 (`afterClaim`): it may take the lock when no other claim has started and no claim
 *     precedes it; a waiting claim ahead (queued, or being cancelled) means "get in line"; a claim
 *     ahead that is itself between its insert and its decision means "read again shortly";
 *   W2: it writes its start;
 *   read 2 (`afterStart`): it keeps the lock when no live claim precedes it; a started or waiting
 *     claim ahead makes it give the lock back; one still deciding means "read again shortly".
 * Why at most one claimant holds the lock, whatever the clocks: say X and Y both kept it, X ahead
 * of Y in lock order. Y's keeping read did not see X live, so X's claim was inserted after that
 * read (X cannot have finished: it still holds the lock), which came after Y's W2; so X's read 1
 * saw Y started and X never took the lock. A race can at worst make both give up.
 *
 * **A single row** (connector syncs: one row per job, taken over when its lease expires): write
 * the row as ours, read it back, go on only when the row read is ours. Two claimants can in a
 * narrow window both go on; the job must then re-check ownership before each step that matters
 * and its steps must be idempotent.
 *
 * Both need read-after-write consistency from the store (docs/processing.md for replicated ClickHouse).
 */

/** What the group lock needs to know of a live claim. */
export interface LockClaim {
  id: string
  /** Between its insert and its decision (true), or waiting in line or being cancelled (false). */
  racing: boolean
  /** Wrote its start: holds the lock, or is about to confirm it. */
  started: boolean
}

export type AfterClaim = 'take' | 'wait' | 'blocked'
export type AfterStart = 'keep' | 'wait' | 'lost'

export function afterClaim(live: readonly LockClaim[], id: string): AfterClaim {
  const i = live.findIndex((j) => j.id === id)
  if (i < 0) return 'blocked'
  if (live.some((j) => j.id !== id && j.started)) return 'blocked'
  const ahead = live.slice(0, i)
  if (ahead.some((j) => !j.racing)) return 'blocked'
  return ahead.length ? 'wait' : 'take'
}

export function afterStart(live: readonly LockClaim[], id: string): AfterStart {
  const i = live.findIndex((j) => j.id === id)
  if (i < 0) return 'lost'
  const ahead = live.slice(0, i)
  if (!ahead.length) return 'keep'
  return ahead.some((j) => j.started || !j.racing) ? 'lost' : 'wait'
}

/** The claim a rejected claimant reports: the one that started, else the first in line. */
export function blockerOf<T extends LockClaim>(live: readonly T[], id: string): T | undefined {
  const others = live.filter((j) => j.id !== id)
  return others.find((j) => j.started) ?? others[0]
}

/** How long a claimant re-reads while another claim ahead of it is still deciding. */
export const RACE_RECHECK_MS = 25

/** A claim deciding takes two store round trips; a claimant that vanished mid-decision is given up on after this. */
export function raceWaitMs(leaseMs: number): number {
  return Math.min(5_000, leaseMs / 2)
}

/**
 * The single-row claim: writes `claimed` (the row as ours) and reads it back; resolves with it
 * when the row read is still ours, else null (another claimant wrote after us).
 */
export async function claimRow<Row>(claimed: Row, io: { write(row: Row): Promise<void>; read(): Promise<Row | null>; ours(row: Row): boolean }): Promise<Row | null> {
  await io.write(claimed)
  const check = await io.read()
  return check && io.ours(check) ? claimed : null
}
