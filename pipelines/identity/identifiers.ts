/**
 * The identifiers that link a tenant's source customers into one person, normalised so that the
 * same e-mail, phone or national id written differently is one value (docs/identity.md). Pure.
 *
 * - email: trimmed and lower-cased; must look like local@domain.tld. Dots and `+tags` in the
 *   local part are kept: providers differ on whether they matter, and a wrong merge costs more
 *   than a missed one.
 * - phone: E.164 without the Argentine mobile marker, so `+54 9 11 4123-4567`, `011 15 4123-4567`,
 *   `011 4123 4567` and `1141234567` are one line: `+541141234567`. A number without a country code
 *   is Argentine (+54; the trunk 0 and the mobile 15 after the area code go); the national number
 *   must then have 10 digits. Another country's number (`+` or `00` then a code other than 54) is
 *   kept as `+` and its 8 to 15 digits.
 * - national_id: the DNI, or the DNI inside a CUIL/CUIT with a valid check digit (a company's
 *   CUIT is no person's id), without leading zeros.
 * - source_id: a source's own customer id (`source:id`), as the connectors publish them.
 *
 * Placeholders people type when a form insists (`sin@email.com`, `0000000`, `1111111111`) are not
 * identifiers: they would glue strangers together.
 */
import { parseNationalId } from '../demographics/index.ts'

export const IDENTIFIER_KINDS = ['email', 'phone', 'national_id', 'source_id'] as const
export type IdentifierKind = (typeof IDENTIFIER_KINDS)[number]

export interface Identifier {
  kind: IdentifierKind
  value: string
}

/** `kind:value`, the key an identifier is stored and compared under. */
export const identifierKey = (i: Identifier): string => `${i.kind}:${i.value}`

const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s.]{2,}$/
/** Local parts people type for "no e-mail" (Spanish and English), and test addresses. */
const PLACEHOLDER_LOCAL = /^(sin|sinmail|sinemail|sincorreo|no|none|nomail|noemail|noreply|no-reply|ninguno|notiene|na|n\/a|test|prueba|x+|a+|asd|asdf|email|mail|correo)$/
const PLACEHOLDER_DOMAIN = /^(email|mail|correo|test|example|prueba|sinmail|noemail)\.(com|com\.ar|org|net)$/

export function normalizeEmail(raw: string | null | undefined): string | null {
  const v = (raw ?? '').trim().toLowerCase()
  if (!EMAIL.test(v)) return null
  const [local, domain] = v.split('@') as [string, string]
  if (PLACEHOLDER_LOCAL.test(local) || PLACEHOLDER_DOMAIN.test(domain)) return null
  return v
}

/** The same digit over and over, or a run such as 1234567890: a placeholder, not a number. */
function placeholderDigits(d: string): boolean {
  if (/^(\d)\1*$/.test(d)) return true
  return '01234567890123456789'.includes(d) || '98765432109876543210'.includes(d)
}

export function normalizePhone(raw: string | null | undefined): string | null {
  const text = (raw ?? '').trim()
  if (!text) return null
  const international = text.startsWith('+') || /^00[1-9]/.test(text.replace(/[\s().-]/g, ''))
  let digits = text.replace(/\D/g, '')
  if (international) {
    if (digits.startsWith('00')) digits = digits.slice(2)
    if (!digits.startsWith('54')) return digits.length >= 8 && digits.length <= 15 && !placeholderDigits(digits) ? `+${digits}` : null
    digits = digits.slice(2)
    // +54 9 …: the mobile marker.
    if (digits.length === 11 && digits.startsWith('9')) digits = digits.slice(1)
  } else {
    if (digits.startsWith('0')) digits = digits.slice(1) // the trunk prefix
    if (digits.length === 12 && digits.startsWith('54')) digits = digits.slice(2) // 54… written without the +
    else if (digits.length === 13 && digits.startsWith('549')) digits = digits.slice(3)
  }
  // The old mobile prefix 15 after a 2-, 3- or 4-digit area code: 12 digits with it.
  if (digits.length === 12) {
    for (const area of [2, 3, 4]) {
      if (digits.slice(area, area + 2) === '15') {
        digits = digits.slice(0, area) + digits.slice(area + 2)
        break
      }
    }
  }
  if (digits.length !== 10 || placeholderDigits(digits) || placeholderDigits(digits.slice(-8))) return null
  return `+54${digits}`
}

export function normalizeNationalId(raw: string | null | undefined): string | null {
  const p = parseNationalId(raw)
  if (!p.dni || placeholderDigits(p.dni)) return null
  return p.dni
}

/** A source's customer id, `source:id` (both trimmed; case kept: sources' ids are case-sensitive). */
export function normalizeSourceId(source: string, id: string): string | null {
  const s = source.trim()
  const i = id.trim()
  return s && i ? `${s}:${i}` : null
}

export interface CustomerIdentity {
  email?: string | null
  phone?: string | null
  national_id?: string | null
  source_ids?: readonly { source: string; id: string }[]
}

/** Every usable identifier of a customer profile, normalised, without duplicates. */
export function identifiersOf(c: CustomerIdentity): Identifier[] {
  const out = new Map<string, Identifier>()
  const add = (kind: IdentifierKind, value: string | null) => {
    if (value !== null) out.set(`${kind}:${value}`, { kind, value })
  }
  add('email', normalizeEmail(c.email))
  add('phone', normalizePhone(c.phone))
  add('national_id', normalizeNationalId(c.national_id))
  for (const s of c.source_ids ?? []) add('source_id', normalizeSourceId(s.source, s.id))
  return [...out.values()]
}
