/** Reading export files back in tests. */
import ExcelJS from 'exceljs'

/** Strict RFC 4180 parser: CRLF records, quoted fields with doubled quotes; throws on anything else. */
export function parseCsv(text: string): string[][] {
  const records: string[][] = []
  let i = 0
  let field = ''
  let record: string[] = []
  while (i < text.length) {
    if (text[i] === '"') {
      i++
      for (;;) {
        if (i >= text.length) throw new Error('unterminated quoted field')
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"'
            i += 2
          } else {
            i++
            break
          }
        } else field += text[i++]
      }
      if (i < text.length && text[i] !== ',' && text[i] !== '\r') throw new Error(`garbage after a quoted field at ${i}`)
    } else {
      while (i < text.length && text[i] !== ',' && text[i] !== '\r') {
        if (text[i] === '"' || text[i] === '\n') throw new Error(`bare ${JSON.stringify(text[i])} in an unquoted field at ${i}`)
        field += text[i++]
      }
    }
    if (text[i] === ',') {
      record.push(field)
      field = ''
      i++
    } else if (text[i] === '\r') {
      if (text[i + 1] !== '\n') throw new Error(`CR without LF at ${i}`)
      record.push(field)
      records.push(record)
      field = ''
      record = []
      i += 2
    } else if (i >= text.length) {
      throw new Error('last record does not end with CRLF')
    }
  }
  return records
}

/** A row read back from an export: an object keyed by column name. */
export type FileRow = Record<string, string | number | boolean | null>

/** How an export file is laid out: one table, or several told apart by `tableColumn` (services/api/analytics/exports.ts). */
export interface FileLayout {
  /** The table names in file order (one for a single-table export). */
  tables: string[]
  tableColumn?: string
}

/**
 * The tables of a downloaded export, read back from its format: JSON as it is; CSV (strict RFC
 * 4180 after the BOM) into objects of strings, a file of several tables split by its table
 * column with each row keeping only its own table's columns (`columns`), the others having to be
 * empty; xlsx with exceljs, a sheet per table (or the one sheet), typed cells, empty ones null.
 * Also returns each table's column names in file order.
 */
export async function readTables(format: 'csv' | 'excel' | 'json', body: unknown, layout: FileLayout, columns: Record<string, string[]> = {}): Promise<{ rows: Record<string, FileRow[]>; headers: Record<string, string[]>; sheets?: string[] }> {
  const several = layout.tableColumn !== undefined
  if (format === 'json') {
    const rows = (several ? body : { [layout.tables[0]!]: body }) as Record<string, FileRow[]>
    return { rows, headers: Object.fromEntries(Object.entries(rows).map(([t, r]) => [t, Object.keys(r[0] ?? {})])) }
  }
  if (format === 'csv') {
    const text = body as string
    if (!text.startsWith('\uFEFF')) throw new Error('a CSV export starts with a byte order mark')
    const [header, ...records] = parseCsv(text.slice(1))
    if (!several) return { rows: { [layout.tables[0]!]: records.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!]))) }, headers: { [layout.tables[0]!]: header! } }
    if (header![0] !== layout.tableColumn) throw new Error(`the first column is ${header![0]}, not ${layout.tableColumn}`)
    const rows: Record<string, FileRow[]> = Object.fromEntries(layout.tables.map((t) => [t, []]))
    for (const r of records) {
      const own = columns[r[0]!]
      if (!own || !rows[r[0]!]) throw new Error(`a row of an unknown table ${r[0]}`)
      const row: FileRow = {}
      header!.forEach((h, i) => {
        if (i === 0) return
        if (own.includes(h)) row[h] = r[i]!
        else if (r[i] !== '') throw new Error(`${r[0]}: column ${h} (not one of its own) holds ${r[i]}`)
      })
      rows[r[0]!]!.push(row)
    }
    return { rows, headers: Object.fromEntries(layout.tables.map((t) => [t, header!.filter((h) => columns[t]?.includes(h))])) }
  }
  const wb = new ExcelJS.Workbook()
  await wb.xlsx.load(body as unknown as ExcelJS.Buffer)
  const rows: Record<string, FileRow[]> = {}
  const headers: Record<string, string[]> = {}
  wb.worksheets.forEach((ws, s) => {
    const name = several ? ws.name : layout.tables[s]!
    const head = (ws.getRow(1).values as unknown[]).slice(1) as string[]
    headers[name] = head
    rows[name] = []
    for (let i = 2; i <= ws.rowCount; i++) {
      const r = ws.getRow(i)
      rows[name]!.push(Object.fromEntries(head.map((h, c) => [h, (r.getCell(c + 1).value ?? null) as FileRow[string]])))
    }
  })
  return { rows, headers, sheets: wb.worksheets.map((ws) => ws.name) }
}

/** A value as a CSV export writes it, read back by parseCsv (text that would start a formula aside). */
export const csvText = (v: FileRow[string]): string => (v === null ? '' : String(v))
