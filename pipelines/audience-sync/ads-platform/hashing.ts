/**
 * Normalisation and hashing of customer identifiers for the ads platform's custom audiences
 * (spec "Hashing rules for personal data"). Pure: no I/O. A wrong normalisation does not fail,
 * it silently lowers the match rate, so every rule here is pinned by hand-written vectors in
 * test/audience-sync/ads-hashing.test.ts.
 *
 *   EMAIL   trim, lowercase
 *   PHONE   digits only (a leading '+' goes, the country code digits stay)
 *   FN, LN  drop every character that is neither a word character nor whitespace, lowercase, trim
 *
 * SHA-256 over the UTF-8 bytes, lowercase hex. An empty value gives '' (not the digest of '').
 */
import crypto from 'node:crypto'

export const AUDIENCE_COLUMNS = ['EMAIL', 'PHONE', 'FN', 'LN'] as const
export type AudienceColumn = (typeof AUDIENCE_COLUMNS)[number]

/** A customer's raw identifiers by column; missing, null and '' all mean "no value". */
export type CustomerIdentifiers = Partial<Record<AudienceColumn, string | null | undefined>>

export function isAudienceColumn(value: string): value is AudienceColumn {
  return (AUDIENCE_COLUMNS as readonly string[]).includes(value)
}

/**
 * Punctuation as the spec defines it: anything that is neither a word character nor whitespace.
 * JavaScript's `\w` is ASCII-only even with the u flag, so "word character" is spelled out the
 * Unicode way (letters, combining marks, numbers, connector punctuation such as '_'): 'é', 'ü',
 * 'ñ' stay, '-', '.', "'" go.
 */
const NOT_WORD_OR_SPACE = /[^\p{L}\p{M}\p{N}\p{Pc}\s]/gu
const NOT_DIGIT = /[^0-9]/g

/**
 * The normalised string that gets hashed. Names are first composed to NFC so that 'José' typed
 * as 'e' + combining accent hashes like the precomposed 'é' (no change for already composed text).
 */
export function normalize(column: AudienceColumn, value: string | null | undefined): string {
  if (value == null || value === '') return ''
  switch (column) {
    case 'EMAIL':
      return value.trim().toLowerCase()
    case 'PHONE':
      return value.replace(NOT_DIGIT, '')
    case 'FN':
    case 'LN':
      return value.normalize('NFC').replace(NOT_WORD_OR_SPACE, '').toLowerCase().trim()
  }
}

// crypto.hash (Node >= 20.12) is a one-shot digest, about twice as fast as createHash for short input.
const oneShot = (crypto as { hash?: (alg: string, data: string, enc: 'hex') => string }).hash

/** SHA-256 of the UTF-8 bytes of `text`, lowercase hex. */
export function sha256Hex(text: string): string {
  return oneShot ? oneShot('sha256', text, 'hex') : crypto.createHash('sha256').update(text, 'utf8').digest('hex')
}

/**
 * Normalise then hash. A value that is empty before or after normalisation (a phone of only
 * punctuation, a name of only symbols) gives '': the digest of '' would match nobody.
 */
export function hashValue(column: AudienceColumn, value: string | null | undefined): string {
  const normalized = normalize(column, value)
  return normalized === '' ? '' : sha256Hex(normalized)
}

/** One upload row: a digest (or '') per column, in `columns` order. */
export function hashRow(columns: readonly AudienceColumn[], record: CustomerIdentifiers): string[] {
  const row = new Array<string>(columns.length)
  for (let i = 0; i < columns.length; i++) {
    const column = columns[i]!
    row[i] = hashValue(column, record[column])
  }
  return row
}

/** True for a SHA-256 digest as the platform expects it: 64 lowercase hex characters. */
export function isSha256Hex(value: string): boolean {
  return /^[0-9a-f]{64}$/.test(value)
}
