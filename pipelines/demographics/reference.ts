/**
 * Reference data for enrichment: the tables (shipped in reference/, or merged with a loaded
 * directory) and the lookup maps built from them once, so enriching a customer is a handful of
 * map reads. Pure; loading files is reference-loader.ts.
 */
import { birthYearCurve, type BirthYearCurve } from './age.ts'
import { DNI_ANCHORS, FOREIGN_RESIDENT_RANGES, type DniAnchor } from './reference/dni-anchors.ts'
import { FIRST_NAMES } from './reference/first-names.ts'
import { JURISDICTIONS, isProvinceLetter, type Jurisdiction, type ProvinceLetter } from './reference/jurisdictions.ts'
import { LOCALITIES } from './reference/localities.ts'
import { POSTAL_RANGES, type PostalRange } from './reference/postal-ranges.ts'
import { PROVINCE_ALIASES } from './reference/province-aliases.ts'
import { compactKey, wordKey } from './text.ts'

export type Gender = 'M' | 'F' | 'U'

export interface LocalityRecord {
  name: string
  letter: ProvinceLetter
  /** Inclusive 4-digit code ranges the locality uses. */
  postal: readonly (readonly [number, number])[]
  aliases: readonly string[]
  /** A shipped (main) locality: preferred when a bare city name exists in several provinces. */
  main: boolean
}

export interface ReferenceTables {
  /** [typed text, letters]: the first letter is the reading, the rest compatible readings. */
  provinceAliases: readonly (readonly [string, string])[]
  postalRanges: readonly PostalRange[]
  /** Exact 4-digit codes → letters (most localities first); these override the ranges. */
  postalCodes: readonly (readonly [number, string])[]
  localities: readonly LocalityRecord[]
  firstNames: readonly (readonly [string, Gender])[]
  dniAnchors: readonly DniAnchor[]
  /** DNI ranges that are not birth cohorts (foreign residents). */
  foreignResidentRanges: readonly (readonly [number, number])[]
}

export interface ProvinceReading {
  /** The reading to take first, then the compatible ones. */
  letters: string
}

/** Lookup maps, built once per ReferenceData. */
export interface ReferenceIndex {
  jurisdictions: ReadonlyMap<ProvinceLetter, Jurisdiction>
  provinces: ReadonlyMap<string, ProvinceReading>
  /** Index = 4-digit code; value = letters, or undefined when no range or code claims it. */
  postal: readonly (string | undefined)[]
  /** compactKey(name or alias) → localities of that name in any province. */
  localities: ReadonlyMap<string, readonly LocalityRecord[]>
  /** wordKey(given name or compound) → gender. */
  names: ReadonlyMap<string, Gender>
  curve: BirthYearCurve
}

export interface ReferenceData {
  tables: ReferenceTables
  index: ReferenceIndex
}

export class ReferenceDataError extends Error {
  override name = 'ReferenceDataError'
}

/** Letters of a table row: each a CPA letter, no repeats. */
function checkLetters(letters: string, what: string): string {
  const seen = new Set<string>()
  for (const l of letters) {
    if (!isProvinceLetter(l) || seen.has(l)) throw new ReferenceDataError(`${what}: bad province letters '${letters}'`)
    seen.add(l)
  }
  if (letters === '') throw new ReferenceDataError(`${what}: no province letter`)
  return letters
}

export function buildIndex(t: ReferenceTables): ReferenceIndex {
  const jurisdictions = new Map(JURISDICTIONS.map((j) => [j.letter, j]))
  const provinces = new Map<string, ProvinceReading>()
  for (const j of JURISDICTIONS) provinces.set(compactKey(j.name), { letters: j.letter })
  for (const [alias, letters] of t.provinceAliases) provinces.set(compactKey(alias), { letters: checkLetters(letters, `alias '${alias}'`) })

  const postal: (string | undefined)[] = new Array(10_000).fill(undefined)
  for (const [from, to, letters] of t.postalRanges) {
    checkLetters(letters, `postal range ${from}-${to}`)
    for (let cp = Math.max(0, from); cp <= Math.min(9999, to); cp++) postal[cp] = letters
  }
  for (const [cp, letters] of t.postalCodes) if (cp >= 0 && cp <= 9999) postal[cp] = checkLetters(letters, `postal code ${cp}`)

  const localities = new Map<string, LocalityRecord[]>()
  const add = (key: string, loc: LocalityRecord) => {
    if (key === '') return
    const list = localities.get(key)
    if (!list) localities.set(key, [loc])
    else if (!list.includes(loc)) list.push(loc)
  }
  for (const loc of t.localities) {
    add(cityKey(loc.name), loc)
    for (const a of loc.aliases) add(cityKey(a), loc)
  }
  // Main localities first: a bare name shared by provinces prefers the main one.
  for (const list of localities.values()) list.sort((a, b) => Number(b.main) - Number(a.main))

  const names = new Map<string, Gender>()
  for (const [name, g] of t.firstNames) {
    const k = wordKey(name)
    if (k !== '') names.set(k, g)
  }
  return { jurisdictions, provinces, postal, localities, names, curve: birthYearCurve(t.dniAnchors, t.foreignResidentRanges) }
}

// City abbreviations expanded word by word before matching ("Gral. Roca" = "General Roca").
const CITY_ABBREVIATIONS: Readonly<Record<string, string>> = {
  gral: 'general', gdor: 'gobernador', pto: 'puerto', pte: 'presidente', pres: 'presidente', cnel: 'coronel',
  cmte: 'comandante', cte: 'comandante', tte: 'teniente', ing: 'ingeniero', dr: 'doctor', sta: 'santa',
  sto: 'santo', sn: 'san', cdad: 'ciudad', sgo: 'santiago', stgo: 'santiago', va: 'villa', vla: 'villa',
}

/** Match key of a city: folded words, abbreviations expanded, then spaces dropped. */
export function cityKey(s: string): string {
  const words = wordKey(s).split(' ')
  let out = ''
  for (const w of words) out += CITY_ABBREVIATIONS[w] ?? w
  return out
}

export function createReference(tables: ReferenceTables): ReferenceData {
  return { tables, index: buildIndex(tables) }
}

/** Shipped locality rows → records. */
export function shippedLocalities(): LocalityRecord[] {
  return LOCALITIES.map(([name, letter, from, to, aliases]) => {
    if (!isProvinceLetter(letter)) throw new ReferenceDataError(`locality '${name}': bad letter '${letter}'`)
    return { name, letter, postal: [[from, to ?? from]], aliases: aliases ?? [], main: true }
  })
}

export function defaultTables(): ReferenceTables {
  return {
    provinceAliases: PROVINCE_ALIASES,
    postalRanges: POSTAL_RANGES,
    postalCodes: [],
    localities: shippedLocalities(),
    firstNames: FIRST_NAMES,
    dniAnchors: DNI_ANCHORS,
    foreignResidentRanges: FOREIGN_RESIDENT_RANGES,
  }
}

let shipped: ReferenceData | undefined

/** The shipped compact tables, indexed once per process. */
export function defaultReference(): ReferenceData {
  shipped ??= createReference(defaultTables())
  return shipped
}
