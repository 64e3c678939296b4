/**
 * Argentine national ids: DNI (7-8 digits) and CUIL/CUIT (11 digits: 2-digit type, the 8-digit
 * DNI or company number, a check digit). Pure; bad input gives reasons, never an exception.
 *
 * Check digit (AFIP): r = Σ d_i · w_i mod 11 over the first 10 digits, w = 5,4,3,2,7,6,5,4,3,2;
 * the digit is 0 when r = 0, else 11 − r, and 10 is written 9 (AFIP re-issues those numbers with
 * type 23 or 33 and digit 9 or 4, and validators such as python-stdnum accept the 9).
 */

export type NationalIdType = 'DNI' | 'CUIL'

export interface ParsedNationalId {
  type: NationalIdType | null
  /** The DNI inside, 7-8 digits without leading zeros; null for companies and bad input. */
  dni: string | null
  dniNumber: number | null
  /** The CUIL/CUIT type prefix (20, 23, 24, 27, ...); null for a bare DNI. */
  cuilPrefix: number | null
  issues: string[]
}

const WEIGHTS = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2]
// Natural persons: 20 male, 27 female, 23/24 either (re-issued or duplicate numbers); 25 and 26
// are listed by some sources as further duplicate codes.
const PERSON_PREFIXES = new Set([20, 23, 24, 25, 26, 27])
// 30/33/34 companies; 50/51/55 AFIP's generic numbers for foreign persons and entities.
const NOT_PERSON_PREFIXES = new Set([30, 33, 34, 50, 51, 55])
// "DNI 12.345.678", "CUIL: 20-...": a leading label is dropped, separators are dots, dashes,
// slashes and spaces.
const LABEL = /^\s*(dni|cuil|cuit|d\.n\.i\.?|nro\.?|n[°º])\s*[:#]?\s*/i
const SEPARATORS = /[\s.\-/_]/g
const DIGITS = /^\d+$/

/** The CUIL/CUIT check digit for the first 10 digits (a string of 10 digits). */
export function cuilCheckDigit(first10: string): number {
  let sum = 0
  for (let i = 0; i < 10; i++) sum += (first10.charCodeAt(i) - 48) * WEIGHTS[i]!
  const r = sum % 11
  if (r === 0) return 0
  const d = 11 - r
  return d === 10 ? 9 : d
}

function fail(issue: string): ParsedNationalId {
  return { type: null, dni: null, dniNumber: null, cuilPrefix: null, issues: [issue] }
}

export function parseNationalId(raw: unknown): ParsedNationalId {
  let text: string
  if (typeof raw === 'string') text = raw
  else if (typeof raw === 'number' && Number.isSafeInteger(raw) && raw > 0) text = String(raw)
  else if (raw === null || raw === undefined) return fail('national_id_empty')
  else return fail('national_id_not_numeric')

  const digits = text.replace(LABEL, '').replace(SEPARATORS, '')
  if (digits === '') return fail('national_id_empty')
  if (!DIGITS.test(digits)) return fail('national_id_not_numeric')

  if (digits.length === 11) {
    const prefix = Number(digits.slice(0, 2))
    if (cuilCheckDigit(digits) !== digits.charCodeAt(10) - 48) return fail('national_id_invalid_check_digit')
    if (NOT_PERSON_PREFIXES.has(prefix)) return { ...fail('national_id_not_a_person'), type: 'CUIL', cuilPrefix: prefix }
    if (!PERSON_PREFIXES.has(prefix)) return fail('national_id_unknown_prefix')
    return withDni('CUIL', Number(digits.slice(2, 10)), prefix)
  }
  if (digits.length === 7 || digits.length === 8) return withDni('DNI', Number(digits), null)
  return fail('national_id_bad_length')
}

// DNIs start at 1,000,000 (7 digits); a smaller number is a typo or a padded fragment.
const MIN_DNI = 1_000_000

function withDni(type: NationalIdType, n: number, cuilPrefix: number | null): ParsedNationalId {
  if (n < MIN_DNI) return { type, dni: null, dniNumber: null, cuilPrefix, issues: ['national_id_implausible'] }
  return { type, dni: String(n), dniNumber: n, cuilPrefix, issues: [] }
}
