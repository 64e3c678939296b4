/**
 * Exact decimal money helpers. Amounts travel as decimal strings ("1234.50", see events.ts) and
 * arithmetic happens on bigint cents, so no value ever passes through a binary float.
 */

export type DecimalErrorCode = 'invalid_decimal' | 'not_finite' | 'too_many_decimals' | 'too_many_digits'

/** Thrown by the parsers below; `code` is machine-readable (it becomes a FieldError code). */
export class DecimalError extends Error {
  constructor(
    readonly code: DecimalErrorCode,
    message: string,
  ) {
    super(message)
    this.name = 'DecimalError'
  }
}

// Plain decimal notation only: no thousands separators (in es-AR "1.234,56" means 1234.56, so
// guessing would silently turn amounts a thousand times smaller), no exponent in strings.
const PLAIN = /^([+-]?)(\d*)(?:\.(\d*))?$/
// JS prints some numbers in exponent form (1e-7, 1e+21); only numbers go through this one.
const EXPONENT = /^([+-]?)(\d+)(?:\.(\d+))?e([+-]?\d+)$/i

/**
 * Parses `v` into an integer count of 10^-scale units. Digits beyond `scale` must be zeros (we
 * reject rather than round: a rounded amount is a silently wrong amount).
 */
function parseScaled(v: string | number, scale: number): bigint
function parseScaled(v: string | number, scale: number, truncate: true): bigint | null
function parseScaled(v: string | number, scale: number, truncate = false): bigint | null {
  let sign: string
  let intPart: string
  let fracPart: string
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new DecimalError('not_finite', `${v} is not a finite number`)
    // String(n) is the shortest representation that round-trips, i.e. what was written in the
    // JSON: 12.5 -> "12.5", but 0.1 + 0.2 -> "0.30000000000000004" (rejected below, correctly).
    const s = String(v)
    const e = EXPONENT.exec(s)
    if (e) {
      ;[sign, intPart, fracPart] = shiftExponent(e[1] ?? '', e[2] ?? '', e[3] ?? '', Number(e[4]))
    } else {
      const m = PLAIN.exec(s)
      if (!m) throw new DecimalError('invalid_decimal', `${s} is not a decimal number`)
      ;[sign, intPart, fracPart] = [m[1] ?? '', m[2] ?? '', m[3] ?? '']
    }
  } else if (typeof v === 'string') {
    const s = v.trim()
    const m = PLAIN.exec(s)
    if (!m || (!m[2] && !m[3])) {
      if (/^[+-]?(nan|infinity)$/i.test(s)) throw new DecimalError('not_finite', `"${v}" is not a finite number`)
      throw new DecimalError('invalid_decimal', `"${v}" is not a decimal number (expected e.g. "1234.50")`)
    }
    ;[sign, intPart, fracPart] = [m[1] ?? '', m[2] ?? '', m[3] ?? '']
  } else {
    throw new DecimalError('invalid_decimal', `expected a number or a decimal string, got ${typeof v}`)
  }
  const kept = fracPart.slice(0, scale).padEnd(scale, '0')
  if (/[1-9]/.test(fracPart.slice(scale))) {
    // Digits beyond `scale` are dropped (truncated toward zero) only for the noise check above.
    if (truncate) return BigInt((intPart || '0') + kept) * (sign === '-' ? -1n : 1n)
    throw new DecimalError('too_many_decimals', `${String(v).trim()} has more than ${scale} decimals`)
  }
  const units = BigInt((intPart || '0') + kept)
  return sign === '-' ? -units : units
}

/** Moves the decimal point of `int.frac` by `exp` places; returns [sign, int, frac]. */
function shiftExponent(sign: string, int: string, frac: string, exp: number): [string, string, string] {
  const digits = int + frac
  const point = int.length + exp
  if (point <= 0) return [sign, '0', '0'.repeat(-point) + digits]
  if (point >= digits.length) return [sign, digits + '0'.repeat(point - digits.length), '']
  return [sign, digits.slice(0, point), digits.slice(point)]
}

/**
 * `units` × 10^-scale as canonical decimal text. `units` is an integer: a bigint, or a number that
 * is a safe integer (formatted without a BigInt, for the hot paths that have one).
 */
export function formatScaled(units: bigint | number, scale: number): string {
  // Cents of a safe integer, the common case: two digits by arithmetic, no padding or slicing.
  if (scale === 2 && typeof units === 'number' && Number.isSafeInteger(units)) {
    const abs = units < 0 ? -units : units
    const frac = abs % 100
    return `${units < 0 ? '-' : ''}${(abs - frac) / 100}.${frac < 10 ? '0' : ''}${frac}`
  }
  const negative = units < 0
  const digits = String(negative ? -units : units).padStart(scale + 1, '0')
  const int = digits.slice(0, digits.length - scale)
  const frac = digits.slice(digits.length - scale)
  return (negative ? '-' : '') + int + (scale > 0 ? '.' + frac : '')
}

/**
 * Canonical decimal string with exactly `scale` decimals ("12.5" | 12.5 -> "12.50"). Throws a
 * DecimalError on NaN/Infinity, malformed input, non-zero digits beyond `scale`, or more than
 * `precision - scale` integer digits (Avro decimal(15,2) holds at most 13).
 */
export function normaliseDecimal(v: string | number, scale = 2, precision = 15): string {
  // Already canonical (what the Avro decimal decoder gives): the same text back, without a BigInt.
  if (typeof v === 'string' && canonicalPattern(scale, precision).test(v) && !NEGATIVE_ZERO.test(v)) return v
  const units = parseScaled(v, scale)
  const abs = units < 0n ? -units : units
  if (abs >= 10n ** BigInt(precision)) {
    throw new DecimalError('too_many_digits', `${String(v).trim()} has more than ${precision - scale} integer digits`)
  }
  return formatScaled(units, scale)
}

/** `-0.00`: canonical in shape, but the canonical zero has no sign. */
const NEGATIVE_ZERO = /^-0(\.0*)?$/
const canonicalPatterns = new Map<string, RegExp>()
let lastPattern: { scale: number; precision: number; re: RegExp } | null = null
/** The canonical text of a decimal: optional minus, no leading zero, exactly `scale` decimals. */
function canonicalPattern(scale: number, precision: number): RegExp {
  // Every amount of a stream asks for the same one: no key string per call.
  if (lastPattern?.scale === scale && lastPattern.precision === precision) return lastPattern.re
  const key = `${scale}/${precision}`
  let re = canonicalPatterns.get(key)
  if (!re) {
    const int = precision - scale > 0 ? `(0|[1-9]\\d{0,${precision - scale - 1}})` : '0'
    re = new RegExp(`^-?${int}${scale > 0 ? `\\.\\d{${scale}}` : ''}$`)
    canonicalPatterns.set(key, re)
  }
  lastPattern = { scale, precision, re }
  return re
}

/**
 * Like normaliseDecimal at 2 decimals, but an amount within 1e-6 of a whole cent is snapped to
 * that cent: binary-float noise from spreadsheets and exports (22.200000000000003,
 * 70.04999999999999) is not a fraction of a cent anyone meant. Any other fraction of a cent
 * (12.345, 0.001) is still refused with too_many_decimals. Decided on the decimal text, never
 * through a float.
 */
export function normaliseAmount(v: string | number, precision = 15): string {
  try {
    return normaliseDecimal(v, 2, precision)
  } catch (err) {
    if (!(err instanceof DecimalError) || err.code !== 'too_many_decimals') throw err
    const snapped = snapCentNoise(v)
    if (snapped === null) throw err
    return normaliseDecimal(snapped, 2, precision)
  }
}

/** The amount rounded to the cent when it lies within 1e-6 of one, else null. */
function snapCentNoise(v: string | number): string | null {
  const units = parseScaled(v, 8, true)
  if (units === null) return null
  // 10^8 units per currency unit: a cent is 10^6 units, the tolerance 100 units (1e-6).
  const cent = 1_000_000n
  const abs = units < 0n ? -units : units
  const rest = abs % cent
  if (rest > 100n && cent - rest > 100n) return null
  const cents = (abs + cent / 2n) / cent
  return formatScaled(units < 0n ? -cents : cents, 2)
}

/** "12.50" -> 1250n. Accepts anything normaliseDecimal accepts with scale 2 (no precision cap). */
export function toCents(s: string): bigint {
  // Plain amounts (what the Avro decoder gives) by character codes: every order event's amounts
  // pass here, and the regular expression and the BigInt of a string were a tenth of the ingest
  // path's time. Anything else (signs, spaces, an exponent, past 2^53) by parseScaled.
  const cents = scaledUnits(s, 2)
  return cents === null ? parseScaled(s, 2) : BigInt(cents)
}

/**
 * A decimal string's (or an integer's) value × 10^scale as an exact safe integer, or null: plain
 * text only ("-12.05", "7", no sign but a minus, no point without digits after it, at most
 * `scale` decimals). Read by character codes, for the hot paths (toCents, the RowBinary encoder).
 */
export function scaledUnits(v: unknown, scale: number): number | null {
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) return null // a fraction's binary value may not be what its text says
    const u = v * 10 ** scale
    return Number.isSafeInteger(u) ? u : null
  }
  if (typeof v !== 'string') return null
  const n = v.length
  const negative = v.charCodeAt(0) === 45
  let i = negative ? 1 : 0
  let u = 0
  let intDigits = 0
  let fracDigits = -1 // -1: no point yet
  for (; i < n; i++) {
    const c = v.charCodeAt(i)
    if (c === 46 && fracDigits < 0) {
      fracDigits = 0
      continue
    }
    const d = c - 48
    if (d < 0 || d > 9) return null
    if (fracDigits >= 0) {
      if (++fracDigits > scale) return null
    } else intDigits++
    u = u * 10 + d
  }
  // "1." or "." or "" or "-" are not decimals; more than 18 integer digits never fit.
  if (intDigits === 0 || intDigits > 18 || fracDigits === 0) return null
  u *= 10 ** (scale - Math.max(fracDigits, 0))
  if (!Number.isSafeInteger(u)) return null
  return negative ? -u : u
}

/**
 * `scaledUnits` of a decimal of at most `precision` digits (|units| < 10^precision), else null;
 * minus zero reads as zero. What a decimal(precision, scale) column or Avro type holds, for the
 * hot paths that check amounts (validation, the Avro decimal type).
 */
export function unitsWithin(v: unknown, scale: number, precision: number): number | null {
  const u = scaledUnits(v, scale)
  // Every safe integer has at most 16 digits: from precision 16 on, scaledUnits decides alone.
  return u !== null && (precision > 15 || Math.abs(u) < 10 ** precision) ? u + 0 : null
}

/** 1250n -> "12.50", -5n -> "-0.05". */
export function fromCents(c: bigint): string {
  return formatScaled(c, 2)
}

/**
 * `fromCents` for a number of cents (rounded to the nearest cent first): the same text without a
 * BigInt, exact for every safe integer. Row building calls it a few times per customer.
 */
export function centsText(cents: number): string {
  const c = Math.round(cents)
  return formatScaled(Number.isSafeInteger(c) ? c : BigInt(c), 2)
}

/** Exact sum of two amounts, "0.10" + "0.20" -> "0.30". */
export function addDecimals(a: string, b: string): string {
  return fromCents(toCents(a) + toCents(b))
}
