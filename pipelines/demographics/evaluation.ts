/**
 * Scoring the enrichment against reference data (`cdp eval demographics`). Pure: callers read
 * the files and pass their text; these functions parse and score.
 */
import { enrichDemographics } from './enrich.ts'
import { genderFromFirstName } from './gender.ts'
import { JURISDICTIONS, type ProvinceLetter } from './reference/jurisdictions.ts'
import { parseDelimited } from './reference-loader.ts'
import type { ReferenceData } from './reference.ts'
import { compactKey } from './text.ts'

export class EvaluationDataError extends Error {
  override name = 'EvaluationDataError'
}

const round = (x: number, digits = 4) => Math.round(x * 10 ** digits) / 10 ** digits
const share = (a: number, b: number) => (b === 0 ? 0 : round(a / b))

// ---- gender ---------------------------------------------------------------------------------

export interface IneName {
  name: string
  count: number
  maleShare: number
}

/** genderator's names_ine.tsv: name, count, male share; no header. */
export function parseIneNames(text: string): IneName[] {
  const out: IneName[] = []
  for (const line of text.split('\n')) {
    const [name, count, p] = line.split('\t')
    if (!name || count === undefined || p === undefined) continue
    const c = Number(count)
    const m = Number(p)
    if (Number.isFinite(c) && Number.isFinite(m)) out.push({ name: name.trim(), count: c, maleShare: m })
  }
  if (out.length === 0) throw new EvaluationDataError('no names read (expected name<TAB>count<TAB>male share)')
  return out
}

export interface GenderFigures {
  /** Names whose male share is ≥ 0.95 or ≤ 0.05. */
  names: number
  coverage: number
  accuracy_recognised: number
  accuracy_all: number
  /** The same, each name weighted by how many people carry it. */
  people: number
  coverage_people: number
  accuracy_recognised_people: number
  accuracy_all_people: number
}

export function evaluateGender(rows: readonly IneName[], ref: ReferenceData): GenderFigures {
  let n = 0, recognised = 0, correct = 0
  let p = 0, pRecognised = 0, pCorrect = 0
  for (const r of rows) {
    if (r.maleShare > 0.05 && r.maleShare < 0.95) continue
    const truth = r.maleShare >= 0.95 ? 'M' : 'F'
    const g = genderFromFirstName(ref.index.names, r.name).gender
    n++
    p += r.count
    if (g === null) continue
    recognised++
    pRecognised += r.count
    if (g === truth) {
      correct++
      pCorrect += r.count
    }
  }
  return {
    names: n,
    coverage: share(recognised, n),
    accuracy_recognised: share(correct, recognised),
    accuracy_all: share(correct, n),
    people: p,
    coverage_people: share(pRecognised, p),
    accuracy_recognised_people: share(pCorrect, pRecognised),
    accuracy_all_people: share(pCorrect, p),
  }
}

// ---- postal codes ---------------------------------------------------------------------------

export interface LocalityCode {
  letter: ProvinceLetter
  postalCode: string
}

/** A jurisdiction from a file name such as "Entre-Ríos.csv" or "Tierra-del-Fuego.csv". */
export function jurisdictionFromFileName(file: string): ProvinceLetter | null {
  const key = compactKey(file.replace(/\.[a-z]+$/i, ''))
  return JURISDICTIONS.find((j) => compactKey(j.name) === key)?.letter ?? null
}

/** One province file of the Correo localities: header with a `cp` column. */
export function parseCorreoLocalities(text: string, letter: ProvinceLetter): LocalityCode[] {
  const rows = parseDelimited(text, ',')
  const cp = (rows[0] ?? []).indexOf('cp')
  if (cp < 0) throw new EvaluationDataError('no cp column')
  const out: LocalityCode[] = []
  for (const r of rows.slice(1)) {
    const code = r[cp]?.trim() ?? ''
    if (/^\d{4}$/.test(code)) out.push({ letter, postalCode: code })
  }
  return out
}

export interface PostalFigures {
  localities: number
  /** Province from the 4-digit code alone equals the locality's province. */
  accuracy: number
  /** No province read from the code. */
  unresolved: number
}

export function evaluatePostal(rows: readonly LocalityCode[], ref: ReferenceData, now: Date): PostalFigures {
  const names = new Map(JURISDICTIONS.map((j) => [j.letter, j.name]))
  let correct = 0, unresolved = 0
  for (const r of rows) {
    const d = enrichDemographics({ national_id: null, first_name: null, city: null, province: null, postal_code: r.postalCode }, now, ref)
    if (d.corrected_province === null) unresolved++
    else if (d.corrected_province === names.get(r.letter)) correct++
  }
  return { localities: rows.length, accuracy: share(correct, rows.length), unresolved: share(unresolved, rows.length) }
}

// ---- province aliases -----------------------------------------------------------------------

export interface AliasRow {
  alias: string
  letter: ProvinceLetter
}

/** derived/provincia_aliases_ar.csv: alias_normalizado, cpa_letra, fuente. */
export function parseAliases(text: string): AliasRow[] {
  const rows = parseDelimited(text, ',')
  const header = rows[0] ?? []
  const a = header.indexOf('alias_normalizado'), l = header.indexOf('cpa_letra')
  if (a < 0 || l < 0) throw new EvaluationDataError('expected columns alias_normalizado, cpa_letra')
  const letters = new Set<string>(JURISDICTIONS.map((j) => j.letter))
  return rows.slice(1).filter((r) => r[a] && letters.has(r[l] ?? '')).map((r) => ({ alias: r[a]!, letter: r[l] as ProvinceLetter }))
}

export interface AliasFigures {
  aliases: number
  /** Read as the listed province. */
  resolved: number
  /** Aliases read as another province, or not at all. */
  misses: { alias: string; expected: string; got: string | null }[]
}

export function evaluateAliases(rows: readonly AliasRow[], ref: ReferenceData, now: Date): AliasFigures {
  const names = new Map(JURISDICTIONS.map((j) => [j.letter, j.name]))
  const misses: AliasFigures['misses'] = []
  for (const r of rows) {
    const got = enrichDemographics({ national_id: null, first_name: null, city: null, province: r.alias, postal_code: null }, now, ref).corrected_province
    if (got !== names.get(r.letter)) misses.push({ alias: r.alias, expected: names.get(r.letter)!, got })
  }
  return { aliases: rows.length, resolved: share(rows.length - misses.length, rows.length), misses }
}

// ---- age ------------------------------------------------------------------------------------

export interface AnchorRow {
  dni: number
  /** Fractional birth year; null where the anchor says the range is no birth cohort. */
  birthYear: number | null
}

/** derived/dni_birthyear_anchors.csv: dni, estimated_birth_year, confidence, note. */
export function parseAnchors(text: string): AnchorRow[] {
  const rows = parseDelimited(text, ',')
  const header = rows[0] ?? []
  const d = header.indexOf('dni'), y = header.indexOf('estimated_birth_year')
  if (d < 0 || y < 0) throw new EvaluationDataError('expected columns dni, estimated_birth_year')
  return rows.slice(1).map((r) => ({ dni: Number(r[d]), birthYear: r[y]?.trim() ? Number(r[y]) : null })).filter((r) => Number.isFinite(r.dni))
}

export interface AgeFigures {
  anchors: number
  /** Mean |estimated_age − (year(now) − anchor birth year)|, over anchors with a birth year. */
  age_mae_years: number
  age_max_error_years: number
  /** Anchors without a birth year (not a cohort) that also get no age here. */
  no_cohort_anchors: number
  no_cohort_without_age: number
}

export function evaluateAge(rows: readonly AnchorRow[], ref: ReferenceData, now: Date): AgeFigures {
  let n = 0, sum = 0, max = 0, noCohort = 0, noAge = 0
  for (const r of rows) {
    const id = String(r.dni).padStart(7, '0')
    const d = enrichDemographics({ national_id: id, first_name: null, city: null, province: null, postal_code: null }, now, ref)
    if (r.birthYear === null) {
      noCohort++
      if (d.estimated_age === null) noAge++
      continue
    }
    const truth = now.getUTCFullYear() - r.birthYear
    const err = d.estimated_age === null ? truth : Math.abs(d.estimated_age - truth)
    n++
    sum += err
    max = Math.max(max, err)
  }
  return { anchors: n, age_mae_years: n === 0 ? 0 : round(sum / n, 2), age_max_error_years: round(max, 2), no_cohort_anchors: noCohort, no_cohort_without_age: noAge }
}

// ---- throughput -----------------------------------------------------------------------------

/** Customers enriched per second on one core, over a mix of clean and messy records. */
export function measureThroughput(ref: ReferenceData, now: Date, customers = 200_000): number {
  const mix = [
    { national_id: '30.123.456', first_name: 'María José', city: 'Palermo', province: 'Capital Federal', postal_code: 'C1425ABC' },
    { national_id: '20-30123456-6', first_name: 'JUAN CARLOS', city: 'cordoba', province: 'Cba', postal_code: '5000' },
    { national_id: '62345678', first_name: 'Guadalupe', city: 'Rosario', province: 'Sta Fe', postal_code: 'S2000ABC' },
    { national_id: '12A45678', first_name: '', city: '', province: 'Narnia', postal_code: '99' },
    { national_id: null, first_name: null, city: null, province: null, postal_code: null },
    { national_id: '27-30123456-1', first_name: 'Lautaro', city: 'Gral. Roca', province: 'Río Negro', postal_code: '8332' },
  ]
  for (let i = 0; i < 20_000; i++) enrichDemographics(mix[i % mix.length]!, now, ref)
  const t0 = performance.now()
  for (let i = 0; i < customers; i++) enrichDemographics(mix[i % mix.length]!, now, ref)
  return Math.round(customers / ((performance.now() - t0) / 1000))
}

// ---- report ---------------------------------------------------------------------------------

export interface DemographicsReport {
  gender: GenderFigures
  postal: PostalFigures
  aliases: Omit<AliasFigures, 'misses'> & { misses: string[] }
  age: AgeFigures
  enrich_customers_per_second: number
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`

export function formatReport(dataDir: string, r: DemographicsReport): string {
  const rows: [string, string][] = [
    [`gender: INE names with male share ≥0.95 or ≤0.05`, `${r.gender.names}`],
    ['  coverage (names the table recognises)', pct(r.gender.coverage)],
    ['  accuracy over recognised names', pct(r.gender.accuracy_recognised)],
    ['  accuracy over all names', pct(r.gender.accuracy_all)],
    ['  coverage, weighted by people', pct(r.gender.coverage_people)],
    ['  accuracy over recognised, weighted by people', pct(r.gender.accuracy_recognised_people)],
    ['  accuracy over all, weighted by people', pct(r.gender.accuracy_all_people)],
    ['province from 4-digit postal code: Correo localities', `${r.postal.localities}`],
    ['  accuracy', pct(r.postal.accuracy)],
    ['  unresolved', pct(r.postal.unresolved)],
    ['province aliases (derived/provincia_aliases_ar.csv)', `${r.aliases.aliases}`],
    ['  resolved to the listed province', pct(r.aliases.resolved)],
    ['  misses', r.aliases.misses.length === 0 ? '-' : r.aliases.misses.join(', ')],
    ['age from DNI: anchors with a birth year', `${r.age.anchors}`],
    ['  mean absolute error (years)', r.age.age_mae_years.toFixed(2)],
    ['  max error (years)', r.age.age_max_error_years.toFixed(2)],
    ['  non-cohort anchors given no age', `${r.age.no_cohort_without_age} of ${r.age.no_cohort_anchors}`],
    ['enrichment throughput (customers/s, one core)', `${r.enrich_customers_per_second}`],
  ]
  const w = Math.max(...rows.map(([k]) => k.length))
  return [`demographics evaluation, data ${dataDir}`, ...rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`)].join('\n')
}

export function compactAliasFigures(a: AliasFigures): DemographicsReport['aliases'] {
  return { ...a, misses: a.misses.map((m) => `${m.alias} → ${m.got ?? 'none'} (listed ${m.expected})`) }
}
