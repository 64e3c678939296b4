/**
 * Row versions for the ReplacingMergeTree tables: strictly increasing within a process, close to
 * the wall clock across processes. Wall clock, not an injectable business clock: versions order
 * writes, they are not business time.
 */
let lastSeq = 0
/** Milliseconds; combined with RANK_STEP where a state must outrank others. */
export function nextSeq(): number {
  lastSeq = Math.max(Date.now(), lastSeq + 1)
  return lastSeq
}

/** 2^44 ms is about year 2527: rank * RANK_STEP + nextSeq() never collides across ranks. */
export const RANK_STEP = 2 ** 44

let lastVersion = 0
/** Microseconds (finer, for rows rewritten several times a millisecond). */
export function nextVersion(): number {
  lastVersion = Math.max(lastVersion + 1, Date.now() * 1000)
  return lastVersion
}
