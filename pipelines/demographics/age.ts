/**
 * Age from the DNI number, and the age labels ads platforms take. Pure.
 *
 * The birth year is the integer part of a piecewise-linear interpolation between anchor knots
 * (reference/dni-anchors.ts); beyond the last knot the last segment's slope continues. Age is
 * year(now) − birth year, so it is one too high for someone whose birthday is still ahead this
 * year (±1), on top of the curve's own error (±2-3 years from 20 M, ±3-5 below).
 */
import type { DniAnchor } from './reference/dni-anchors.ts'

export const AGE_SEGMENTS = ['18-24', '25-34', '35-44', '45-54', '55+'] as const
export type AgeSegment = (typeof AGE_SEGMENTS)[number]

/** The spec's generation label of each age segment ("Demographic reference data"). */
export const GENERATION_BY_SEGMENT: Readonly<Record<AgeSegment, string>> = {
  '18-24': 'Generación Z',
  '25-34': 'Millennials/Gen Z',
  '35-44': 'Millennials',
  '45-54': 'Generación X',
  '55+': 'Baby Boomers',
}
export const GENERATIONS = ['Generación Z', 'Millennials/Gen Z', 'Millennials', 'Generación X', 'Baby Boomers'] as const
export type Generation = (typeof GENERATIONS)[number]

/**
 * The short English labels of the spec's `generation` filter → the canonical labels they select.
 * "Millennials/Gen Z" (25-34) is the cusp, so both "Gen Z" and "Millennials" include it.
 */
export const GENERATION_ALIASES: Readonly<Record<string, readonly Generation[]>> = {
  'Gen Z': ['Generación Z', 'Millennials/Gen Z'],
  Millennials: ['Millennials/Gen Z', 'Millennials'],
  'Gen X': ['Generación X'],
  Boomers: ['Baby Boomers'],
}

export const SOCIAL_ADS_AGE_RANGES = ['18_24', '25_34', '35_44', '45_54', '55_plus'] as const
export const SEARCH_ADS_AGE_RANGES = ['18-24', '25-34', '35-44', '45-54', '55-64', '65+'] as const
export type SocialAdsAgeRange = (typeof SOCIAL_ADS_AGE_RANGES)[number]
export type SearchAdsAgeRange = (typeof SEARCH_ADS_AGE_RANGES)[number]

/**
 * A generation filter value → the canonical labels it selects: a short alias its list, a canonical
 * label itself (case-insensitive); anything else null (the HTTP layer answers 422). The alias is
 * tried first, so "Millennials", spelled the same in both, is the spec's filter value.
 */
export function resolveGenerationFilter(value: string): readonly Generation[] | null {
  const v = value.trim().toLowerCase()
  for (const [alias, gens] of Object.entries(GENERATION_ALIASES)) if (alias.toLowerCase() === v) return gens
  for (const g of GENERATIONS) if (g.toLowerCase() === v) return [g]
  return null
}

export const MAX_AGE = 110

export function ageSegment(age: number): AgeSegment | null {
  if (age < 18) return null
  if (age <= 24) return '18-24'
  if (age <= 34) return '25-34'
  if (age <= 44) return '35-44'
  if (age <= 54) return '45-54'
  return '55+'
}

export function socialAdsAgeRange(segment: AgeSegment): SocialAdsAgeRange {
  return segment === '55+' ? '55_plus' : (segment.replace('-', '_') as SocialAdsAgeRange)
}

export function searchAdsAgeRange(age: number): SearchAdsAgeRange | null {
  const segment = ageSegment(age)
  if (segment === null) return null
  if (segment !== '55+') return segment
  return age >= 65 ? '65+' : '55-64'
}

/** Knots sorted by DNI, with birth year non-decreasing: the curve is monotone by construction. */
export interface BirthYearCurve {
  dni: Float64Array
  year: Float64Array
  /** DNI ranges [from, to] that are not birth cohorts. */
  excluded: readonly (readonly [number, number])[]
}

export class AnchorError extends Error {
  override name = 'AnchorError'
}

export function birthYearCurve(anchors: readonly DniAnchor[], excluded: readonly (readonly [number, number])[]): BirthYearCurve {
  const sorted = [...anchors].sort((a, b) => a[0] - b[0])
  if (sorted.length < 2) throw new AnchorError('need at least two DNI anchors')
  for (let i = 1; i < sorted.length; i++) {
    const [d0, y0] = sorted[i - 1]!
    const [d1, y1] = sorted[i]!
    if (d1 === d0 || y1 < y0) throw new AnchorError(`DNI anchors are not monotone at ${d0} → ${d1}`)
  }
  return { dni: Float64Array.from(sorted, (a) => a[0]), year: Float64Array.from(sorted, (a) => a[1]), excluded }
}

/** The fractional birth year of a DNI number; null below the first knot or in an excluded range. */
export function fractionalBirthYear(curve: BirthYearCurve, dni: number): number | null {
  for (const [from, to] of curve.excluded) if (dni >= from && dni <= to) return null
  const { dni: xs, year: ys } = curve
  const n = xs.length
  if (dni < xs[0]!) return null
  // Segment i spans knots i and i+1; the last segment also extrapolates.
  let i = 0
  while (i < n - 2 && dni >= xs[i + 1]!) i++
  const x0 = xs[i]!, x1 = xs[i + 1]!, y0 = ys[i]!, y1 = ys[i + 1]!
  return y0 + ((dni - x0) * (y1 - y0)) / (x1 - x0)
}

export interface AgeEstimate {
  birthYear: number | null
  age: number | null
  issues: string[]
}

export function estimateAge(curve: BirthYearCurve, dni: number, now: Date): AgeEstimate {
  for (const [from, to] of curve.excluded) {
    if (dni >= from && dni <= to) return { birthYear: null, age: null, issues: ['national_id_foreign_resident'] }
  }
  const fractional = fractionalBirthYear(curve, dni)
  const year = now.getUTCFullYear()
  if (!Number.isFinite(year)) return { birthYear: null, age: null, issues: ['reference_date_invalid'] }
  if (fractional === null) return { birthYear: null, age: null, issues: ['national_id_implausible'] }
  const birthYear = Math.floor(fractional)
  const age = year - birthYear
  if (age < 0 || age > MAX_AGE) return { birthYear: null, age: null, issues: ['national_id_implausible'] }
  return { birthYear, age, issues: [] }
}
