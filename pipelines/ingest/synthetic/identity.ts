/**
 * Argentine personal identifiers as shops receive them: DNI numbers that fit the holder's age,
 * CUIL numbers with a valid check digit, phone numbers in the usual local and international
 * spellings, and e-mail addresses derived from the name.
 */
import type { Sex } from './argentina.ts'
import type { Rng } from './random.ts'

// --- DNI -------------------------------------------------------------------------------------

/**
 * DNI numbers are issued nationally in sequence at first registration, so they grow with birth
 * year (~0.7M per year). Anchors: [birth year, typical DNI]; below ~10M are the older LE/LC-era
 * numbers, which follow birth year only loosely.
 */
const DNI_ANCHORS: readonly (readonly [number, number])[] = [
  [1935, 2_500_000],
  [1945, 6_000_000],
  [1955, 11_000_000],
  [1968, 20_000_000],
  [1983, 30_000_000],
  [1997, 40_000_000],
  [2004, 46_000_000],
  [2012, 52_000_000],
]

/** Typical DNI for a birth year, by linear interpolation between the anchors (clamped at the ends). */
export function typicalDniForBirthYear(year: number): number {
  const first = DNI_ANCHORS[0] as readonly [number, number]
  const last = DNI_ANCHORS[DNI_ANCHORS.length - 1] as readonly [number, number]
  if (year <= first[0]) return first[1]
  if (year >= last[0]) return last[1]
  for (let i = 1; i < DNI_ANCHORS.length; i++) {
    const [y1, d1] = DNI_ANCHORS[i] as readonly [number, number]
    const [y0, d0] = DNI_ANCHORS[i - 1] as readonly [number, number]
    if (year <= y1) return d0 + ((d1 - d0) * (year - y0)) / (y1 - y0)
  }
  return last[1]
}

/** A DNI for someone born in `year`: the typical number plus about a year of jitter. */
export function dniForBirthYear(rng: Rng, year: number): number {
  const dni = Math.round(typicalDniForBirthYear(year + rng.uniform()) + rng.normal(0, 400_000))
  // 60M-69.99M is reserved for foreigners' provisional CUILs; stay in the birth-registration range.
  return Math.min(59_999_999, Math.max(1_000_000, dni))
}

/** "30123456", or "30.123.456" as people often type it. */
export function formatDni(dni: number, dotted: boolean): string {
  const digits = String(dni)
  return dotted ? digits.replace(/\B(?=(\d{3})+(?!\d))/g, '.') : digits
}

// --- CUIL / CUIT -----------------------------------------------------------------------------

const CUIL_WEIGHTS = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2] as const

/**
 * Check digit of a CUIL/CUIT from its first ten digits (2-digit prefix + 8-digit DNI):
 * s = Σ digit·weight (weights 5,4,3,2,7,6,5,4,3,2), result = 11 − (s mod 11);
 * result 11 → 0; result 10 → no valid digit for this prefix (returns null).
 */
export function cuilCheckDigit(firstTen: string): number | null {
  if (!/^\d{10}$/.test(firstTen)) throw new RangeError(`cuilCheckDigit: need 10 digits, got "${firstTen}"`)
  let sum = 0
  for (let i = 0; i < 10; i++) sum += Number(firstTen[i]) * CUIL_WEIGHTS[i]!
  const result = 11 - (sum % 11)
  if (result === 11) return 0
  if (result === 10) return null
  return result
}

/**
 * The CUIL of a person: prefix 20 (male) or 27 (female) + DNI zero-padded to 8 digits + check digit.
 * When the 20/27 prefix would need check "digit" 10, AFIP assigns prefix 23 instead, which always
 * yields 9 for men and 4 for women (switching the prefix shifts the sum mod 11 by a fixed amount).
 */
export function cuilFor(dni: number, sex: Sex): string {
  const body = String(dni).padStart(8, '0')
  const prefix = sex === 'M' ? '20' : '27'
  const check = cuilCheckDigit(prefix + body)
  if (check !== null) return `${prefix}${body}${check}`
  const fallback = cuilCheckDigit(`23${body}`)
  if (fallback === null) throw new Error(`no valid CUIL for DNI ${dni}`) // unreachable, see above
  return `23${body}${fallback}`
}

/** True when the string (dashes, dots and spaces ignored) is 11 digits with a valid check digit. */
export function isValidCuil(text: string): boolean {
  const digits = text.replace(/[\s.-]/g, '')
  if (!/^\d{11}$/.test(digits)) return false
  return cuilCheckDigit(digits.slice(0, 10)) === Number(digits[10])
}

/** "20301234567", or "20-30123456-7" as printed on ANSES/AFIP documents. */
export function formatCuil(cuil: string, dashed: boolean): string {
  return dashed ? `${cuil.slice(0, 2)}-${cuil.slice(2, 10)}-${cuil.slice(10)}` : cuil
}

// --- Phones ----------------------------------------------------------------------------------

/** A mobile number: area code + subscriber number, 10 digits together. */
export interface Phone {
  areaCode: string
  subscriber: string
}

export function mobilePhone(rng: Rng, areaCode: string): Phone {
  const length = 10 - areaCode.length
  // Subscriber numbers don't start with 0 or 1 (trunk and special prefixes).
  let subscriber = String(rng.int(2, 9))
  while (subscriber.length < length) subscriber += String(rng.int(0, 9))
  return { areaCode, subscriber }
}

/** Subscriber number split the way Argentines write it: "4123-4567", "412-3456", "41-2345". */
function splitSubscriber(subscriber: string, separator: string): string {
  return `${subscriber.slice(0, -4)}${separator}${subscriber.slice(-4)}`
}

export type PhoneStyle = 'international' | 'domestic' | 'compact' | 'domestic15' | 'e164'

/**
 * - international: "+54 9 11 4123-4567" (the 9 marks a mobile when dialled from abroad)
 * - domestic:      "011 4123 4567"
 * - compact:       "1141234567"
 * - domestic15:    "011 15 4123-4567" (the old mobile prefix 15 after the area code)
 * - e164:          "+5491141234567"
 */
export function formatPhone(phone: Phone, style: PhoneStyle): string {
  const { areaCode, subscriber } = phone
  switch (style) {
    case 'international':
      return `+54 9 ${areaCode} ${splitSubscriber(subscriber, '-')}`
    case 'domestic':
      return `0${areaCode} ${splitSubscriber(subscriber, ' ')}`
    case 'compact':
      return `${areaCode}${subscriber}`
    case 'domestic15':
      return `0${areaCode} 15 ${splitSubscriber(subscriber, '-')}`
    case 'e164':
      return `+549${areaCode}${subscriber}`
  }
}

// --- E-mail ----------------------------------------------------------------------------------

/** Lowercase ASCII letters only: accents and ñ lose their marks, spaces and apostrophes go. */
export function asciiLetters(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z]/g, '')
}

/** Local part without digits, in one of the usual patterns: juan.perez, juanperez, jperez, perez.juan, juan_perez. */
export function emailBase(rng: Rng, firstName: string, lastName: string): string {
  const firstWords = firstName.split(' ')
  const first = asciiLetters(rng.chance(0.7) ? (firstWords[0] ?? firstName) : firstName)
  const last = asciiLetters(lastName.split(' ')[0] ?? lastName)
  return rng.weighted(
    [`${first}.${last}`, `${first}${last}`, `${first.slice(0, 1)}${last}`, `${last}.${first}`, `${first}_${last}`],
    [0.35, 0.25, 0.2, 0.1, 0.1],
  )
}

/**
 * Hands out unique addresses with bounded memory. A local part is either a digit-free base or that
 * base followed by the customer id; bases never contain digits, so base + id can't collide with
 * another customer's address. Plain bases are remembered up to `capacity`; past that everyone gets
 * the id suffix, so memory stays bounded for millions of customers.
 */
export class EmailRegistry {
  private readonly used = new Set<string>()

  constructor(private readonly capacity = 100_000) {}

  address(rng: Rng, customerId: number, firstName: string, lastName: string, domain: string): string {
    const base = emailBase(rng, firstName, lastName)
    const wantsPlain = rng.chance(0.6) // many people add digits even when the plain name is free
    const plain = `${base}@${domain}`
    if (wantsPlain && this.used.size < this.capacity && !this.used.has(plain)) {
      this.used.add(plain)
      return plain
    }
    return `${base}${customerId}@${domain}`
  }
}
