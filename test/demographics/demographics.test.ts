import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {
  AGE_SEGMENTS,
  AnchorError,
  GENERATIONS,
  GENERATION_ALIASES,
  GENERATION_BY_SEGMENT,
  ageSegment,
  birthYearCurve,
  fractionalBirthYear,
  resolveGenerationFilter,
  searchAdsAgeRange,
  socialAdsAgeRange,
} from '../../pipelines/demographics/age.ts'
import {
  createReference,
  defaultReference,
  defaultTables,
  enrichDemographics,
  loadReferenceDirectory,
  ReferenceDataError,
  type DemographicInput,
  type Demographics,
} from '../../pipelines/demographics/enrich.ts'
import { GENDERS, GENDER_LABELS, genderFromFirstName } from '../../pipelines/demographics/gender.ts'
import { REGIONS, parsePostalCode, resolveRegionFilter } from '../../pipelines/demographics/location.ts'
import { cuilCheckDigit, parseNationalId } from '../../pipelines/demographics/national-id.ts'
import { JURISDICTIONS } from '../../pipelines/demographics/reference/jurisdictions.ts'
import { POSTAL_RANGES } from '../../pipelines/demographics/reference/postal-ranges.ts'
import { parseAnchors, evaluateAge } from '../../pipelines/demographics/evaluation.ts'
import { compactKey, fold } from '../../pipelines/demographics/text.ts'

const DATA = path.resolve(import.meta.dirname, '../../../shared/data/ar')
const haveData = fs.existsSync(DATA)
const needsData = haveData ? '' : ` [SKIPPED: ${DATA} not found; the ../shared data folder is absent]`

const NOW = new Date('2025-06-15T12:00:00Z')
const EMPTY: DemographicInput = { national_id: null, first_name: null, city: null, province: null, postal_code: null }
const enrich = (fields: Partial<DemographicInput>, now = NOW): Demographics => enrichDemographics({ ...EMPTY, ...fields }, now)
/** A CUIL with a correct check digit. */
const cuil = (prefix: string, dni: string) => `${prefix}-${dni}-${cuilCheckDigit(prefix + dni)}`

describe('acceptance: hand-made customers', () => {
  it('CUIL with prefix 27 and a male first name is F (the CUIL wins)', () => {
    const d = enrich({ national_id: cuil('27', '30123456'), first_name: 'Juan Carlos' })
    expect(d).toMatchObject({ national_id_type: 'CUIL', dni: '30123456', gender: 'F', gender_source: 'cuil' })
  })

  it('DNI with dots is parsed and aged', () => {
    const d = enrich({ national_id: '30.123.456' })
    expect(d).toMatchObject({ national_id_type: 'DNI', dni: '30123456', estimated_birth_year: 1983, estimated_age: 42, age_segment: '35-44' })
    expect(d).toMatchObject({ generation: 'Millennials', social_ads_age_range: '35_44', search_ads_age_range: '35-44' })
  })

  it('"Capital Federal" with C1425ABC is CABA and validated (in the province or the city field)', () => {
    for (const fields of [
      { province: 'Capital Federal', postal_code: 'C1425ABC' },
      { city: 'Capital Federal', postal_code: 'C1425ABC' },
      { city: 'Capital Federal', province: 'Capital Federal', postal_code: 'C1425ABC' },
      { city: 'Palermo', province: 'Capital Federal', postal_code: 'C1425ABC' },
    ]) {
      const d = enrich(fields)
      expect(d.corrected_province, JSON.stringify(fields)).toBe('Ciudad Autónoma de Buenos Aires')
      expect(d.region).toBe('Región Metropolitana')
      expect(d.corrected_postal_code).toBe('C1425ABC')
      expect(d.is_location_validated, JSON.stringify(fields)).toBe(true)
      expect(d.location_correction_needed).toBe(true)
    }
  })

  it('"Cba" with 5000 is Córdoba', () => {
    const d = enrich({ province: 'Cba', postal_code: '5000' })
    expect(d).toMatchObject({ corrected_province: 'Córdoba', region: 'Región Centro', corrected_postal_code: '5000', location_confidence: 0.6 })
    expect(d.is_location_validated).toBe(false) // no city typed
    const withCity = enrich({ city: 'cordoba', province: 'Cba', postal_code: '5000' })
    expect(withCity).toMatchObject({ corrected_city: 'Córdoba', is_location_validated: true, location_confidence: 1 })
  })

  it('a foreign-resident number gets no age, with the reason', () => {
    for (const id of ['62.345.678', cuil('20', '62345678'), '95123456']) {
      const d = enrich({ national_id: id })
      expect(d.dni).not.toBeNull()
      expect(d).toMatchObject({ estimated_birth_year: null, estimated_age: null, age_segment: null, generation: null })
      expect(d.issues).toContain('national_id_foreign_resident')
    }
  })
})

describe('national id', () => {
  it('reads a DNI with or without dots, spaces or a label', () => {
    for (const raw of ['30123456', '30.123.456', ' 30 123 456 ', 'DNI 30.123.456', 'dni: 30123456', 30123456]) {
      expect(parseNationalId(raw), String(raw)).toMatchObject({ type: 'DNI', dni: '30123456', dniNumber: 30123456, cuilPrefix: null, issues: [] })
    }
    expect(parseNationalId('5.123.456')).toMatchObject({ type: 'DNI', dni: '5123456' })
  })

  it('reads a CUIL/CUIT with or without dashes and takes the DNI inside', () => {
    // Published valid numbers (python-stdnum's examples, a textbook one).
    for (const raw of ['20-05536168-2', '20055361682', '20 05536168 2', 'CUIT 20-05536168-2']) {
      expect(parseNationalId(raw), raw).toMatchObject({ type: 'CUIL', dni: '5536168', cuilPrefix: 20, issues: [] })
    }
    expect(parseNationalId('20-26756539-3')).toMatchObject({ type: 'CUIL', dni: '26756539' })
    expect(parseNationalId('20-12345678-6')).toMatchObject({ type: 'CUIL', dni: '12345678' })
  })

  it('check digit: mod 11 with weights 5,4,3,2,7,6,5,4,3,2; 11 → 0 and 10 → 9', () => {
    expect(cuilCheckDigit('2012345678')).toBe(6)
    expect(cuilCheckDigit('3064014267')).toBe(3)
    expect(cuilCheckDigit('2030000002')).toBe(9) // remainder 1: 11 − 1 = 10 is written 9
    // Weighted sum ≡ 0 (mod 11) gives 0.
    let zero = ''
    for (let d = 10_000_000; zero === '' && d < 10_001_000; d++) {
      const s = `20${d}`
      const sum = [...s].reduce((a, c, i) => a + Number(c) * [5, 4, 3, 2, 7, 6, 5, 4, 3, 2][i]!, 0)
      if (sum % 11 === 0) zero = s
    }
    expect(cuilCheckDigit(zero)).toBe(0)
  })

  it('a CUIL with a wrong check digit gives no DNI, no age and no gender from the CUIL', () => {
    const d = enrich({ national_id: '20-12345678-0', first_name: 'Lucía' })
    expect(d).toMatchObject({ national_id_type: null, dni: null, estimated_age: null, gender: 'F', gender_source: 'first_name' })
    expect(d.issues).toContain('national_id_invalid_check_digit')
  })

  it('letters in a DNI, bad lengths, tiny numbers, empty and non-text values', () => {
    const cases: [unknown, string][] = [
      ['12A45678', 'national_id_not_numeric'],
      ['30.123.45x', 'national_id_not_numeric'],
      ['123456', 'national_id_bad_length'],
      ['123456789', 'national_id_bad_length'],
      ['1234567890123', 'national_id_bad_length'],
      ['0345678', 'national_id_implausible'],
      ['', 'national_id_empty'],
      ['  . - ', 'national_id_empty'],
      [null, 'national_id_empty'],
      [undefined, 'national_id_empty'],
      [{ dni: 1 }, 'national_id_not_numeric'],
      [-5, 'national_id_not_numeric'],
      [Number.NaN, 'national_id_not_numeric'],
    ]
    for (const [raw, issue] of cases) {
      const p = parseNationalId(raw)
      expect(p.issues, String(raw)).toEqual([issue])
      expect(p.dni).toBeNull()
    }
  })

  it('companies and AFIP generic numbers are not people; unknown prefixes are rejected', () => {
    expect(parseNationalId('30-64014267-3')).toMatchObject({ type: 'CUIL', dni: null, cuilPrefix: 30, issues: ['national_id_not_a_person'] })
    const company = enrich({ national_id: '30640142673', first_name: 'Ana' })
    expect(company).toMatchObject({ estimated_age: null, gender: 'F', gender_source: 'first_name' })
    expect(parseNationalId(cuil('99', '30123456')).issues).toEqual(['national_id_unknown_prefix'])
  })
})

describe('age', () => {
  it('the DNI curve passes through its anchors and is monotone', () => {
    const curve = defaultReference().index.curve
    expect(fractionalBirthYear(curve, 20_000_000)).toBeCloseTo(1969.7, 6)
    expect(fractionalBirthYear(curve, 40_000_000)).toBeCloseTo(1996.8, 6)
    expect(fractionalBirthYear(curve, 59_999_999)).toBeCloseTo(2023.7, 6)
    expect(fractionalBirthYear(curve, 70_000_000)).toBeCloseTo(2023.7, 6)
    let prev = -Infinity
    for (let dni = 1_000_000; dni < 60_000_000; dni += 250_000) {
      const y = fractionalBirthYear(curve, dni)!
      expect(y).toBeGreaterThanOrEqual(prev)
      prev = y
    }
    expect(() => birthYearCurve([[1, 2000], [2, 1990]], [])).toThrow(AnchorError)
    expect(() => birthYearCurve([[1, 2000]], [])).toThrow(AnchorError)
  })

  it('age = year(now) − birth year, the same all year (±1 around the birthday)', () => {
    const jan = enrich({ national_id: '30123456' }, new Date('2025-01-01T00:00:00Z'))
    const dec = enrich({ national_id: '30123456' }, new Date('2025-12-31T23:00:00Z'))
    expect(jan.estimated_age).toBe(2025 - 1983)
    expect(dec.estimated_age).toBe(jan.estimated_age)
  })

  it('under 18 keeps the age but has no segment, generation or ads ranges', () => {
    const d = enrich({ national_id: '50.000.000' })
    expect(d).toMatchObject({ estimated_birth_year: 2010, estimated_age: 15, age_segment: null, generation: null, social_ads_age_range: null, search_ads_age_range: null })
    expect(d.issues).toContain('age_under_18')
    expect(enrich({ national_id: '70100000' }).estimated_age).toBe(2)
  })

  it('numbers not issued yet, or ages over 110, give no age', () => {
    const unissued = enrich({ national_id: '80000000' })
    expect(unissued.estimated_age).toBeNull()
    expect(unissued.issues).toContain('national_id_implausible')
    const old = createReference({ ...defaultTables(), dniAnchors: [[1_000_000, 1900], [2_000_000, 1910]] })
    const d = enrichDemographics({ ...EMPTY, national_id: '1000000' }, NOW, old)
    expect(d.estimated_age).toBeNull()
    expect(d.issues).toContain('national_id_implausible')
  })

  it('an invalid reference date gives no age, with the reason', () => {
    const d = enrichDemographics({ ...EMPTY, national_id: '30123456' }, new Date('nope'))
    expect(d.estimated_age).toBeNull()
    expect(d.issues).toContain('reference_date_invalid')
  })

  it('segments, generations and ads ranges follow the spec table', () => {
    const expected: [number, string | null, string | null, string | null][] = [
      [17, null, null, null],
      [18, '18-24', '18_24', '18-24'],
      [24, '18-24', '18_24', '18-24'],
      [25, '25-34', '25_34', '25-34'],
      [34, '25-34', '25_34', '25-34'],
      [35, '35-44', '35_44', '35-44'],
      [44, '35-44', '35_44', '35-44'],
      [45, '45-54', '45_54', '45-54'],
      [54, '45-54', '45_54', '45-54'],
      [55, '55+', '55_plus', '55-64'],
      [64, '55+', '55_plus', '55-64'],
      [65, '55+', '55_plus', '65+'],
      [110, '55+', '55_plus', '65+'],
    ]
    for (const [age, segment, social, search] of expected) {
      const s = ageSegment(age)
      expect(s, `age ${age}`).toBe(segment)
      expect(s === null ? null : socialAdsAgeRange(s)).toBe(social)
      expect(searchAdsAgeRange(age)).toBe(search)
    }
    expect(AGE_SEGMENTS).toEqual(['18-24', '25-34', '35-44', '45-54', '55+'])
    expect(GENERATION_BY_SEGMENT).toEqual({ '18-24': 'Generación Z', '25-34': 'Millennials/Gen Z', '35-44': 'Millennials', '45-54': 'Generación X', '55+': 'Baby Boomers' })
    expect([...GENERATIONS].sort()).toEqual(Object.values(GENERATION_BY_SEGMENT).sort())
  })

  it('generation filters: canonical labels and the short English aliases', () => {
    expect(Object.keys(GENERATION_ALIASES).sort()).toEqual(['Boomers', 'Gen X', 'Gen Z', 'Millennials'])
    for (const gens of Object.values(GENERATION_ALIASES)) for (const g of gens) expect(GENERATIONS).toContain(g)
    expect(resolveGenerationFilter('Gen Z')).toEqual(['Generación Z', 'Millennials/Gen Z'])
    expect(resolveGenerationFilter('boomers')).toEqual(['Baby Boomers'])
    expect(resolveGenerationFilter('Millennials')).toEqual(['Millennials/Gen Z', 'Millennials'])
    expect(resolveGenerationFilter('Generación X')).toEqual(['Generación X'])
    expect(resolveGenerationFilter('Gen Y')).toBeNull()
  })
})

describe('gender', () => {
  const names = defaultReference().index.names
  const g = (raw: unknown) => genderFromFirstName(names, raw)

  it('CUIL prefix 20 is M and 27 is F, whatever the name; 23 and 24 fall back to the name', () => {
    expect(enrich({ national_id: cuil('20', '30123456'), first_name: 'María' })).toMatchObject({ gender: 'M', gender_source: 'cuil' })
    expect(enrich({ national_id: cuil('27', '30123456'), first_name: null })).toMatchObject({ gender: 'F', gender_source: 'cuil' })
    expect(enrich({ national_id: cuil('23', '30123456'), first_name: 'Lucía' })).toMatchObject({ gender: 'F', gender_source: 'first_name', dni: '30123456' })
    expect(enrich({ national_id: cuil('24', '30123456'), first_name: 'Pedro' })).toMatchObject({ gender: 'M', gender_source: 'first_name' })
    expect(enrich({ national_id: cuil('23', '30123456'), first_name: null })).toMatchObject({ gender: null, gender_source: null })
  })

  it('the first given name decides: José María is M, María José is F', () => {
    expect(g('José María').gender).toBe('M')
    expect(g('María José').gender).toBe('F')
    expect(g('MARIA JOSE').gender).toBe('F')
    expect(g('jose maria').gender).toBe('M')
    expect(g('María de los Ángeles').gender).toBe('F')
    expect(g('Juan de Dios').gender).toBe('M')
    expect(g('J. Carlos').gender).toBe('M')
    expect(g('Ana-Lucía').gender).toBe('F')
    expect(g('  lautaro  ').gender).toBe('M')
  })

  it('unisex names give U, unless a later given name decides', () => {
    expect(g('Cruz')).toEqual({ gender: 'U', issue: null })
    expect(g('Cruz Martín').gender).toBe('M')
    expect(g('Sasha Sofía').gender).toBe('F')
  })

  it('no usable name gives null with the reason', () => {
    expect(g('Xyzzyq')).toEqual({ gender: null, issue: 'first_name_unknown' })
    expect(g('')).toEqual({ gender: null, issue: 'first_name_empty' })
    expect(g('   ')).toEqual({ gender: null, issue: 'first_name_empty' })
    expect(g(null)).toEqual({ gender: null, issue: 'first_name_empty' })
    expect(g('123 !!')).toEqual({ gender: null, issue: 'first_name_not_a_name' })
    expect(g(42)).toEqual({ gender: null, issue: 'first_name_invalid' })
    const d = enrich({ first_name: 'Xyzzyq' })
    expect(d).toMatchObject({ gender: null, gender_source: null })
    expect(d.issues).toContain('first_name_unknown')
  })

  it('allowed values and labels follow the spec', () => {
    expect(GENDERS).toEqual(['M', 'F', 'U'])
    expect(GENDER_LABELS).toEqual({ M: 'Masculino', F: 'Femenino', U: 'Unisex/Otro' })
  })
})

describe('location', () => {
  it('province aliases', () => {
    const cases: [string, string][] = [
      ['Bs As', 'Buenos Aires'],
      ['Bs. As.', 'Buenos Aires'],
      ['BSAS', 'Buenos Aires'],
      ['Pcia. de Buenos Aires', 'Buenos Aires'],
      ['Provincia de Buenos Aires', 'Buenos Aires'],
      ['Capital Federal', 'Ciudad Autónoma de Buenos Aires'],
      ['CABA', 'Ciudad Autónoma de Buenos Aires'],
      ['c.a.b.a.', 'Ciudad Autónoma de Buenos Aires'],
      ['Cba', 'Córdoba'],
      ['CÓRDOBA', 'Córdoba'],
      ['Córdoba, Argentina', 'Córdoba'],
      ['Sta Fe', 'Santa Fe'],
      ['Santa Fé', 'Santa Fe'],
      ['TDF', 'Tierra del Fuego'],
      ['Tierra del Fuego, Antártida e Islas del Atlántico Sur', 'Tierra del Fuego'],
      ['Provincia de Salta', 'Salta'],
      ['Pcia. del Neuquén', 'Neuquén'],
      ['AR-X', 'Córdoba'],
      ['Sgo. del Estero', 'Santiago del Estero'],
      ['Entre Rios', 'Entre Ríos'],
    ]
    for (const [typed, canonical] of cases) expect(enrich({ province: typed }).corrected_province, typed).toBe(canonical)
  })

  it('"Buenos Aires" is the province unless the postal code says CABA', () => {
    expect(enrich({ province: 'Buenos Aires' }).corrected_province).toBe('Buenos Aires')
    expect(enrich({ province: 'Buenos Aires', postal_code: '1900' }).corrected_province).toBe('Buenos Aires')
    const caba = enrich({ province: 'Buenos Aires', postal_code: '1425' })
    expect(caba.corrected_province).toBe('Ciudad Autónoma de Buenos Aires')
    expect(caba.issues).not.toContain('province_conflict')
    // "Provincia de" rules CABA out: the code then conflicts.
    const pcia = enrich({ province: 'Pcia. de Buenos Aires', postal_code: '1425' })
    expect(pcia).toMatchObject({ corrected_province: 'Buenos Aires', corrected_postal_code: null })
    expect(pcia.issues).toContain('postal_code_conflict')
  })

  it('postal codes in both forms; the CPA letter names the province', () => {
    expect(parsePostalCode('C1425ABC')).toEqual({ letter: 'C', cp4: 1425, text: 'C1425ABC' })
    expect(parsePostalCode(' c 1425 abc ')).toEqual({ letter: 'C', cp4: 1425, text: 'C1425ABC' })
    expect(parsePostalCode('X5000')).toEqual({ letter: 'X', cp4: 5000, text: 'X5000' })
    expect(parsePostalCode('5000')).toEqual({ letter: null, cp4: 5000, text: '5000' })
    expect(parsePostalCode('CP 5000')).toEqual({ letter: null, cp4: 5000, text: '5000' })
    expect(parsePostalCode('C.P. X5000ABC')).toEqual({ letter: 'X', cp4: 5000, text: 'X5000ABC' })
    for (const bad of ['99999', '500', 'ABCDE', 'I1425ABC', 'O1425ABC', 'C1425AB', '']) expect(parsePostalCode(bad), bad).toBeNull()
    for (const [code, province] of [
      ['C1425ABC', 'Ciudad Autónoma de Buenos Aires'],
      ['1000', 'Ciudad Autónoma de Buenos Aires'],
      ['1499', 'Ciudad Autónoma de Buenos Aires'],
      ['X5000ABC', 'Córdoba'],
      ['2000', 'Santa Fe'],
      ['5500', 'Mendoza'],
      ['9410', 'Tierra del Fuego'],
      ['4400', 'Salta'],
    ]) {
      expect(enrich({ postal_code: code }).corrected_province, code).toBe(province)
    }
  })

  it('bad postal codes: invalid text, a letter that contradicts its digits', () => {
    const bad = enrich({ province: 'Mendoza', postal_code: '55-000-0' })
    expect(bad).toMatchObject({ corrected_province: 'Mendoza', corrected_postal_code: null })
    expect(bad.issues).toContain('postal_code_invalid')
    expect(enrich({ postal_code: 'B1425ABC' }).issues).toContain('postal_code_letter_mismatch')
  })

  it('a full CPA outweighs a typed province alone; province and city outweigh the CPA', () => {
    const byCode = enrich({ province: 'Córdoba', postal_code: 'C1425ABC' })
    expect(byCode.corrected_province).toBe('Ciudad Autónoma de Buenos Aires')
    expect(byCode.issues).toContain('province_conflict')
    const byText = enrich({ city: 'Córdoba', province: 'Córdoba', postal_code: 'C1425ABC' })
    expect(byText).toMatchObject({ corrected_province: 'Córdoba', corrected_city: 'Córdoba', corrected_postal_code: null, is_location_validated: false })
    expect(byText.issues).toContain('postal_code_conflict')
    // A 4-digit code and a typed province tie: the typed province wins.
    expect(enrich({ province: 'Córdoba', postal_code: '1425' }).corrected_province).toBe('Córdoba')
  })

  it('the city matches a locality of the province ignoring accents, case and abbreviations', () => {
    for (const city of ['CORDOBA', 'córdoba', 'Cordoba', ' Córdoba. ', 'Ciudad de Córdoba']) {
      expect(enrich({ city, province: 'Córdoba', postal_code: '5000' }), city).toMatchObject({ corrected_city: 'Córdoba', is_location_validated: true })
    }
    expect(enrich({ city: 'gral. roca', province: 'Río Negro', postal_code: 'R8332ABC' })).toMatchObject({ corrected_city: 'General Roca', is_location_validated: true })
    expect(enrich({ city: 'Villa Crespo', province: 'CABA', postal_code: '1414' })).toMatchObject({ corrected_city: 'Villa Crespo', is_location_validated: true })
    // A city known in several provinces takes the one the other fields say.
    expect(enrich({ city: 'San Martín', province: 'Mendoza', postal_code: '5570' })).toMatchObject({ corrected_province: 'Mendoza', is_location_validated: true })
    expect(enrich({ city: 'Mercedes', province: 'Corrientes' })).toMatchObject({ corrected_city: 'Mercedes', corrected_province: 'Corrientes', corrected_postal_code: '3470' })
  })

  it('an empty, unknown or misplaced city is kept as typed and blocks validation', () => {
    const empty = enrich({ city: '  ', province: 'Córdoba', postal_code: '5000' })
    expect(empty).toMatchObject({ corrected_city: null, corrected_province: 'Córdoba', is_location_validated: false })
    expect(empty.issues).toContain('city_empty')
    const unknown = enrich({ city: 'Pueblo  Perdido', province: 'Córdoba', postal_code: '5000' })
    expect(unknown).toMatchObject({ corrected_city: 'Pueblo Perdido', is_location_validated: false, location_confidence: 0.6 })
    expect(unknown.issues).toContain('city_unknown')
    const elsewhere = enrich({ city: 'Rosario', province: 'Mendoza', postal_code: '5500' })
    expect(elsewhere).toMatchObject({ corrected_city: 'Rosario', corrected_province: 'Mendoza', is_location_validated: false, location_confidence: 0.5 })
    expect(elsewhere.issues).toContain('city_not_in_province')
  })

  it('a province that does not exist is reported; other fields still place the customer', () => {
    const d = enrich({ province: 'Narnia', postal_code: '5000' })
    expect(d).toMatchObject({ corrected_province: 'Córdoba', location_confidence: 0.3, location_correction_needed: true })
    expect(d.issues).toContain('province_unknown')
    const alone = enrich({ province: 'Narnia' })
    expect(alone).toMatchObject({ corrected_province: null, region: null, location_confidence: 0, is_location_validated: false })
    expect(alone.issues).toEqual(expect.arrayContaining(['province_unknown', 'location_unresolved']))
  })

  it('confidence sums the agreeing evidence (docs/demographics.md)', () => {
    expect(enrich({ city: 'Rosario', province: 'Santa Fe', postal_code: 'S2000ABC' }).location_confidence).toBe(1)
    expect(enrich({ province: 'Santa Fe', postal_code: '2000' }).location_confidence).toBe(0.6)
    expect(enrich({ province: 'Santa Fe' }).location_confidence).toBe(0.3)
    expect(enrich({ city: 'Rosario' })).toMatchObject({ corrected_province: 'Santa Fe', location_confidence: 0.2 })
    expect(enrich({ province: 'Capital', postal_code: '5000' }).location_confidence).toBe(0.45)
    expect(enrich({ province: 'Córdoba', postal_code: '1425' }).location_confidence).toBe(0.2)
  })

  it('correction needed only when the output differs from the input', () => {
    expect(enrich({ city: 'Córdoba', province: 'Córdoba', postal_code: '5000' }).location_correction_needed).toBe(false)
    expect(enrich({ city: 'cordoba', province: 'Córdoba', postal_code: '5000' }).location_correction_needed).toBe(true)
    const filled = enrich({ city: 'Mendoza', province: 'Mendoza' })
    expect(filled).toMatchObject({ corrected_postal_code: '5500', location_correction_needed: true, is_location_validated: false })
    expect(enrich({}).location_correction_needed).toBe(false)
  })

  it('no location input: everything null, confidence 0', () => {
    const d = enrich({})
    expect(d).toMatchObject({ corrected_city: null, corrected_province: null, corrected_postal_code: null, region: null, location_confidence: 0, is_location_validated: false })
    expect(d.issues).toEqual(expect.arrayContaining(['city_empty', 'province_empty', 'postal_code_empty']))
  })
})

describe('regions', () => {
  it('all 24 jurisdictions, each in one of the spec regions', () => {
    expect(JURISDICTIONS).toHaveLength(24)
    expect(new Set(JURISDICTIONS.map((j) => j.letter)).size).toBe(24)
    expect(REGIONS).toEqual(['Región Metropolitana', 'Región Centro', 'Región Cuyo', 'Región Norte', 'Región Patagonia'])
    const region = (name: string) => JURISDICTIONS.find((j) => j.name === name)?.region
    // The spec's table.
    const spec: Record<string, string[]> = {
      'Región Metropolitana': ['Buenos Aires', 'Ciudad Autónoma de Buenos Aires'],
      'Región Centro': ['Córdoba', 'Santa Fe', 'Entre Ríos'],
      'Región Cuyo': ['Mendoza', 'San Juan', 'San Luis'],
      'Región Norte': ['Salta', 'Tucumán', 'Jujuy', 'Santiago del Estero'],
      'Región Patagonia': ['Neuquén', 'Río Negro', 'Chubut', 'Santa Cruz'],
    }
    for (const [r, members] of Object.entries(spec)) for (const m of members) expect(region(m), m).toBe(r)
    // The documented choices for the ones it leaves out.
    for (const m of ['Catamarca', 'La Rioja', 'Misiones', 'Corrientes', 'Chaco', 'Formosa']) expect(region(m), m).toBe('Región Norte')
    for (const m of ['La Pampa', 'Tierra del Fuego']) expect(region(m), m).toBe('Región Patagonia')
  })

  it('region filters: canonical and short labels', () => {
    expect(resolveRegionFilter('Metropolitana')).toBe('Región Metropolitana')
    expect(resolveRegionFilter('patagonia')).toBe('Región Patagonia')
    expect(resolveRegionFilter('Region Norte')).toBe('Región Norte')
    expect(resolveRegionFilter('Noreste')).toBeNull()
  })
})

describe('reference data', () => {
  it('the shipped tables are consistent', () => {
    const ref = defaultReference()
    expect(defaultReference()).toBe(ref)
    // Postal ranges: sorted, disjoint, CABA alone on 1000-1499.
    for (let i = 1; i < POSTAL_RANGES.length; i++) expect(POSTAL_RANGES[i]![0]).toBeGreaterThan(POSTAL_RANGES[i - 1]![1])
    for (let cp = 1000; cp <= 1499; cp++) expect(ref.index.postal[cp]).toBe('C')
    expect(ref.index.names.size).toBeGreaterThan(400)
    expect(() => createReference({ ...defaultTables(), provinceAliases: [['Atlantis', 'I']] })).toThrow(ReferenceDataError)
    expect(() => createReference({ ...defaultTables(), postalRanges: [[1000, 1100, '']] })).toThrow(ReferenceDataError)
  })

  it('text keys fold accents, case and punctuation', () => {
    expect(fold('Neuquén ÑANDÚ')).toBe('neuquen nandu')
    expect(compactKey('Bs. As.')).toBe(compactKey('BSAS'))
  })

  it('loads a reference directory and merges it over the shipped tables', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdp-demographics-'))
    try {
      fs.writeFileSync(
        path.join(dir, 'localities.csv'),
        ['provincia,cpa_letra,localidad,cp', 'Córdoba,X,ABBURRA,5220', 'Córdoba,X,CORDOBA,5000', '"Santa Fe",S,"VILLA, CON COMA",2001', 'Nowhere,,X,1', 'Salta,A,SALTA,44'].join('\n'),
      )
      fs.writeFileSync(path.join(dir, 'first_names.tsv'), 'name\tmale_share\nxiomara\t0.01\nandrea\t0.6\nbad\t7\n')
      fs.writeFileSync(path.join(dir, 'province_aliases.csv'), 'alias,province\nLa Docta,X\nMendocina,Mendoza\nnope,Atlantis\n')
      fs.writeFileSync(path.join(dir, 'postal_codes.csv'), 'postal_code,province\n5220,X\n')
      const ref = loadReferenceDirectory(dir)
      expect(ref.source.files.map((f) => [path.basename(f.file), f.rows, f.skipped])).toEqual([
        ['province_aliases.csv', 3, 1],
        ['localities.csv', 5, 2],
        ['first_names.tsv', 3, 1],
        ['postal_codes.csv', 1, 0],
      ])
      const e = (fields: Partial<DemographicInput>) => enrichDemographics({ ...EMPTY, ...fields }, NOW, ref)
      expect(e({ city: 'Abburra', province: 'La Docta', postal_code: '5220' })).toMatchObject({ corrected_city: 'Abburra', corrected_province: 'Córdoba', is_location_validated: true })
      expect(e({ province: 'mendocina' }).corrected_province).toBe('Mendoza')
      // Names shipped in capitals are title-cased.
      expect(e({ city: 'Villa, con coma', postal_code: '2001' })).toMatchObject({ corrected_province: 'Santa Fe', corrected_city: 'Villa, Con Coma' })
      // The shipped locality keeps its accented name and range.
      expect(e({ city: 'CORDOBA', province: 'Cba', postal_code: '5010' })).toMatchObject({ corrected_city: 'Córdoba', is_location_validated: true })
      expect(e({ first_name: 'Xiomara' }).gender).toBe('F')
      expect(e({ first_name: 'Andrea' }).gender).toBe('U') // the loaded share overrides the shipped F
      expect(enrich({ first_name: 'Andrea' }).gender).toBe('F') // the shipped reference is untouched
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a missing, empty or malformed reference directory is an error naming it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdp-demographics-'))
    try {
      expect(() => loadReferenceDirectory(path.join(dir, 'absent'))).toThrow(ReferenceDataError)
      expect(() => loadReferenceDirectory(dir)).toThrow(/holds none of/)
      fs.writeFileSync(path.join(dir, 'localities.csv'), 'town,zip\nA,1000\n')
      expect(() => loadReferenceDirectory(dir)).toThrow(/localities\.csv: no column named/)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('robustness and speed', () => {
  it('bad input never throws and always gives the full shape', () => {
    const junk: unknown[] = [null, undefined, '', ' ', 0, -1, 1e308, Number.NaN, true, {}, [], ['30123456'], { a: 1 }, 'ñ'.repeat(10_000), '\u0000\uffff', '😀 María', '<script>', '٣٠١٢٣٤٥٦']
    const keys = Object.keys(enrich({})).sort()
    for (const a of junk) {
      for (const field of ['national_id', 'first_name', 'city', 'province', 'postal_code'] as const) {
        const d = enrichDemographics({ ...EMPTY, [field]: a } as unknown as DemographicInput, NOW)
        expect(Object.keys(d).sort()).toEqual(keys)
        expect(d.location_confidence).toBeGreaterThanOrEqual(0)
        expect(d.location_confidence).toBeLessThanOrEqual(1)
      }
    }
    expect(() => enrichDemographics(null as unknown as DemographicInput, NOW)).not.toThrow()
    expect(() => enrichDemographics(undefined as unknown as DemographicInput, undefined as unknown as Date)).not.toThrow()
  })
})

describe('evaluation (../shared/data/ar)', () => {
  it.skipIf(!haveData)(`the DNI curve is within half a year of every published anchor${needsData}`, () => {
    const figures = evaluateAge(parseAnchors(fs.readFileSync(path.join(DATA, 'derived/dni_birthyear_anchors.csv'), 'utf8')), defaultReference(), NOW)
    expect(figures.anchors).toBeGreaterThan(20)
    expect(figures.age_max_error_years).toBeLessThanOrEqual(1)
    expect(figures.no_cohort_without_age).toBe(figures.no_cohort_anchors)
  })
})
