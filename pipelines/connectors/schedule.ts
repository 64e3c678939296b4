/**
 * Recurring syncs (configuration.sync_interval). Pure. Occurrences are anchored at the
 * integration's creation; the initial sync counts as the occurrence at the anchor. Missed
 * occurrences (the role was down) are skipped: one sync catches up, not one per missed slot.
 */
import { latestDueOccurrence, nextOccurrenceAfter, type Frequency } from '../../common/jobs/schedule.ts'

export interface Schedulable {
  created_at: number
  is_active: boolean
  deleted_at: number | null
  configuration: { sync_interval: string }
}

const recurring = (i: Schedulable): Frequency | null =>
  i.is_active && i.deleted_at === null && i.configuration.sync_interval !== 'manual' ? (i.configuration.sync_interval as Frequency) : null

/** The next occurrence after the last one scheduled (null: no recurring sync). May be in the past when due. */
export function nextScheduledSync(i: Schedulable, lastScheduled: number | null): number | null {
  const f = recurring(i)
  if (!f) return null
  return nextOccurrenceAfter(i.created_at, f, Math.max(lastScheduled ?? i.created_at, i.created_at))
}

/** The occurrence to run now, if one is due: the latest one at or before `now`. */
export function dueOccurrence(i: Schedulable, lastScheduled: number | null, now: number): number | null {
  const f = recurring(i)
  return f ? latestDueOccurrence(i.created_at, f, Math.max(lastScheduled ?? i.created_at, i.created_at), now) : null
}
