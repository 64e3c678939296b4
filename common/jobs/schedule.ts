/** Recurrence of scheduled jobs (processing schedules, recurring connector syncs). Pure: no clock, no I/O. */
export const FREQUENCIES = ['hourly', 'every_6_hours', 'every_12_hours', 'daily', 'weekly', 'monthly'] as const
export type Frequency = (typeof FREQUENCIES)[number]

const HOUR = 3_600_000
const FIXED_PERIOD_MS: Record<Exclude<Frequency, 'monthly'>, number> = {
  hourly: HOUR,
  every_6_hours: 6 * HOUR,
  every_12_hours: 12 * HOUR,
  daily: 24 * HOUR,
  weekly: 7 * 24 * HOUR,
}

/**
 * The k-th occurrence of a schedule anchored at `anchor` (epoch ms, UTC). Monthly adds calendar
 * months in UTC and clamps the day to the month's length, always from the anchor, so a schedule
 * anchored on the 31st runs on Feb 28/29 and again on Mar 31 instead of drifting to the 28th.
 */
export function occurrence(anchor: number, frequency: Frequency, k: number): number {
  if (frequency !== 'monthly') return anchor + k * FIXED_PERIOD_MS[frequency]
  const a = new Date(anchor)
  const monthIndex = a.getUTCMonth() + k
  const year = a.getUTCFullYear() + Math.floor(monthIndex / 12)
  const month = ((monthIndex % 12) + 12) % 12
  const daysInMonth = new Date(Date.UTC(year, month + 1, 0)).getUTCDate()
  return Date.UTC(year, month, Math.min(a.getUTCDate(), daysInMonth), a.getUTCHours(), a.getUTCMinutes(), a.getUTCSeconds(), a.getUTCMilliseconds())
}

/** The first occurrence strictly after `after`. Missed occurrences are skipped, not caught up one by one. */
export function nextOccurrenceAfter(anchor: number, frequency: Frequency, after: number): number {
  if (after < anchor) return anchor
  // Estimate k from the mean period, then walk: exact for fixed periods, a step or two for months.
  const mean = frequency === 'monthly' ? 30.436875 * 24 * HOUR : FIXED_PERIOD_MS[frequency]
  let k = Math.max(0, Math.floor((after - anchor) / mean) - 1)
  while (occurrence(anchor, frequency, k) <= after) k++
  while (k > 0 && occurrence(anchor, frequency, k - 1) > after) k--
  return occurrence(anchor, frequency, k)
}

/**
 * The occurrence to run now, if one is due: the latest one after `after` and at or before `now`
 * (null: none yet). Occurrences missed while nothing ran are skipped: one run catches up, not one
 * per missed slot.
 */
export function latestDueOccurrence(anchor: number, frequency: Frequency, after: number, now: number): number | null {
  let occ = nextOccurrenceAfter(anchor, frequency, after)
  if (occ > now) return null
  for (let n = nextOccurrenceAfter(anchor, frequency, occ); n <= now; n = nextOccurrenceAfter(anchor, frequency, occ)) occ = n
  return occ
}
