import type { Response } from 'express'
import ExcelJS from 'exceljs'
import type { ExportColumn } from './endpoint.ts'

/** Spec "Limits": at most 50,000 rows per export. */
export const EXPORT_ROW_LIMIT = 50_000

export type ExportFormat = 'csv' | 'excel' | 'json'

type Cell = string | number | boolean | null

const FORMATS: Record<ExportFormat, { ext: string; contentType: string }> = {
  csv: { ext: 'csv', contentType: 'text/csv; charset=utf-8' },
  excel: { ext: 'xlsx', contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' },
  json: { ext: 'json', contentType: 'application/json; charset=utf-8' },
}

/** Output is written in chunks of about this size (CSV and JSON), not row by row. */
const CHUNK_BYTES = 64 * 1024
/** xlsx: how often (in rows) the writer checks the socket for backpressure. */
const XLSX_DRAIN_EVERY = 500

/**
 * Streams rows as a download: CSV (RFC 4180), xlsx or a JSON array.
 *
 * - Nothing is built in memory as a whole: rows are pulled from `rows` one at a time and written
 *   in ~64 KiB chunks, waiting for `drain` when the client reads slower than we produce.
 * - The first row is pulled before any header is sent, so a query that fails straight away still
 *   becomes the common error body (the promise rejects, the router passes it on). A failure after
 *   the first bytes cannot change the status any more: the response is destroyed (the client
 *   sees a truncated transfer, never a file that looks complete) and the error is logged; the
 *   promise then resolves.
 * - A client that disconnects stops the iteration (the row source's `return()` runs).
 *
 * CSV: RFC 4180 — header row, CRLF line ends, fields containing `,` `"` CR or LF are quoted with
 * `"` doubled. UTF-8 with a byte order mark, because Excel reads a CSV without a BOM in the
 * machine's legacy code page and turns "José" into "JosÃ©". null is an empty field, booleans
 * are `true`/`false`. Formula injection (CWE-1236): a text cell beginning with `=`, `+`, `-`,
 * `@`, TAB or CR would be run as a formula by spreadsheet programs, so it gets a leading `'`
 * (OWASP's advice); numbers are written as numbers and never prefixed, so -12.5 stays -12.5.
 *
 * Excel: one sheet, bold frozen header row; numbers and booleans are typed cells, text is a string
 * cell (never a formula, so no prefix is needed and values stay exact, except that line breaks
 * are LF and characters XML cannot hold are dropped), null an empty cell.
 *
 * JSON: `[`, one object per row keyed by column header, `]`; values as they are (null stays null,
 * non-finite numbers become null).
 */
export async function sendExport<R>(res: Response, format: ExportFormat, filename: string, columns: ExportColumn<R>[], rows: AsyncIterable<R> | R[]): Promise<void> {
  const spec = FORMATS[format]
  const it = iterate(rows)
  let first: IteratorResult<R>
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

  const values = (row: R): Cell[] => columns.map((c) => c.value(row))
  let count = 0
  try {
    if (format === 'excel') {
      count = await writeXlsx(res, filename, columns, first, it, values)
    } else {
      const out = new ChunkWriter(res)
      if (format === 'csv') {
        out.push('\uFEFF' + csvLine(columns.map((c) => c.header)))
        for (let r = first; !r.done; r = await it.next()) {
          if (res.destroyed) break
          await out.push(csvLine(values(r.value)))
          count++
        }
      } else {
        const headers = columns.map((c) => c.header)
        out.push('[')
        for (let r = first; !r.done; r = await it.next()) {
          if (res.destroyed) break
          const v = values(r.value)
          const obj: Record<string, Cell> = {}
          headers.forEach((h, i) => (obj[h] = v[i] ?? null))
          await out.push(`${count ? ',' : ''}\n${JSON.stringify(obj)}`)
          count++
        }
        out.push(count ? '\n]\n' : ']\n')
      }
      if (!res.destroyed) {
        await out.flush()
        res.end()
      }
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

async function writeXlsx<R>(
  res: Response,
  filename: string,
  columns: ExportColumn<R>[],
  first: IteratorResult<R>,
  it: AsyncIterator<R>,
  values: (row: R) => Cell[],
): Promise<number> {
  const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: res, useStyles: true, useSharedStrings: false })
  const ws = wb.addWorksheet(sheetName(filename), { views: [{ state: 'frozen', ySplit: 1 }] })
  ws.columns = columns.map((c) => ({ key: c.header, width: Math.min(50, Math.max(10, c.header.length + 2)) }))
  const header = ws.addRow(columns.map((c) => xmlSafe(c.header)))
  header.font = { bold: true }
  header.commit()
  let count = 0
  for (let r = first; !r.done; r = await it.next()) {
    if (res.destroyed) break
    ws.addRow(values(r.value).map((v) => (typeof v === 'string' ? xmlSafe(v) : typeof v === 'number' && !Number.isFinite(v) ? null : v))).commit()
    count++
    if (count % XLSX_DRAIN_EVERY === 0 && res.writableNeedDrain) await drained(res)
  }
  if (res.destroyed) return count
  ws.commit()
  await wb.commit() // ends the response once the zip is complete
  return count
}

/** Buffers output and writes it in chunks, waiting for `drain` when the socket is full. */
class ChunkWriter {
  private buf: string[] = []
  private size = 0
  constructor(private readonly res: Response) {}

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

function iterate<R>(rows: AsyncIterable<R> | R[]): AsyncIterator<R> {
  if (Array.isArray(rows)) {
    let i = 0
    return {
      next: async () => (i < rows.length ? { done: false, value: rows[i++] as R } : { done: true, value: undefined }),
    }
  }
  return rows[Symbol.asyncIterator]()
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
function sheetName(filename: string): string {
  return filename.replace(/[[\]:*?/\\]/g, '_').slice(0, 31) || 'export'
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
