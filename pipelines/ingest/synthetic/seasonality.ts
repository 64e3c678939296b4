/**
 * Relative buying intensity over the Argentine retail calendar, used to thin a Poisson process:
 * a candidate purchase at time t is kept with probability seasonality(t) / SEASONALITY_MAX.
 * Calendar in Argentina time (UTC−3 all year; no daylight saving since 2009).
 */

const ART_OFFSET_MS = -3 * 3600_000
const DAY_MS = 86_400_000

/** Jan–Feb are summer holidays (slow); Nov–Dec carry CyberMonday and Christmas. */
const MONTH_FACTOR = [0.7, 0.7, 0.95, 0.95, 1.05, 1.0, 1.0, 1.0, 1.0, 1.05, 1.3, 1.6] as const

/** Online orders by hour of day: quiet at night, peaking in the evening. Normalised to mean 1 below. */
const HOUR_RAW = [
  0.5, 0.3, 0.2, 0.15, 0.15, 0.2, 0.35, 0.6, 0.85, 1.0, 1.1, 1.15,
  1.2, 1.15, 1.1, 1.1, 1.15, 1.2, 1.3, 1.4, 1.5, 1.5, 1.3, 0.9,
] as const
const HOUR_MEAN = HOUR_RAW.reduce((a, b) => a + b, 0) / HOUR_RAW.length
const HOUR_FACTOR = HOUR_RAW.map((h) => h / HOUR_MEAN)

/** Multiplier on the three days of Hot Sale (May) and CyberMonday (November). */
const SALE_EVENT_FACTOR = 2.5

export const SEASONALITY_MAX = Math.max(...MONTH_FACTOR) * SALE_EVENT_FACTOR * Math.max(...HOUR_FACTOR)

/** Day of month (1-based) of the n-th given weekday (0 = Sunday) of a month. */
function nthWeekday(year: number, month: number, weekday: number, n: number): number {
  const first = new Date(Date.UTC(year, month, 1)).getUTCDay()
  return 1 + ((weekday - first + 7) % 7) + 7 * (n - 1)
}

/** Factor of one calendar day (month, sale events, Christmas tail). */
function dayFactor(year: number, month: number, day: number): number {
  let factor: number = MONTH_FACTOR[month] ?? 1
  // Hot Sale: three days from about the second Monday of May.
  if (month === 4) {
    const from = nthWeekday(year, 4, 1, 2)
    if (day >= from && day < from + 3) factor *= SALE_EVENT_FACTOR
  }
  // CyberMonday: three days from about the first Monday of November.
  if (month === 10) {
    const from = nthWeekday(year, 10, 1, 1)
    if (day >= from && day < from + 3) factor *= SALE_EVENT_FACTOR
  }
  // Mother's Day (third Sunday of October): gifts bought the week before.
  if (month === 9) {
    const sunday = nthWeekday(year, 9, 0, 3)
    if (day > sunday - 8 && day <= sunday) factor *= 1.5
  }
  // After Christmas the December rush stops.
  if (month === 11 && day >= 25) factor *= 0.5
  return factor
}

/** Day factors cached by day number: a window of years has only a few thousand days. */
const dayCache = new Map<number, number>()

/** Relative purchase intensity at UTC epoch ms `t` (mean about 1 over a year). */
export function seasonality(t: number): number {
  const local = t + ART_OFFSET_MS
  const dayNumber = Math.floor(local / DAY_MS)
  let factor = dayCache.get(dayNumber)
  if (factor === undefined) {
    const d = new Date(dayNumber * DAY_MS)
    factor = dayFactor(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())
    if (dayCache.size < 100_000) dayCache.set(dayNumber, factor)
  }
  const hour = Math.floor((local - dayNumber * DAY_MS) / 3600_000)
  return factor * (HOUR_FACTOR[hour] ?? 1)
}
