/**
 * Location correction: province, postal code and city cross-checked against the reference.
 * Pure; bad input leaves fields null with a reason, never an exception.
 *
 * Each field that can be read is evidence for provinces, scored:
 *   CPA letter (C1425ABC)            2.5 for its province
 *   4-digit code (range or exact)    2 for its first province, 1 for others it also serves
 *   province text                    2 for its reading, 1 for compatible readings ("Buenos Aires": B, then C)
 *   city                             1 for each province with a locality of that name,
 *                                    +1 where that locality also uses the postal code
 * The highest score wins; ties go to the CPA letter, then the typed province, then the code, then
 * the city, and a tie only the city settles needs a main (shipped) locality, else no province.
 * So a full CPA outweighs a typed province alone, and province plus city outweigh it.
 *
 * location_confidence sums the evidence that agrees with the result, clamped to 0..1:
 *   province text reads as it (+0.3; +0.15 if only a compatible reading), else −0.1
 *   postal code belongs to it (+0.3; +0.15 if it only also serves it), else −0.1
 *   city is one of its localities (+0.2), else −0.1 when the city is known elsewhere
 *   that locality uses the postal code (+0.2)
 * A field left empty adds nothing. All three typed and agreeing give 1.
 *
 * CABA is a city and a jurisdiction at once: when the province reads as CABA and the city is
 * empty the city is implied, and when the city names CABA itself ("Capital Federal", "CABA")
 * and the province is empty the province is implied. Implied fields count for validation but
 * add no confidence.
 */
import { CABA_NAME } from './reference/localities.ts'
import { REGIONS, REGION_ALIASES, isProvinceLetter, type ProvinceLetter, type Region } from './reference/jurisdictions.ts'
import { cityKey, type LocalityRecord, type ProvinceReading, type ReferenceIndex } from './reference.ts'
import { clean, compactKey, wordKey } from './text.ts'

export { REGIONS, REGION_ALIASES, type Region }

/** A region filter value (canonical or short; case and accents ignored) → region, else null. */
export function resolveRegionFilter(value: string): Region | null {
  const v = wordKey(value)
  for (const r of REGIONS) if (wordKey(r) === v) return r
  for (const [alias, r] of Object.entries(REGION_ALIASES)) if (wordKey(alias) === v) return r
  return null
}

export interface LocationInput {
  city: unknown
  province: unknown
  postal_code: unknown
}

export interface LocationResult {
  corrected_city: string | null
  corrected_province: string | null
  corrected_postal_code: string | null
  region: Region | null
  location_confidence: number
  location_correction_needed: boolean
  is_location_validated: boolean
  issues: string[]
}

export interface PostalCode {
  /** The CPA's province letter, when the full or lettered form was typed. */
  letter: ProvinceLetter | null
  cp4: number
  /** Canonical text: "C1425ABC", "X5000" or "5000". */
  text: string
}

const CPA = /^([A-HJ-NP-Z])(\d{4})([A-Z]{3})?$/
const CP4 = /^\d{4}$/
const CP_LABEL = /^(C\.?\s?P\.?\s?A?\.?|COD(IGO)?\.? POSTAL)[:\s]*(?=[A-Z]?\d)/

/** Postal code in either form, else null. Spaces, dots and dashes inside are ignored. */
export function parsePostalCode(raw: string): PostalCode | null {
  const s = raw.toUpperCase().trim().replace(CP_LABEL, '').replace(/[\s.\-]/g, '')
  if (CP4.test(s)) return { letter: null, cp4: Number(s), text: s }
  const m = CPA.exec(s)
  if (!m) return null
  return { letter: m[1] as ProvinceLetter, cp4: Number(m[2]), text: s }
}

const PROVINCE_PREFIX = /^(provincia|pcia|prov|pvcia)( de| del)? /
const COUNTRY_SUFFIX = / (argentina|arg|rep argentina)$/

/** Province text → reading, else null. Tries the text, then without "Provincia de" / ", Argentina". */
export function readProvince(provinces: ReadonlyMap<string, ProvinceReading>, text: string): ProvinceReading | null {
  const direct = provinces.get(compactKey(text))
  if (direct) return direct
  const words = wordKey(text).replace(COUNTRY_SUFFIX, '')
  const iso = /^ar ?([a-z])$/.exec(words)
  if (iso) {
    const l = iso[1]!.toUpperCase()
    return isProvinceLetter(l) ? { letters: l } : null
  }
  const stripped = words.replace(PROVINCE_PREFIX, '')
  const found = provinces.get(stripped.replace(/ /g, ''))
  if (!found) return null
  // A "provincia" is never the autonomous city.
  if (stripped !== words && found.letters.length > 1) return { letters: found.letters.replace('C', '') }
  return found
}

function inPostal(loc: LocalityRecord, cp4: number): boolean {
  for (const [from, to] of loc.postal) if (cp4 >= from && cp4 <= to) return true
  return false
}

/** Localities whose name or alias matches the city text; tries without a leading "Ciudad de". */
function findLocalities(index: ReferenceIndex, city: string): readonly LocalityRecord[] {
  const key = cityKey(city)
  const found = index.localities.get(key)
  if (found) return found
  if (key.startsWith('ciudadde')) return index.localities.get(key.slice(8)) ?? []
  return []
}

function text(v: unknown, field: string, issues: string[]): string | null {
  if (v === null || v === undefined) {
    issues.push(`${field}_empty`)
    return null
  }
  if (typeof v !== 'string' && typeof v !== 'number') {
    issues.push(`${field}_invalid`)
    return null
  }
  const c = clean(String(v))
  if (c === null) issues.push(`${field}_empty`)
  return c
}

export function correctLocation(index: ReferenceIndex, input: LocationInput): LocationResult {
  const issues: string[] = []
  const cityIn = text(input.city, 'city', issues)
  const provinceIn = text(input.province, 'province', issues)
  const postalIn = text(input.postal_code, 'postal_code', issues)

  const reading = provinceIn === null ? null : readProvince(index.provinces, provinceIn)
  if (provinceIn !== null && reading === null) issues.push('province_unknown')
  const postal = postalIn === null ? null : parsePostalCode(postalIn)
  if (postalIn !== null && postal === null) issues.push('postal_code_invalid')
  const postalLetters = postal === null ? undefined : index.postal[postal.cp4]
  if (postal?.letter && postalLetters !== undefined && !postalLetters.includes(postal.letter)) issues.push('postal_code_letter_mismatch')
  const cityMatches = cityIn === null ? [] : findLocalities(index, cityIn)

  // Score the provinces.
  const score = new Map<ProvinceLetter, number>()
  const bump = (l: string, w: number) => score.set(l as ProvinceLetter, (score.get(l as ProvinceLetter) ?? 0) + w)
  if (postal?.letter) bump(postal.letter, 2.5)
  else if (postalLetters !== undefined) for (let i = 0; i < postalLetters.length; i++) bump(postalLetters[i]!, i === 0 ? 2 : 1)
  if (reading) for (let i = 0; i < reading.letters.length; i++) bump(reading.letters[i]!, i === 0 ? 2 : 1)
  const cityProvinces = new Set<ProvinceLetter>()
  for (const loc of cityMatches) {
    if (cityProvinces.has(loc.letter)) continue
    cityProvinces.add(loc.letter)
    bump(loc.letter, 1)
  }
  if (postal) {
    const withCode = new Set<ProvinceLetter>()
    for (const loc of cityMatches) if (inPostal(loc, postal.cp4)) withCode.add(loc.letter)
    for (const l of withCode) bump(l, 1)
  }
  const priority: (string | undefined)[] = [postal?.letter ?? undefined, reading?.letters[0], postalLetters?.[0], cityMatches[0]?.letter]
  let best: ProvinceLetter | null = null
  let bestScore = 0
  let tied = false
  for (const [l, s] of score) {
    if (s > bestScore) {
      best = l
      bestScore = s
      tied = false
    } else if (s === bestScore && best !== null) {
      tied = true
      if (rank(priority, l) < rank(priority, best)) best = l
    }
  }
  // A tie that only a city name settles is a guess unless that city is a main one ("Rosario").
  if (tied && best !== null && rank(priority, best) === 3 && !cityMatches[0]?.main) {
    best = null
    issues.push('location_ambiguous')
  }

  if (best === null) {
    if ((cityIn !== null || provinceIn !== null || postal !== null) && !issues.includes('location_ambiguous')) issues.push('location_unresolved')
    const postalOut = postal?.text ?? null
    return {
      corrected_city: cityIn,
      corrected_province: null,
      corrected_postal_code: postalOut,
      region: null,
      location_confidence: 0,
      location_correction_needed: provinceIn !== null || changed(postalIn, postalOut),
      is_location_validated: false,
      issues,
    }
  }

  const L = best
  const jurisdiction = index.jurisdictions.get(L)!
  // The locality: of the chosen province, preferring one that uses the postal code.
  let locality: LocalityRecord | null = null
  for (const loc of cityMatches) {
    if (loc.letter !== L) continue
    if (postal && inPostal(loc, postal.cp4)) {
      locality = loc
      break
    }
    locality ??= loc
  }
  let cityImplied = false
  let provinceImplied = false
  if (L === 'C' && cityIn === null) {
    locality = findLocalities(index, CABA_NAME).find((l) => l.letter === 'C') ?? null
    cityImplied = locality !== null
  }
  if (L === 'C' && provinceIn === null && locality?.name === CABA_NAME) provinceImplied = true
  if (cityIn !== null && locality === null) issues.push(cityMatches.length > 0 ? 'city_not_in_province' : 'city_unknown')

  const provinceAgrees = reading?.letters.includes(L) ?? false
  if (reading && !provinceAgrees) issues.push('province_conflict')
  const postalAgrees = postal !== null && (postal.letter ? postal.letter === L : postalLetters === undefined || postalLetters.includes(L))
  if (postal && !postalAgrees) issues.push('postal_code_conflict')
  const localityUsesCode = locality !== null && postal !== null && postalAgrees && inPostal(locality, postal.cp4)

  let confidence = 0
  if (reading) confidence += reading.letters[0] === L ? 0.3 : provinceAgrees ? 0.15 : -0.1
  if (postal) {
    // A code no range claims is no evidence either way.
    if (!postalAgrees) confidence -= 0.1
    else if (postal.letter || postalLetters?.[0] === L) confidence += 0.3
    else if (postalLetters !== undefined) confidence += 0.15
  }
  if (locality && !cityImplied) confidence += 0.2
  else if (cityIn !== null && cityMatches.length > 0) confidence -= 0.1
  if (localityUsesCode) confidence += 0.2
  confidence = Math.round(Math.min(1, Math.max(0, confidence)) * 100) / 100

  let correctedPostal: string | null = postal && postalAgrees ? postal.text : null
  const only = locality?.postal.length === 1 && locality.postal[0]![0] === locality.postal[0]![1] ? locality.postal[0]![0] : null
  if (correctedPostal === null && only !== null) correctedPostal = String(only).padStart(4, '0')
  const correctedCity = locality ? locality.name : cityIn

  const validated = localityUsesCode && (provinceAgrees || provinceImplied)

  return {
    corrected_city: correctedCity,
    corrected_province: jurisdiction.name,
    corrected_postal_code: correctedPostal,
    region: jurisdiction.region,
    location_confidence: confidence,
    location_correction_needed: changed(cityIn, correctedCity) || changed(provinceIn, jurisdiction.name) || changed(postalIn, correctedPostal),
    is_location_validated: validated,
    issues,
  }
}

function rank(priority: (string | undefined)[], l: string): number {
  const i = priority.indexOf(l)
  return i < 0 ? priority.length : i
}

function changed(input: string | null, corrected: string | null): boolean {
  return input !== corrected
}
