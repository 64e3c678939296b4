/**
 * Loads fuller reference data from a configured directory and merges it over the shipped tables.
 * The only module here that does I/O. Every file is optional, but the directory must hold at
 * least one; each is CSV (or TSV by extension), UTF-8, with a header row naming its columns
 * (case-insensitive; the alternatives in brackets are accepted too):
 *
 *   localities.csv        province [provincia, cpa_letra, letra, letter], city [localidad, locality,
 *                         nombre, name], postal_code [cp, codigo_postal]; optional aliases ("|"-separated)
 *   first_names.csv       name [nombre], and gender [genero, sexo] (M/F/U, male/female,
 *                         masculino/femenino) or male_share [p_male] (≥ 0.9 M, ≤ 0.1 F, else U)
 *   province_aliases.csv  alias [alias_normalizado], province [cpa_letra, letters, letra]
 *   postal_codes.csv      postal_code [cp], province [letters, cpa_letra, letra]
 *
 * A province cell is CPA letters ("X", or "BC" for a reading plus compatible ones) or any name
 * the alias table reads. Localities also refine the postal lookup: each 4-digit code they use maps
 * to its provinces, most localities first (postal_codes.csv overrides that). Loaded rows win over
 * shipped ones; unusable rows are skipped and counted in `source`.
 */
import fs from 'node:fs'
import path from 'node:path'
import { isProvinceLetter, type ProvinceLetter } from './reference/jurisdictions.ts'
import { buildIndex, cityKey, defaultTables, ReferenceDataError, type Gender, type LocalityRecord, type ReferenceData, type ReferenceTables } from './reference.ts'
import { readProvince } from './location.ts'
import { titleCase } from './text.ts'

export interface LoadedFile {
  file: string
  rows: number
  skipped: number
}

export interface LoadedReference extends ReferenceData {
  source: { dir: string; files: LoadedFile[] }
}

const KINDS = ['localities', 'first_names', 'province_aliases', 'postal_codes'] as const
type Kind = (typeof KINDS)[number]

const COLUMNS = {
  province: ['cpa_letra', 'letra', 'letter', 'letters', 'province', 'provincia'],
  city: ['city', 'localidad', 'locality', 'nombre', 'name'],
  postal: ['postal_code', 'cp', 'codigo_postal'],
  aliases: ['aliases'],
  name: ['name', 'nombre'],
  gender: ['gender', 'genero', 'sexo'],
  share: ['male_share', 'p_male'],
  alias: ['alias', 'alias_normalizado'],
}

export function loadReferenceDirectory(dir: string): LoadedReference {
  let entries: string[]
  try {
    entries = fs.readdirSync(dir)
  } catch (e) {
    throw new ReferenceDataError(`reference directory ${dir}: ${(e as Error).message}`)
  }
  const base = defaultTables()
  const t: { -readonly [K in keyof ReferenceTables]: ReferenceTables[K] } = { ...base }
  const files: LoadedFile[] = []
  // Aliases first: later files may name provinces with them.
  for (const kind of ['province_aliases', 'localities', 'first_names', 'postal_codes'] as Kind[]) {
    const name = entries.find((e) => e === `${kind}.csv` || e === `${kind}.tsv`)
    if (!name) continue
    const file = path.join(dir, name)
    const table = readTable(file)
    const loaded: LoadedFile = { file, rows: table.rows.length, skipped: 0 }
    files.push(loaded)
    const provinces = buildIndex({ ...t, localities: [], firstNames: [] }).provinces
    const letters = (cell: string): string | null => {
      const up = cell.trim().toUpperCase()
      if (/^[A-Z]{1,24}$/.test(up) && [...up].every(isProvinceLetter) && new Set(up).size === up.length) return up
      return readProvince(provinces, cell)?.letters ?? null
    }
    if (kind === 'province_aliases') {
      const [a, p] = table.columns(file, COLUMNS.alias, COLUMNS.province)
      const rows: [string, string][] = []
      for (const r of table.rows) {
        const l = letters(r[p] ?? '')
        if (!r[a]?.trim() || l === null) loaded.skipped++
        else rows.push([r[a]!, l])
      }
      t.provinceAliases = [...t.provinceAliases, ...rows]
    } else if (kind === 'localities') {
      const [p, c, z] = table.columns(file, COLUMNS.province, COLUMNS.city, COLUMNS.postal)
      const aliasCol = table.optional(COLUMNS.aliases)
      const merged = new Map<string, LocalityRecord & { postal: [number, number][] }>()
      for (const loc of t.localities) merged.set(`${loc.letter}|${cityKey(loc.name)}`, { ...loc, postal: [...loc.postal.map(([a, b]) => [a, b] as [number, number])] })
      const perCode = new Map<number, Map<string, number>>()
      for (const r of table.rows) {
        const l = letters(r[p] ?? '')?.[0] as ProvinceLetter | undefined
        const city = r[c]?.trim() ?? ''
        const cp = /^\d{4}$/.test(r[z]?.trim() ?? '') ? Number(r[z]!.trim()) : null
        if (!l || city === '' || cp === null) {
          loaded.skipped++
          continue
        }
        const counts = perCode.get(cp) ?? new Map<string, number>()
        counts.set(l, (counts.get(l) ?? 0) + 1)
        perCode.set(cp, counts)
        const key = `${l}|${cityKey(city)}`
        const aliases = aliasCol === null ? [] : (r[aliasCol] ?? '').split('|').map((s) => s.trim()).filter(Boolean)
        const known = merged.get(key)
        if (known) {
          if (!known.postal.some(([a, b]) => cp >= a && cp <= b)) known.postal.push([cp, cp])
          if (aliases.length) known.aliases = [...known.aliases, ...aliases]
        } else {
          merged.set(key, { name: city === city.toUpperCase() ? titleCase(city) : city, letter: l, postal: [[cp, cp]], aliases, main: false })
        }
      }
      t.localities = [...merged.values()]
      const derived: [number, string][] = []
      for (const [cp, counts] of perCode) derived.push([cp, [...counts].sort((a, b) => b[1] - a[1]).map(([l]) => l).join('')])
      t.postalCodes = [...t.postalCodes, ...derived]
    } else if (kind === 'first_names') {
      const n = table.columns(file, COLUMNS.name)[0]
      const g = table.optional(COLUMNS.gender)
      const s = table.optional(COLUMNS.share)
      if (g === null && s === null) throw new ReferenceDataError(`${file}: needs a gender or a male_share column`)
      const rows: [string, Gender][] = []
      for (const r of table.rows) {
        const gender = g !== null ? genderCell(r[g] ?? '') : shareCell(r[s!] ?? '')
        if (!r[n]?.trim() || gender === null) loaded.skipped++
        else rows.push([r[n]!, gender])
      }
      t.firstNames = [...t.firstNames, ...rows]
    } else {
      const [z, p] = table.columns(file, COLUMNS.postal, COLUMNS.province)
      const rows: [number, string][] = []
      for (const r of table.rows) {
        const l = letters(r[p] ?? '')
        const cp = r[z]?.trim() ?? ''
        if (l === null || !/^\d{4}$/.test(cp)) loaded.skipped++
        else rows.push([Number(cp), l])
      }
      t.postalCodes = [...t.postalCodes, ...rows]
    }
  }
  if (files.length === 0) throw new ReferenceDataError(`reference directory ${dir} holds none of ${KINDS.map((k) => `${k}.csv`).join(', ')}`)
  return { tables: t, index: buildIndex(t), source: { dir, files } }
}

function genderCell(v: string): Gender | null {
  const s = v.trim().toLowerCase()
  if (s === 'm' || s === 'male' || s === 'masculino' || s === 'h') return 'M'
  if (s === 'f' || s === 'female' || s === 'femenino') return 'F'
  if (s === 'u' || s === 'a' || s === 'unisex' || s === 'ambiguous') return 'U'
  return null
}

function shareCell(v: string): Gender | null {
  const p = Number(v)
  if (v.trim() === '' || !Number.isFinite(p) || p < 0 || p > 1) return null
  return p >= 0.9 ? 'M' : p <= 0.1 ? 'F' : 'U'
}

interface Table {
  rows: string[][]
  /** Indexes of required columns, each found by any of its names; throws naming the file. */
  columns<T extends string[][]>(file: string, ...wanted: T): { [K in keyof T]: number }
  optional(names: string[]): number | null
}

function readTable(file: string): Table {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (e) {
    throw new ReferenceDataError(`${file}: ${(e as Error).message}`)
  }
  const all = parseDelimited(text, file.endsWith('.tsv') ? '\t' : ',')
  const header = (all[0] ?? []).map((h) => h.trim().toLowerCase())
  const optional = (names: string[]) => {
    for (const n of names) {
      const i = header.indexOf(n)
      if (i >= 0) return i
    }
    return null
  }
  return {
    rows: all.slice(1),
    optional,
    columns<T extends string[][]>(f: string, ...wanted: T) {
      return wanted.map((names) => {
        const i = optional(names)
        if (i === null) throw new ReferenceDataError(`${f}: no column named ${names.join(' or ')}`)
        return i
      }) as { [K in keyof T]: number }
    },
  }
}

/** RFC 4180 rows: quoted fields may hold the delimiter, doubled quotes and line breaks. */
export function parseDelimited(text: string, delimiter: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let field = ''
  let quoted = false
  const s = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!
    if (quoted) {
      if (ch !== '"') field += ch
      else if (s[i + 1] === '"') {
        field += '"'
        i++
      } else quoted = false
    } else if (ch === '"' && field === '') quoted = true
    else if (ch === delimiter) {
      row.push(field)
      field = ''
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && s[i + 1] === '\n') i++
      row.push(field)
      if (row.length > 1 || row[0] !== '') rows.push(row)
      row = []
      field = ''
    } else field += ch
  }
  row.push(field)
  if (row.length > 1 || row[0] !== '') rows.push(row)
  return rows
}
