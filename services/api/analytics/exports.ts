import type { Response } from 'express'
import type { ExportCell, ExportColumn, ExportTable } from './endpoint.ts'
import { XlsxWriter } from './xlsx-writer.ts'

/** Spec "Limits": at most 50,000 rows per export. */
export const EXPORT_ROW_LIMIT = 50_000

export type ExportFormat = 'csv' | 'excel' | 'json'

type Cell = ExportCell

export const EXPORT_FORMATS: Record<ExportFormat, { ext: string; contentType: string }> = {
  csv: { ext: 'csv', contentType: 'text/csv; charset=utf-8' },
  excel: { ext: 'xlsx', contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' },
  json: { ext: 'json', contentType: 'application/json; charset=utf-8' },
}

/** An endpoint's export file name before `-<tenant>.<ext>`: its path after `/analytics/` (or the API version), `/` as `-` (`segments-performance`). */
export const exportName = (path: string) => path.replace(/^\/api\/(v2\/cdp|cdp\/v2)\/(analytics\/)?/, '').replaceAll('/', '-')

/** Output is written in chunks of about this size (CSV and JSON), not row by row. */
const CHUNK_BYTES = 64 * 1024

/** Streams one table of rows as a download (sendTables with that table). */
export async function sendExport<R>(res: Response, format: ExportFormat, filename: string, columns: ExportColumn<R>[], rows: AsyncIterable<R> | R[]): Promise<void> {
  return sendTables(res, format, filename, [{ name: filename, columns, rows }])
}

/**
 * Streams tables as a download: CSV (RFC 4180), xlsx or JSON.
 *
 * - Nothing is built in memory as a whole: rows are pulled from each table's `rows` one at a time
 *   and written in ~64 KiB chunks, waiting for `drain` when the client reads slower than we produce.
 * - The first row is pulled before any header is sent, so a query that fails straight away still
 *   becomes the common error body (the promise rejects, the router passes it on). A failure after
 *   the first bytes cannot change the status any more: the response is destroyed (the client
 *   sees a truncated transfer, never a file that looks complete) and the error is logged; the
 *   promise then resolves.
 * - A client that disconnects stops the iteration (the row source's `return()` runs).
 *
 * One table (no `tableColumn`): CSV is a header row and the rows; JSON an array of objects keyed
 * by column header; xlsx one sheet named after the file. Several tables (`tableColumn` given):
 * CSV is still one table, whose first column (`tableColumn`) names each row's table, followed by
 * the union of the tables' columns in order of first appearance (a row leaves the columns of the
 * other tables empty), so any CSV reader and a spreadsheet's filter take it as it is; JSON is an
 * object holding each table's array under its name; xlsx has a sheet per table, named after it.
 * Every table is there, with its header, even without rows.
 *
 * CSV: RFC 4180 — header row, CRLF line ends, fields containing `,` `"` CR or LF are quoted with
 * `"` doubled. UTF-8 with a byte order mark, because Excel reads a CSV without a BOM in the
 * machine's legacy code page and turns "José" into "JosÃ©". null is an empty field, booleans
 * are `true`/`false`. Formula injection (CWE-1236): a text cell beginning with `=`, `+`, `-`,
 * `@`, TAB or CR would be run as a formula by spreadsheet programs, so it gets a leading `'`
 * (OWASP's advice); numbers are written as numbers and never prefixed, so -12.5 stays -12.5.
 *
 * Excel: bold frozen header row on each sheet; numbers and booleans are typed cells, text is a
 * string cell (never a formula, so no prefix is needed and values stay exact, except that line
 * breaks are LF and characters XML cannot hold are dropped), null an empty cell.
 *
 * JSON: values as they are (null stays null, non-finite numbers become null).
 */
export async function sendTables(res: Response, format: ExportFormat, filename: string, tables: ExportTable[], tableColumn?: string): Promise<void> {
  if (tableColumn === undefined && tables.length !== 1) throw new Error(`${filename}: ${tables.length} tables need a table column`)
  const spec = EXPORT_FORMATS[format]
  const it = cellsOf(tables)
  let first: IteratorResult<TableRow>
  try {
    first = await it.next()
  } catch (err) {
    await closeQuietly(it)
    throw err
  }

  res.status(200)
  res.set('Content-Type', spec.contentType)
  res.set('Content-Disposition', contentDisposition(`${filename}.${spec.ext}`))
  res.set('Cache-Control', 'no-store')
  res.set('X-Content-Type-Options', 'nosniff')

  let count = 0
  try {
    const several = tableColumn !== undefined
    const sink =
      format === 'excel' ? xlsxSink(res, filename, tables, several) : format === 'csv' ? csvSink(new ChunkWriter(res), tables, tableColumn) : jsonSink(new ChunkWriter(res), tables, several)
    let table = -1
    for (let r = first; !r.done; r = await it.next()) {
      if (res.destroyed) break
      const [t, values] = r.value
      while (table < t) sink.table(++table)
      await sink.row(t, values)
      count++
    }
    if (!res.destroyed) {
      while (table < tables.length - 1) sink.table(++table)
      await sink.end() // ends the response
    }
  } catch (err) {
    await closeQuietly(it)
    if (!res.headersSent && format !== 'excel') {
      // Nothing left the server yet (the first row failed; the xlsx zip is already piped, so not
      // for excel): let the router answer with an error body.
      for (const h of ['Content-Type', 'Content-Disposition', 'Cache-Control', 'X-Content-Type-Options']) res.removeHeader(h)
      throw err
    }
    res.req?.log?.error({ err, format, filename, rowsWritten: count }, 'export failed after the response started; connection dropped')
    res.destroy(err instanceof Error ? err : new Error(String(err)))
    return
  }
  if (res.destroyed && !res.writableFinished) {
    await closeQuietly(it)
    res.req?.log?.warn({ format, filename, rowsWritten: count }, 'export aborted: the client went away')
  }
}

/** A row of a file: the index of its table and its cells. */
type TableRow = [table: number, cells: Cell[]]

/** The rows of every table in turn, as cells (closing it closes the table being read). */
async function* cellsOf(tables: ExportTable[]): AsyncGenerator<TableRow> {
  for (const [t, { columns, rows }] of tables.entries()) {
    for await (const row of rows) yield [t, columns.map((c) => c.value(row))]
  }
}

/** Writes one format: `table(t)` before table t's rows (every table gets one), then its rows, then `end()`. */
interface Sink {
  table(t: number): void
  row(t: number, values: Cell[]): Promise<void> | undefined
  end(): Promise<void>
}

function csvSink(out: ChunkWriter, tables: ExportTable[], tableColumn: string | undefined): Sink {
  const end = () => out.flush().then(() => void out.res.end())
  if (tableColumn === undefined) {
    out.push('\uFEFF' + csvLine(tables[0]!.columns.map((c) => c.header)))
    return { table: () => undefined, row: (_t, values) => out.push(csvLine(values)), end }
  }
  // The union of the tables' columns; each table's cells go to their column's place.
  const union: string[] = []
  const places = tables.map((t) =>
    t.columns.map((c) => {
      const i = union.indexOf(c.header)
      return 1 + (i >= 0 ? i : union.push(c.header) - 1)
    }),
  )
  out.push('\uFEFF' + csvLine([tableColumn, ...union]))
  return {
    table: () => undefined,
    row(t, values) {
      const line: Cell[] = new Array(union.length + 1).fill(null)
      line[0] = tables[t]!.name
      places[t]!.forEach((p, i) => (line[p] = values[i] ?? null))
      return out.push(csvLine(line))
    },
    end,
  }
}

function jsonSink(out: ChunkWriter, tables: ExportTable[], several: boolean): Sink {
  const headers = tables.map((t) => t.columns.map((c) => c.header))
  let rows = 0
  const close = () => (rows ? '\n]' : ']')
  out.push(several ? '{' : '[')
  return {
    table(t) {
      if (!several) return
      out.push(`${t ? `${close()},` : ''}\n${JSON.stringify(tables[t]!.name)}: [`)
      rows = 0
    },
    row(t, values) {
      const obj: Record<string, Cell> = {}
      headers[t]!.forEach((h, i) => (obj[h] = values[i] ?? null))
      return out.push(`${rows++ ? ',' : ''}\n${JSON.stringify(obj)}`)
    },
    async end() {
      out.push(several ? `${tables.length ? close() : ''}\n}\n` : `${close()}\n`)
      await out.flush()
      out.res.end()
    },
  }
}

function xlsxSink(res: Response, filename: string, tables: ExportTable[], several: boolean): Sink {
  const names = several ? uniqueSheetNames(tables.map((t) => t.name)) : [sheetName(filename)]
  const xlsx = new XlsxWriter(res, tables.map((t, i) => ({ name: names[i]!, headers: t.columns.map((c) => xmlSafe(c.header)) })))
  return {
    table() {
      xlsx.startSheet()
    },
    row(_t, values) {
      return xlsx.row(values.map((v) => (typeof v === 'string' ? xmlSafe(v) : v)))
    },
    async end() {
      await xlsx.end() // ends the response once the zip is complete
    },
  }
}

/** Buffers output and writes it in chunks, waiting for `drain` when the socket is full. */
class ChunkWriter {
  private buf: string[] = []
  private size = 0
  constructor(readonly res: Response) {}

  push(s: string): Promise<void> | undefined {
    this.buf.push(s)
    this.size += s.length
    return this.size >= CHUNK_BYTES ? this.flush() : undefined
  }

  async flush(): Promise<void> {
    if (!this.buf.length) return
    const chunk = this.buf.join('')
    this.buf = []
    this.size = 0
    if (this.res.destroyed) return
    if (!this.res.write(chunk, 'utf8')) await drained(this.res)
  }
}

/** Resolves on `drain`, or when the response closes or fails (so a gone client never hangs us). */
function drained(res: Response): Promise<void> {
  if (res.destroyed) return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done)
      res.off('close', done)
      res.off('error', done)
      resolve()
    }
    res.on('drain', done)
    res.on('close', done)
    res.on('error', done)
  })
}

async function closeQuietly<R>(it: AsyncIterator<R>): Promise<void> {
  try {
    await it.return?.()
  } catch {
    // the source failed already or cannot be closed; nothing more to do
  }
}

const NEEDS_QUOTES = /[",\r\n]/
/** Leading characters spreadsheet programs treat as the start of a formula (OWASP CSV injection). */
const FORMULA_START = /^[=+\-@\t\r]/

/** One CSV field (RFC 4180); text that would be read as a formula is prefixed with `'`. */
export function csvField(v: Cell | undefined): string {
  if (v === null || v === undefined) return ''
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : ''
  if (typeof v === 'boolean') return v ? 'true' : 'false'
  const s = FORMULA_START.test(v) ? `'${v}` : v
  return NEEDS_QUOTES.test(s) ? `"${s.replaceAll('"', '""')}"` : s
}

function csvLine(values: readonly (Cell | undefined)[]): string {
  return values.map(csvField).join(',') + '\r\n'
}

/** `attachment; filename="…"` with an ASCII-only fallback name and RFC 5987 `filename*` for the rest. */
function contentDisposition(name: string): string {
  const ascii = name.replace(/[^A-Za-z0-9._-]/g, '_')
  return ascii === name ? `attachment; filename="${name}"` : `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`
}

/** Excel sheet names: at most 31 characters, none of []:*?/\ . */
function sheetName(name: string): string {
  return name.replace(/[[\]:*?/\\]/g, '_').slice(0, 31) || 'export'
}

/** Sheet names for tables, made unique (Excel compares them case-insensitively) with a `_2`, `_3`… suffix. */
function uniqueSheetNames(names: string[]): string[] {
  const seen = new Set<string>()
  return names.map((n) => {
    const base = sheetName(n)
    let name = base
    for (let i = 2; seen.has(name.toLowerCase()); i++) name = `${base.slice(0, 31 - `_${i}`.length)}_${i}`
    seen.add(name.toLowerCase())
    return name
  })
}

/**
 * Characters XML 1.0 cannot carry (C0 controls except TAB, LF, CR) would make the xlsx unreadable,
 * so they are dropped. Line breaks become LF: XML parsers turn CR LF into LF anyway, and LF is
 * what Excel uses for a line break inside a cell.
 */
// eslint-disable-next-line no-control-regex
const XML_INVALID = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g
function xmlSafe(s: string): string {
  return s.replace(XML_INVALID, '').replace(/\r\n?/g, '\n')
}
