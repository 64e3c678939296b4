/**
 * Incremental RFC 4180 CSV parser: feed string chunks of any size, get complete rows back. Pure
 * (no I/O) and memory-bounded: only the row being parsed is buffered, capped by maxRowLength, so an
 * unbalanced quote in a multi-GB file fails fast instead of swallowing the rest of the file.
 *
 * Handles quoted fields with delimiters, doubled quotes and line breaks inside, CRLF / LF / lone
 * CR line ends, a UTF-8 BOM, and a missing final line break. Blank lines are skipped. A quote in
 * the middle of an unquoted field (ab"c) is kept literally, as most producers mean it; text after
 * a closing quote ("ab"c) is ambiguous and rejected.
 *
 * Each row keeps its source text (`raw`: quotes, delimiters and inner line breaks as written, the
 * row's own line break excluded), so a rejected row can be reported exactly as the file has it.
 */

export interface CsvRow {
  /** 1-based physical line on which the row starts (rows may span lines). */
  line: number
  fields: string[]
  /** The row as written in the file, without its terminating line break. */
  raw: string
}

export interface CsvOptions {
  /** Single character; default ','. */
  delimiter?: string
  /** Max characters in one row, delimiters included, quotes excluded; default 4 MiB. */
  maxRowLength?: number
}

export class CsvError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(`line ${line}: ${message}`)
    this.name = 'CsvError'
  }
}

// Parser states.
const FIELD_START = 0
const UNQUOTED = 1
const QUOTED = 2
/** Saw a quote inside a quoted field: either an escaped "" or the closing quote. */
const QUOTE_IN_QUOTED = 3
type State = typeof FIELD_START | typeof UNQUOTED | typeof QUOTED | typeof QUOTE_IN_QUOTED

const QUOTE = 34
const LF = 10
const CR = 13

export class CsvParser {
  private readonly delim: number
  private readonly maxRowLength: number
  private state: State = FIELD_START
  private field = ''
  private fields: string[] = []
  private rowLength = 0
  private line = 1
  private rowLine = 1
  private quoteLine = 1
  private skipLf = false
  private rowQuoted = false
  /** Source text of the current row from earlier chunks, and where it starts in this chunk. */
  private rawPrefix = ''
  private rawStart = 0
  private started = false
  private ended = false

  constructor(opts: CsvOptions = {}) {
    const d = opts.delimiter ?? ','
    if (d.length !== 1 || d === '"' || d === '\n' || d === '\r') throw new Error(`invalid CSV delimiter ${JSON.stringify(d)}`)
    this.delim = d.charCodeAt(0)
    this.maxRowLength = opts.maxRowLength ?? 4 * 1024 * 1024
  }

  /** Parses `chunk` and returns the rows it completed. */
  push(chunk: string): CsvRow[] {
    if (this.ended) throw new Error('CsvParser.push() after end()')
    if (!this.started) {
      this.started = true
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1)
    }
    const rows: CsvRow[] = []
    const n = chunk.length
    let i = 0
    this.rawStart = 0
    scan: while (i < n) {
      if (this.skipLf) {
        // Second half of a CRLF (possibly split across two chunks): not part of the next row.
        this.skipLf = false
        if (chunk.charCodeAt(i) === LF) {
          i++
          this.rawStart = i
          continue
        }
      }
      switch (this.state) {
        case FIELD_START:
          if (chunk.charCodeAt(i) === QUOTE) {
            this.state = QUOTED
            this.quoteLine = this.line
            this.rowQuoted = true
            i++
            break
          }
          this.state = UNQUOTED
        // falls through
        case UNQUOTED: {
          let j = i
          while (j < n) {
            const c = chunk.charCodeAt(j)
            if (c === this.delim || c === LF || c === CR) break
            j++
          }
          this.append(chunk.slice(i, j))
          if (j === n) break scan // the field continues in the next chunk
          this.separator(chunk, j, rows)
          i = j + 1
          break
        }
        case QUOTED: {
          const j = chunk.indexOf('"', i)
          const end = j === -1 ? n : j
          const text = chunk.slice(i, end)
          for (let k = text.indexOf('\n'); k !== -1; k = text.indexOf('\n', k + 1)) this.line++
          this.append(text)
          if (j === -1) break scan
          this.state = QUOTE_IN_QUOTED
          i = j + 1
          break
        }
        case QUOTE_IN_QUOTED: {
          const c = chunk.charCodeAt(i)
          if (c === QUOTE) {
            this.append('"')
            this.state = QUOTED
          } else if (c === this.delim || c === LF || c === CR) {
            this.separator(chunk, i, rows)
          } else {
            throw new CsvError(`unexpected ${JSON.stringify(chunk[i])} after the closing quote of a field`, this.line)
          }
          i++
          break
        }
      }
    }
    // The unfinished row's text so far; the next chunk continues it from its index 0.
    this.rawPrefix += chunk.slice(this.rawStart)
    return rows
  }

  /** Flushes the last row (files need not end with a line break). Throws on an open quote. */
  end(): CsvRow[] {
    if (this.ended) return []
    this.ended = true
    if (this.state === QUOTED) throw new CsvError('quoted field is never closed', this.quoteLine)
    const rows: CsvRow[] = []
    if (this.state !== FIELD_START || this.fields.length > 0) {
      this.fields.push(this.field)
      this.finishRow(rows, this.rawPrefix)
    }
    return rows
  }

  private append(s: string): void {
    this.field += s
    this.grow(s.length)
  }

  /** Counts characters of the row (delimiters too: a line of only commas is still bounded). */
  private grow(n: number): void {
    this.rowLength += n
    if (this.rowLength > this.maxRowLength) {
      const where = this.state === QUOTED ? this.quoteLine : this.rowLine
      throw new CsvError(`row longer than ${this.maxRowLength} characters (unbalanced quote?)`, where)
    }
  }

  /** Handles the delimiter or line break at chunk[at] that ends the current field. */
  private separator(chunk: string, at: number, rows: CsvRow[]): void {
    const c = chunk.charCodeAt(at)
    this.fields.push(this.field)
    this.field = ''
    this.state = FIELD_START
    if (c === this.delim) return this.grow(1)
    this.finishRow(rows, this.rawPrefix + chunk.slice(this.rawStart, at))
    this.rawStart = at + 1
    this.line++
    this.rowLine = this.line
    this.skipLf = c === CR
  }

  private finishRow(rows: CsvRow[], raw: string): void {
    const fields = this.fields
    this.fields = []
    this.field = ''
    this.rowLength = 0
    this.rawPrefix = ''
    const blank = fields.length === 1 && fields[0] === '' && !this.rowQuoted
    this.rowQuoted = false
    if (blank) return
    rows.push({ line: this.rowLine, fields, raw })
  }
}

/** Whole-string convenience wrapper, mainly for tests and small inputs. */
export function parseCsv(text: string, opts?: CsvOptions): CsvRow[] {
  const parser = new CsvParser(opts)
  return [...parser.push(text), ...parser.end()]
}
