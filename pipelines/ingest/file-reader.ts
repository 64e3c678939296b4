/**
 * Streaming readers for import files (.jsonl / .ndjson / .csv). Memory stays bounded whatever the
 * file size: data is read in stream chunks and only the current line / row is buffered (capped).
 *
 * Problems with one record (bad JSON, a row whose field count differs from the header's) are
 * yielded as { line, raw, error } items so the importer can report them and go on. Problems with
 * the file itself (unsupported extension, unreadable file, a CSV quote that never closes,
 * duplicate CSV headers) throw, because nothing after them can be trusted.
 *
 * Every item carries `raw`, the record as the file has it (the JSONL line, the CSV row with its
 * quoting), so a reject can be reported and fixed at its source.
 */
import { createReadStream } from 'node:fs'
import { open, stat } from 'node:fs/promises'
import { extname } from 'node:path'
import { CsvError, CsvParser, type CsvRow } from './csv.ts'

/** Why one record could not be read; the shape of a validation FieldError. */
export interface RecordError {
  /** The column at fault, or "" for the record as a whole. */
  path: string
  /** invalid_json, not_an_object, line_too_long, wrong_field_count. */
  code: string
  message: string
}

export type ReadItem =
  | { line: number; raw: string; record: Record<string, unknown> }
  /** raw is null only for a line too long to keep. */
  | { line: number; raw: string | null; error: RecordError }

export interface ReadOptions {
  /** CSV delimiter; default ','. */
  delimiter?: string
  /** CSV columns whose value is JSON (arrays of items, source ids); default items, source_ids. */
  jsonColumns?: readonly string[]
  /** Longest accepted line (JSONL, bytes) or row (CSV, characters); default 4 MiB. */
  maxLineLength?: number
}

export type ImportFormat = 'jsonl' | 'csv'

/** CSV columns whose value is JSON, by our field names. */
export const DEFAULT_JSON_COLUMNS = ['items', 'source_ids'] as const
const DEFAULT_MAX_LINE = 4 * 1024 * 1024

/** Format from the file extension; throws for anything else. */
export function importFormat(path: string): ImportFormat {
  const ext = extname(path).toLowerCase()
  if (ext === '.jsonl' || ext === '.ndjson') return 'jsonl'
  if (ext === '.csv') return 'csv'
  throw new Error(`unsupported import file "${path}": expected a .jsonl, .ndjson or .csv file, got "${ext || '(no extension)'}"`)
}

/**
 * Records of an import file in order, each with its 1-based line number. Throws synchronously for
 * an unsupported extension (before any reading starts).
 */
export function readRecords(path: string, opts: ReadOptions = {}): AsyncGenerator<ReadItem> {
  return importFormat(path) === 'csv' ? readCsv(path, opts) : readJsonl(path, opts)
}

async function* readJsonl(path: string, opts: ReadOptions): AsyncGenerator<ReadItem> {
  const max = opts.maxLineLength ?? DEFAULT_MAX_LINE
  let line = 0
  for await (const text of splitLines(createReadStream(path), max)) {
    line++
    if (text === null) {
      yield { line, raw: null, error: { path: '', code: 'line_too_long', message: `line longer than ${max} bytes` } }
      continue
    }
    let s = text.endsWith('\r') ? text.slice(0, -1) : text
    if (line === 1 && s.charCodeAt(0) === 0xfeff) s = s.slice(1)
    if (s.trim() === '') continue
    let value: unknown
    try {
      value = JSON.parse(s)
    } catch (err) {
      yield { line, raw: s, error: { path: '', code: 'invalid_json', message: `invalid JSON: ${(err as Error).message}` } }
      continue
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      const got = Array.isArray(value) ? 'an array' : JSON.stringify(value)
      yield { line, raw: s, error: { path: '', code: 'not_an_object', message: `expected a JSON object, got ${got}` } }
      continue
    }
    yield { line, raw: s, record: value as Record<string, unknown> }
  }
}

/**
 * Splits a byte stream on LF. Splitting bytes (not text) is safe for UTF-8, where 0x0A never
 * occurs inside a multi-byte character. Yields null for a line over `max` bytes, whose bytes are
 * dropped as they arrive rather than buffered.
 */
async function* splitLines(stream: AsyncIterable<Buffer>, max: number): AsyncGenerator<string | null> {
  let parts: Buffer[] = []
  let size = 0
  let tooLong = false
  for await (const chunk of stream) {
    let start = 0
    for (;;) {
      const nl = chunk.indexOf(10, start)
      const end = nl === -1 ? chunk.length : nl
      if (!tooLong) {
        if (size + end - start > max) {
          tooLong = true
          parts = []
        } else if (end > start) {
          parts.push(chunk.subarray(start, end))
          size += end - start
        }
      }
      if (nl === -1) break
      yield tooLong ? null : Buffer.concat(parts, size).toString('utf8')
      parts = []
      size = 0
      tooLong = false
      start = nl + 1
    }
  }
  if (tooLong) yield null
  else if (size > 0) yield Buffer.concat(parts, size).toString('utf8')
}

async function* readCsv(path: string, opts: ReadOptions): AsyncGenerator<ReadItem> {
  const parser = new CsvParser({ delimiter: opts.delimiter, maxRowLength: opts.maxLineLength ?? DEFAULT_MAX_LINE })
  const jsonColumns = new Set(opts.jsonColumns ?? DEFAULT_JSON_COLUMNS)
  let header: (string | null)[] | undefined
  const convert = (row: CsvRow): ReadItem | undefined => {
    if (!header) {
      header = csvHeader(row, path)
      return undefined
    }
    return csvRecord(row, header, jsonColumns)
  }
  try {
    // encoding: node's StringDecoder keeps multi-byte characters split across chunks intact.
    for await (const chunk of createReadStream(path, { encoding: 'utf8' })) {
      for (const row of parser.push(chunk as string)) {
        const item = convert(row)
        if (item) yield item
      }
    }
    for (const row of parser.end()) {
      const item = convert(row)
      if (item) yield item
    }
  } catch (err) {
    if (err instanceof CsvError) throw new Error(`${path}: ${err.message}`, { cause: err })
    throw err
  }
}

/** Trimmed column names; empty names mark columns to ignore. */
function csvHeader(row: CsvRow, path: string): (string | null)[] {
  const names = row.fields.map((f) => f.trim() || null)
  const seen = new Set<string>()
  for (const name of names) {
    if (name === null) continue
    if (seen.has(name)) throw new Error(`${path}: line ${row.line}: duplicate column "${name}" in the header`)
    seen.add(name)
  }
  return names
}

function csvRecord(row: CsvRow, header: readonly (string | null)[], jsonColumns: ReadonlySet<string>): ReadItem {
  // Strict both ways: a short row or a stray delimiter usually means a value slid into the
  // wrong column (an unquoted comma in a name), which would import wrong data without a sound.
  if (row.fields.length !== header.length) {
    const message = `row has ${row.fields.length} field${row.fields.length === 1 ? '' : 's'}, header has ${header.length}`
    return { line: row.line, raw: row.raw, error: { path: '', code: 'wrong_field_count', message } }
  }
  const entries: [string, unknown][] = []
  for (const [i, value] of row.fields.entries()) {
    const name = header[i]
    if (name == null || value === '') continue // empty field = absent
    if (jsonColumns.has(name)) {
      try {
        entries.push([name, JSON.parse(value)])
      } catch (err) {
        return { line: row.line, raw: row.raw, error: { path: name, code: 'invalid_json', message: `column "${name}": invalid JSON: ${(err as Error).message}` } }
      }
    } else {
      entries.push([name, value])
    }
  }
  // fromEntries defines own properties, so a column named "__proto__" cannot touch the prototype.
  return { line: row.line, raw: row.raw, record: Object.fromEntries(entries) }
}

/**
 * The file's column names: a CSV's header (empty names left out), or the keys of the first
 * `sample` JSONL records in first-seen order (JSONL records need not all have the same keys).
 */
export async function readColumns(path: string, opts: ReadOptions & { sample?: number } = {}): Promise<string[]> {
  if (importFormat(path) === 'csv') {
    const parser = new CsvParser({ delimiter: opts.delimiter, maxRowLength: opts.maxLineLength ?? DEFAULT_MAX_LINE })
    const stream = createReadStream(path, { encoding: 'utf8' })
    try {
      let first: CsvRow | undefined
      for await (const chunk of stream) {
        first = parser.push(chunk as string)[0]
        if (first) break
      }
      first ??= parser.end()[0]
      return first ? (csvHeader(first, path).filter((n) => n !== null) as string[]) : []
    } catch (err) {
      if (err instanceof CsvError) throw new Error(`${path}: ${err.message}`, { cause: err })
      throw err
    } finally {
      stream.destroy()
    }
  }
  const keys = new Set<string>()
  let n = 0
  for await (const item of readRecords(path, opts)) {
    if (!('record' in item)) continue
    for (const k of Object.keys(item.record)) keys.add(k)
    if (++n >= (opts.sample ?? 1000)) break
  }
  return [...keys]
}

/** Exact number of lines (LF count, plus an unterminated last line): one fast pass over the bytes. */
export async function countLines(path: string): Promise<number> {
  let count = 0
  let last = 10
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) count++
    if (chunk.length > 0) last = chunk[chunk.length - 1]!
  }
  return last === 10 ? count : count + 1
}

/**
 * Approximate line count from the file size and the average line length of the first
 * `sampleBytes`; instant even for multi-GB files. Exact when the file fits in the sample.
 */
export async function estimateLineCount(path: string, sampleBytes = 1024 * 1024): Promise<number> {
  const { size } = await stat(path)
  if (size <= sampleBytes) return countLines(path)
  const fh = await open(path, 'r')
  try {
    const buf = Buffer.alloc(sampleBytes)
    const { bytesRead } = await fh.read(buf, 0, sampleBytes, 0)
    let lines = 0
    for (let i = buf.indexOf(10); i !== -1 && i < bytesRead; i = buf.indexOf(10, i + 1)) lines++
    return lines === 0 ? 1 : Math.round((size * lines) / bytesRead)
  } finally {
    await fh.close()
  }
}
