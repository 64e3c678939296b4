/**
 * The reference date: the "today" against which a tenant's customers age (recency, churn levels,
 * CLV's T and horizon, the analytics' periods and windows). Pure: the wall clock and the tenant's
 * latest event time are arguments. Rules and advice: docs/features.md, "Reference date".
 *
 * - `now` (default): the wall clock. Every order counts.
 * - `data_end`: the latest `occurred_at` of the tenant's orders (the wall clock while it has none):
 *   imported history, a backtest or a demo run a year later reads as it did the day the data end.
 *   Every order counts (none is later than the data's end).
 * - a fixed `YYYY-MM-DD`: the end of that UTC day. Orders placed after it do not count, so the
 *   answers are what they were on that day.
 */
import { z } from 'zod'

export const DAY_MS = 86_400_000

export type ReferenceSetting = 'now' | 'data_end' | `${number}-${number}-${number}`

/** Earliest reference or as_of date (the earliest event time accepted, validation.ts MIN_TIMESTAMP). */
export const EARLIEST_DATE = '1990-01-01'

/**
 * A real calendar date (2011-02-30 is refused) from 1990-01-01 to today (UTC): a later one would
 * age customers against a day that has not come.
 */
export const ReferenceDateSchema = z.iso.date().refine((d) => d >= EARLIEST_DATE && Date.parse(`${d}T00:00:00Z`) <= Date.now(), {
  message: `must be a date from ${EARLIEST_DATE} to today`,
})

/** `now`, `data_end` or a date (ReferenceDateSchema). */
export const ReferenceSettingSchema = z.string().refine((v) => v === 'now' || v === 'data_end' || ReferenceDateSchema.safeParse(v).success, {
  message: `expected "now", "data_end" or a date YYYY-MM-DD from ${EARLIEST_DATE} to today`,
}) as unknown as z.ZodType<ReferenceSetting>

export interface Reference {
  /** The setting (or `as_of`) it came from. */
  setting: ReferenceSetting
  /** Where it came from: the tenant's setting or one request's `as_of`. */
  source: 'setting' | 'as_of'
  /** The instant customers are aged against (epoch ms). */
  ms: number
  /** Orders placed after this instant do not count; Infinity when all count. */
  cutoffMs: number
}

/** End of the UTC day of a `YYYY-MM-DD` date. */
export function endOfDay(date: string): number {
  return Date.parse(`${date}T00:00:00Z`) + DAY_MS - 1
}

export function resolveReference(setting: ReferenceSetting, at: { wallMs: number; dataEndMs: number | null }, source: Reference['source'] = 'setting'): Reference {
  if (setting === 'now') return { setting, source, ms: at.wallMs, cutoffMs: Infinity }
  if (setting === 'data_end') return { setting, source, ms: at.dataEndMs ?? at.wallMs, cutoffMs: Infinity }
  const end = endOfDay(setting)
  return { setting, source, ms: end, cutoffMs: end }
}

/** The UTC date of a reference, `YYYY-MM-DD`. */
export const referenceDate = (r: Pick<Reference, 'ms'>): string => new Date(r.ms).toISOString().slice(0, 10)

/** What responses carry about the reference they were computed against (docs/features.md). */
export function referenceMetadata(r: Reference): { reference_date: string; reference_date_setting: ReferenceSetting; reference_date_source: Reference['source'] } {
  return { reference_date: referenceDate(r), reference_date_setting: r.setting, reference_date_source: r.source }
}
