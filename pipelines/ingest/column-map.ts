/**
 * Column mapping (`cdp import --columns ours=theirs,...`): a shop's export names its columns its
 * own way; the mapping renames them to our fields before validation. Parsing, checking a mapping
 * against a file's columns, and mapping a record; all but checkFileColumns are pure.
 */
import { DEFAULT_JSON_COLUMNS, importFormat, readColumns } from './file-reader.ts'
import { CUSTOMER_INPUT_FIELDS, ORDER_INPUT_FIELDS } from './validation.ts'
import type { IngestKind } from './publisher.ts'

/** Our field name → the file's column (CSV header name or JSONL key). */
export type ColumnMap = ReadonlyMap<string, string>

/** A mapping that cannot work with this file or these fields; the CLI reports it as a usage error. */
export class ColumnMapError extends Error {
  override name = 'ColumnMapError'
}

/** JSONL records whose keys stand for the file's columns (checked against --columns). */
export const JSONL_KEY_SAMPLE = 1000

/** Our field names a record of `kind` may carry (both kinds' without one). */
export function acceptedFields(kind: IngestKind | undefined): string[] {
  if (kind === 'orders') return [...ORDER_INPUT_FIELDS]
  if (kind === 'customers') return [...CUSTOMER_INPUT_FIELDS]
  return [...new Set([...ORDER_INPUT_FIELDS, ...CUSTOMER_INPUT_FIELDS])]
}

/**
 * Parses `ours=theirs` entries (each spec may hold several, comma-separated). `accepted` are our
 * field names. One of our fields may be mapped once; one column may feed several fields.
 */
export function parseColumnMap(specs: readonly string[], accepted: readonly string[], acceptedLabel = 'accepted'): Map<string, string> {
  const map = new Map<string, string>()
  for (const spec of specs) {
    for (const entry of spec.split(',')) {
      if (entry.trim() === '') continue
      const eq = entry.indexOf('=')
      const ours = eq === -1 ? '' : entry.slice(0, eq).trim()
      const theirs = eq === -1 ? '' : entry.slice(eq + 1).trim()
      if (!ours || !theirs) throw new ColumnMapError(`--columns: "${entry.trim()}" is not ours=theirs (e.g. order_id=InvoiceNo)`)
      if (!accepted.includes(ours)) {
        throw new ColumnMapError(`--columns: "${ours}" is not one of our fields; ${acceptedLabel}: ${accepted.join(', ')}`)
      }
      if (map.has(ours)) throw new ColumnMapError(`--columns: "${ours}" is mapped twice (to "${map.get(ours)}" and "${theirs}")`)
      map.set(ours, theirs)
    }
  }
  return map
}

export interface ColumnCheck {
  /** Mapped columns the file does not have. */
  missing: string[]
  /** The file's columns that are neither one of our fields nor mapped: ignored. */
  unknown: string[]
  /** The file's columns named like one of our fields that the mapping fills from another column: ignored. */
  shadowed: string[]
}

export function checkColumns(map: ColumnMap, fileColumns: readonly string[], accepted: readonly string[]): ColumnCheck {
  const have = new Set(fileColumns)
  const mappedFrom = new Set(map.values())
  const shadowed = fileColumns.filter((c) => map.has(c) && map.get(c) !== c)
  return {
    missing: [...mappedFrom].filter((c) => !have.has(c)),
    unknown: fileColumns.filter((c) => !accepted.includes(c) && !mappedFrom.has(c)),
    shadowed,
  }
}

/** For a column the file lacks: a column whose name differs only in case or spacing, if any. */
export function similarColumn(name: string, fileColumns: readonly string[]): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[\s_-]+/g, '')
  return fileColumns.find((c) => c !== name && norm(c) === norm(name))
}

const count = new Intl.NumberFormat('en-US')

/**
 * Checks a mapping against the file's columns (a CSV's header, the keys of the first
 * JSONL_KEY_SAMPLE JSONL records). A mapped column the file lacks is a ColumnMapError naming it
 * (and a near miss); the columns that will be ignored come back for the caller to warn about.
 * Errors reading the file itself (e.g. duplicate header names) are thrown as they are.
 */
export async function checkFileColumns(file: string, map: ColumnMap, accepted: readonly string[]): Promise<Omit<ColumnCheck, 'missing'> & { fileColumns: string[] }> {
  const jsonl = importFormat(file) === 'jsonl'
  const fileColumns = await readColumns(file, { sample: JSONL_KEY_SAMPLE })
  const check = checkColumns(map, fileColumns, accepted)
  if (check.missing.length > 0) {
    const where = jsonl ? `the keys of the first ${count.format(JSONL_KEY_SAMPLE)} records of ${file}` : `the header of ${file}`
    const hints = check.missing.map((c) => {
      const near = similarColumn(c, fileColumns)
      return near ? `"${c}" (did you mean "${near}"?)` : `"${c}"`
    })
    throw new ColumnMapError(`--columns names ${check.missing.length === 1 ? 'a column' : 'columns'} not in ${where}: ${hints.join(', ')}; it has: ${fileColumns.join(', ') || '(none)'}`)
  }
  return { fileColumns, unknown: check.unknown, shadowed: check.shadowed }
}

/** The CSV columns whose value is JSON (items, source_ids), under the names the file gives them. */
export function jsonColumns(map: ColumnMap): string[] {
  return DEFAULT_JSON_COLUMNS.map((f) => map.get(f) ?? f)
}

/**
 * The record with the mapping applied: each mapped field takes its column's value (absent when
 * the column is), a column named like a remapped field is dropped, every other key is kept
 * (validation ignores keys it does not know).
 */
export function mapColumns(record: Record<string, unknown>, map: ColumnMap): Record<string, unknown> {
  if (map.size === 0) return record
  const entries: [string, unknown][] = Object.entries(record).filter(([k]) => !map.has(k))
  for (const [ours, theirs] of map) {
    if (Object.hasOwn(record, theirs)) entries.push([ours, record[theirs]])
  }
  return Object.fromEntries(entries)
}
