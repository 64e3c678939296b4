import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { AUDIENCE_COLUMNS, hashRow, hashValue, isSha256Hex, normalize, type AudienceColumn } from '../../pipelines/audience-sync/ads-platform/hashing.ts'

/** The expected digest, computed here from the spec's normalised string, independently of the module. */
const sha = (normalized: string) => createHash('sha256').update(Buffer.from(normalized, 'utf8')).digest('hex')

// [column, raw input, normalised string as the spec's table defines it ('' = sent as an empty string)]
const VECTORS: [AudienceColumn, string, string][] = [
  // EMAIL: trim, lowercase; nothing else (dots, plus tags stay).
  ['EMAIL', ' John@Example.com ', 'john@example.com'],
  ['EMAIL', 'JOHN.SMITH+ads@Example.COM', 'john.smith+ads@example.com'],
  ['EMAIL', '\tMaría.Pérez@Correo.com.AR\n', 'maría.pérez@correo.com.ar'],
  ['EMAIL', '   ', ''],
  // PHONE: every non-digit goes, the country code stays.
  ['PHONE', '+54 9 11 4123-4567', '5491141234567'],
  ['PHONE', '+5491141234567', '5491141234567'],
  ['PHONE', '+1 (650) 555-1234', '16505551234'],
  ['PHONE', '+44 20 7946 0958', '442079460958'],
  ['PHONE', '011 15 4123-4567', '0111541234567'],
  ['PHONE', ' 351.555.0199 ', '3515550199'],
  ['PHONE', '+ - ( )', ''],
  // FN / LN: drop what is neither a word character nor whitespace, lowercase, trim. Accents stay.
  ['FN', 'José', 'josé'],
  ['FN', '  JOSÉ  ', 'josé'],
  ['LN', 'Müller-Lüdenscheidt', 'müllerlüdenscheidt'],
  ['LN', 'Ñandú', 'ñandú'],
  ['LN', "O'Brien", 'obrien'],
  ['FN', ' Mary-Jane. ', 'maryjane'],
  ['LN', 'de la Cruz', 'de la cruz'],
  ['FN', 'Anne_Marie', 'anne_marie'],
  ['LN', 'Zoë 3rd.', 'zoë 3rd'],
  ['FN', 'ŁUKASZ', 'łukasz'],
  ['LN', 'Δημήτρης', 'δημήτρης'],
  ['LN', '山田', '山田'],
  ['FN', '!!!', ''],
  ['LN', '', ''],
]

describe('ads platform hashing (spec table)', () => {
  it.each(VECTORS)('%s %j normalises to %j', (column, raw, normalized) => {
    expect(normalize(column, raw)).toBe(normalized)
  })

  it.each(VECTORS)('%s %j hashes to SHA-256 of the normalised string (empty → empty string)', (column, raw, normalized) => {
    const digest = hashValue(column, raw)
    if (normalized === '') expect(digest).toBe('')
    else {
      expect(digest).toBe(sha(normalized))
      expect(isSha256Hex(digest)).toBe(true)
    }
  })

  it('matches digests computed outside node (sha256sum of the UTF-8 bytes)', () => {
    expect(hashValue('EMAIL', ' John@Example.com ')).toBe('855f96e983f1f8e8be944692b6f719fd54329826cb62e98015efee8e2e071dd4')
    expect(hashValue('PHONE', '+54 9 11 4123-4567')).toBe('e470e2986aec33479fd5470b1ac1f5cdf916113f8d892a8902247a54f837c276')
    expect(hashValue('FN', 'José')).toBe('d994e1d001886fe5b45b1267bd1fa2b752ac50742579bd3dad7b2a2aa0ed6866')
    expect(hashValue('LN', 'Müller-Lüdenscheidt')).toBe('5d111567d02391abb8602b6a6498465eb1edf98eb6ba46fa5bd2f2d69351a514')
    expect(hashValue('LN', 'Ñandú')).toBe('43dbd6bf7148e6e6584eee6d8b61ab8e5dd76374c4587cdabd50a3274e11f9d3')
  })

  it('keeps accents: José and Jose are different people to the platform', () => {
    expect(hashValue('FN', 'José')).not.toBe(hashValue('FN', 'Jose'))
  })

  it('hashes a decomposed accent (e + U+0301) like the precomposed é', () => {
    expect(normalize('FN', 'Jose\u0301')).toBe('josé')
    expect(hashValue('FN', 'Jose\u0301')).toBe(hashValue('FN', 'José'))
  })

  it('gives an empty string, never a digest, for missing values', () => {
    for (const column of AUDIENCE_COLUMNS) {
      expect(hashValue(column, '')).toBe('')
      expect(hashValue(column, null)).toBe('')
      expect(hashValue(column, undefined)).toBe('')
    }
    expect(hashValue('EMAIL', '')).not.toBe(sha(''))
  })

  it('hashRow gives one value per column in the order asked, blanks as empty strings', () => {
    const record = { EMAIL: ' John@Example.com ', PHONE: '+54 9 11 4123-4567', FN: 'José', LN: null }
    expect(hashRow(['LN', 'EMAIL', 'FN', 'PHONE'], record)).toEqual(['', sha('john@example.com'), sha('josé'), sha('5491141234567')])
    expect(hashRow(['EMAIL'], {})).toEqual([''])
  })
})
