/**
 * Demographic enrichment of one customer: age labels from the national id, gender from the CUIL
 * type or the first name, corrected location and region. Pure and total: any input, however
 * malformed, gives a result; a field that cannot be derived is null and `issues` says why.
 */
import { GENERATION_BY_SEGMENT, ageSegment, estimateAge, searchAdsAgeRange, socialAdsAgeRange, type AgeSegment, type SearchAdsAgeRange, type SocialAdsAgeRange } from './age.ts'
import { genderFromCuilPrefix, genderFromFirstName, type Gender } from './gender.ts'
import { correctLocation, type LocationResult } from './location.ts'
import { parseNationalId } from './national-id.ts'
import { defaultReference, type ReferenceData } from './reference.ts'

export { defaultReference, createReference, defaultTables, ReferenceDataError, type ReferenceData, type ReferenceTables, type LocalityRecord } from './reference.ts'
export { loadReferenceDirectory } from './reference-loader.ts'

export interface DemographicInput {
  national_id: string | null
  first_name: string | null
  city: string | null
  province: string | null
  postal_code: string | null
}

/** The enrichment of one customer: identity-derived fields, then the location (LocationResult, whose `issues` hold every reason). */
export interface Demographics extends LocationResult {
  /** CUIT counts as CUIL. */
  national_id_type: 'DNI' | 'CUIL' | null
  /** 7-8 digits, no dots. */
  dni: string | null
  estimated_birth_year: number | null
  estimated_age: number | null
  age_segment: AgeSegment | null
  /** The spec's labels (GENERATIONS). */
  generation: string | null
  social_ads_age_range: SocialAdsAgeRange | null
  search_ads_age_range: SearchAdsAgeRange | null
  gender: Gender | null
  gender_source: 'cuil' | 'first_name' | null
}

export function enrichDemographics(input: DemographicInput, now: Date, ref: ReferenceData = defaultReference()): Demographics {
  // Typed callers pass an object; the stream may not.
  const src: Partial<Record<keyof DemographicInput, unknown>> = input !== null && typeof input === 'object' ? input : {}
  const { index } = ref
  const issues: string[] = []

  const id = parseNationalId(src.national_id)
  issues.push(...id.issues)
  let birthYear: number | null = null
  let age: number | null = null
  if (id.dniNumber !== null) {
    const est = estimateAge(index.curve, id.dniNumber, now instanceof Date ? now : new Date(Number.NaN))
    issues.push(...est.issues)
    birthYear = est.birthYear
    age = est.age
  }
  const segment = age === null ? null : ageSegment(age)
  if (age !== null && segment === null) issues.push('age_under_18')

  let gender: Gender | null = genderFromCuilPrefix(id.cuilPrefix)
  let genderSource: Demographics['gender_source'] = gender === null ? null : 'cuil'
  if (gender === null) {
    const byName = genderFromFirstName(index.names, src.first_name)
    gender = byName.gender
    if (gender !== null) genderSource = 'first_name'
    if (byName.issue !== null) issues.push(byName.issue)
  }

  const loc = correctLocation(index, { city: src.city, province: src.province, postal_code: src.postal_code })
  issues.push(...loc.issues)

  return {
    national_id_type: id.type,
    dni: id.dni,
    estimated_birth_year: birthYear,
    estimated_age: age,
    age_segment: segment,
    generation: segment === null ? null : GENERATION_BY_SEGMENT[segment],
    social_ads_age_range: segment === null ? null : socialAdsAgeRange(segment),
    search_ads_age_range: age === null ? null : searchAdsAgeRange(age),
    gender,
    gender_source: genderSource,
    corrected_city: loc.corrected_city,
    corrected_province: loc.corrected_province,
    corrected_postal_code: loc.corrected_postal_code,
    region: loc.region,
    location_confidence: loc.location_confidence,
    location_correction_needed: loc.location_correction_needed,
    is_location_validated: loc.is_location_validated,
    issues,
  }
}
