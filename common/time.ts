/** Epoch milliseconds as ISO 8601 UTC (what our JSON answers carry and ClickHouse parses, best effort); null stays null. */
export function iso(ms: number): string
export function iso(ms: number | null | undefined): string | null
export function iso(ms: number | null | undefined): string | null {
  if (ms === null || ms === undefined) return null
  const t = Number(ms)
  // Whole milliseconds from 1970 to 9999: the day's text from a cache, the time by arithmetic
  // (rows carry a few timestamps each, and Date#toISOString was a tenth of a recompute's time).
  if (!Number.isInteger(t) || t < 0 || t > MAX_FAST_MS) return new Date(t).toISOString()
  const day = Math.floor(t / DAY_MS)
  let rem = t - day * DAY_MS
  const h = Math.floor(rem / 3_600_000)
  rem -= h * 3_600_000
  const m = Math.floor(rem / 60_000)
  rem -= m * 60_000
  const s = Math.floor(rem / 1000)
  const milli = rem - s * 1000
  return `${isoDay(day)}T${TWO[h]}:${TWO[m]}:${TWO[s]}.${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`
}

/**
 * A time as a DateTime64(3) column's value in the rows we insert: the epoch milliseconds
 * themselves, which ClickHouse reads as the column's ticks (in JSON as in RowBinary), when they
 * are whole and inside the column's range (1970 to 2299); else the ISO text, as `iso` gives it.
 * No text is printed here and parsed there for the millions of times a recompute writes.
 */
export function storedTime(ms: number): number | string
export function storedTime(ms: number | null | undefined): number | string | null
export function storedTime(ms: number | null | undefined): number | string | null {
  if (ms === null || ms === undefined) return null
  return Number.isSafeInteger(ms) && ms >= 0 && ms <= MAX_DATETIME64_MS ? ms : iso(ms)
}

/** DateTime64's last millisecond (2299-12-31T23:59:59.999Z): a later time is stored as its ISO text. */
export const MAX_DATETIME64_MS = 10_413_791_999_999

/** The UTC day (days since 1970-01-01) as YYYY-MM-DD, cached: rows of one tenant share few days. */
export function isoDay(day: number): string {
  let text = dayTexts.get(day)
  if (text === undefined) {
    if (dayTexts.size >= 100_000) dayTexts.clear()
    text = new Date(day * DAY_MS).toISOString().slice(0, 10)
    dayTexts.set(day, text)
  }
  return text
}

const DAY_MS = 86_400_000
const MAX_FAST_MS = 253_402_300_799_999 // 9999-12-31T23:59:59.999Z
const TWO = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'))
const dayTexts = new Map<number, string>()
