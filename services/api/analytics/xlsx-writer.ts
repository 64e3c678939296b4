import { PassThrough, type Writable } from 'node:stream'
import archiver from 'archiver'
import type { ExportCell } from './endpoint.ts'

/**
 * A streamed xlsx workbook of plain tables (the exports, exports.ts): each sheet a bold frozen header
 * row and rows of typed cells (numbers, booleans, inline strings; null an empty cell). The sheet's
 * XML is written here as text and zipped by archiver as it comes, so a 50,000-row export of 22
 * columns takes about a third of a second beyond its rows. exceljs's streaming writer, used before,
 * builds a cell object, a style and an XML node per cell: 1.85 s for the same rows, past the spec's
 * 2 s export target (docs/analytics-performance.md, "Exports").
 *
 * The parts are those of a minimal SpreadsheetML package (ECMA-376 part 1): content types,
 * relationships, the workbook with its sheet names, one style sheet (a default and a bold font) and
 * the worksheets. Strings must already be free of characters XML cannot carry (exports.ts's xmlSafe).
 */
export class XlsxWriter {
  private readonly zip: archiver.Archiver
  private sheet: PassThrough | null = null
  private sheetIndex = -1
  private rowNumber = 0
  private chunk = ''
  private refs: string[] = []
  private failure: Error | null = null

  /** Starts the package on `out` (the sheets' names and headers are known up front: the parts that list them come first). */
  constructor(
    private readonly out: Writable,
    private readonly sheets: readonly { name: string; headers: readonly string[] }[],
  ) {
    // Level 1: deflating the sheets' XML at zlib's default level took longer than writing it.
    this.zip = archiver('zip', { zlib: { level: 1 } })
    this.zip.on('error', (err) => {
      this.failure = err
      out.destroy(err)
    })
    this.zip.pipe(out)
    const n = sheets.length
    const range = Array.from({ length: n }, (_, i) => i + 1)
    this.zip.append(
      `${XML_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>${range.map((i) => `<Override PartName="/xl/worksheets/sheet${i}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`).join('')}</Types>`,
      { name: '[Content_Types].xml' },
    )
    this.zip.append(`${XML_HEAD}<Relationships xmlns="${RELS}"><Relationship Id="rId1" Type="${DOC_RELS}/officeDocument" Target="xl/workbook.xml"/></Relationships>`, { name: '_rels/.rels' })
    this.zip.append(
      `${XML_HEAD}<workbook xmlns="${MAIN}" xmlns:r="${DOC_RELS}"><bookViews><workbookView/></bookViews><sheets>${sheets.map((s, i) => `<sheet name="${escapeXml(s.name)}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`).join('')}</sheets></workbook>`,
      { name: 'xl/workbook.xml' },
    )
    this.zip.append(
      `${XML_HEAD}<Relationships xmlns="${RELS}">${range.map((i) => `<Relationship Id="rId${i}" Type="${DOC_RELS}/worksheet" Target="worksheets/sheet${i}.xml"/>`).join('')}<Relationship Id="rId${n + 1}" Type="${DOC_RELS}/styles" Target="styles.xml"/></Relationships>`,
      { name: 'xl/_rels/workbook.xml.rels' },
    )
    this.zip.append(STYLES, { name: 'xl/styles.xml' })
  }

  /** Ends the sheet being written (if any) and starts the next, with its header row. */
  startSheet(): void {
    this.endSheet()
    const { headers } = this.sheets[++this.sheetIndex]!
    this.sheet = new PassThrough()
    this.zip.append(this.sheet, { name: `xl/worksheets/sheet${this.sheetIndex + 1}.xml` })
    this.refs = headers.map((_, k) => columnName(k))
    this.rowNumber = 1
    const cols = headers.map((h, k) => `<col min="${k + 1}" max="${k + 1}" width="${Math.min(50, Math.max(10, h.length + 2))}" customWidth="1"/>`).join('')
    this.chunk =
      `${XML_HEAD}<worksheet xmlns="${MAIN}"><sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/></sheetView></sheetViews>` +
      `${cols ? `<cols>${cols}</cols>` : ''}<sheetData><row r="1" s="1" customFormat="1">${headers.map((h, k) => `<c r="${this.refs[k]}1" s="1" t="inlineStr"><is>${text(h)}</is></c>`).join('')}</row>`
  }

  /** Writes a row of the current sheet; a promise when the zip has not taken what it was given yet. */
  row(values: readonly ExportCell[]): Promise<void> | undefined {
    const r = ++this.rowNumber
    let xml = `<row r="${r}">`
    for (let k = 0; k < values.length; k++) {
      const v = values[k]
      if (v === null || v === undefined) continue
      if (typeof v === 'number') {
        if (Number.isFinite(v)) xml += `<c r="${this.refs[k]}${r}"><v>${v}</v></c>`
      } else if (typeof v === 'boolean') xml += `<c r="${this.refs[k]}${r}" t="b"><v>${v ? 1 : 0}</v></c>`
      else xml += `<c r="${this.refs[k]}${r}" t="inlineStr"><is>${text(v)}</is></c>`
    }
    this.chunk += `${xml}</row>`
    return this.chunk.length >= CHUNK_CHARS ? this.flush() : undefined
  }

  /** Ends the last sheet and the package; resolves once `out` has taken all of it. */
  async end(): Promise<void> {
    this.endSheet()
    const finished = new Promise<void>((resolve) => {
      if (this.out.writableFinished || this.out.destroyed) return resolve()
      this.out.once('finish', resolve)
      this.out.once('close', resolve)
    })
    await this.zip.finalize()
    await finished
    if (this.failure) throw this.failure
  }

  private endSheet(): void {
    if (!this.sheet) return
    this.sheet.end(`${this.chunk}</sheetData></worksheet>`)
    this.chunk = ''
    this.sheet = null
  }

  private flush(): Promise<void> | undefined {
    const sheet = this.sheet!
    const full = !sheet.write(this.chunk)
    this.chunk = ''
    if (!full || this.out.destroyed) return undefined
    // The zip reads the sheet as the response takes its output: wait for it, or for the response to go.
    return new Promise((resolve) => {
      const done = () => {
        sheet.off('drain', done)
        this.out.off('close', done)
        resolve()
      }
      sheet.on('drain', done)
      this.out.on('close', done)
    })
  }
}

const XML_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
const MAIN = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main'
const RELS = 'http://schemas.openxmlformats.org/package/2006/relationships'
const DOC_RELS = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships'
/** Style 0 the default, 1 the header's bold. */
const STYLES =
  `${XML_HEAD}<styleSheet xmlns="${MAIN}"><fonts count="2"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font><font><b/><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>` +
  '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills><borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>' +
  '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs><cellXfs count="2"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/><xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/></cellXfs>' +
  '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>'
/** A sheet's XML goes to the zip in pieces of about this many characters. */
const CHUNK_CHARS = 64 * 1024

/** The column letters of index k (0 → A, 26 → AA). */
function columnName(k: number): string {
  let s = ''
  for (let n = k + 1; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(65 + ((n - 1) % 26)) + s
  return s
}

/** An inline string's text element; spaces, tabs and line breaks at its ends are kept. */
function text(s: string): string {
  const t = escapeXml(s)
  return EDGE_SPACE.test(s) ? `<t xml:space="preserve">${t}</t>` : `<t>${t}</t>`
}
const EDGE_SPACE = /^[ \t\n]|[ \t\n]$/

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }
function escapeXml(s: string): string {
  return /[&<>"]/.test(s) ? s.replace(/[&<>"]/g, (c) => XML_ESCAPES[c]!) : s
}
