/**
 * Parser of the CDNOW customer summary with monetary value (`ID,x,t_x,T,zbar`, as published by Hardie
 * and shipped by lifetimes): CRLF or LF line ends, optional BOM, no trailing newline required. Pure:
 * it takes the file's text.
 */

export interface CdnowSummaryRow {
  id: string
  /** Repeat purchases. */
  x: number
  /** Recency (time of the last purchase since the first). */
  tx: number
  /** Age (time since the first purchase). */
  T: number
  /** Mean value of the repeat purchases (0 when x = 0). */
  zbar: number
}

export class SummaryParseError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(`line ${line}: ${message}`)
    this.name = 'SummaryParseError'
  }
}

const COLUMNS = ['ID', 'x', 't_x', 'T', 'zbar'] as const

export function parseCdnowSummary(text: string): CdnowSummaryRow[] {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/)
  const header = (lines[0] ?? '').split(',').map((h) => h.trim())
  if (header.length !== COLUMNS.length || header.some((h, i) => h !== COLUMNS[i])) {
    throw new SummaryParseError(`expected header '${COLUMNS.join(',')}', got '${lines[0] ?? ''}'`, 1)
  }
  const rows: CdnowSummaryRow[] = []
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!
    if (line.trim() === '') continue
    const cells = line.split(',').map((c) => c.trim())
    if (cells.length !== COLUMNS.length) throw new SummaryParseError(`expected ${COLUMNS.length} fields, got ${cells.length}`, i + 1)
    const [id, ...nums] = cells as [string, string, string, string, string]
    const [x, tx, T, zbar] = nums.map((c, k) => {
      const v = c === '' ? NaN : Number(c)
      if (!Number.isFinite(v)) throw new SummaryParseError(`${COLUMNS[k + 1]} is not a number: '${c}'`, i + 1)
      return v
    }) as [number, number, number, number]
    if (!Number.isInteger(x) || x < 0) throw new SummaryParseError(`x must be a non-negative integer, got ${x}`, i + 1)
    if (tx < 0 || tx > T) throw new SummaryParseError(`t_x must lie in [0, T], got t_x=${tx}, T=${T}`, i + 1)
    if (x === 0 && tx !== 0) throw new SummaryParseError(`t_x must be 0 when x = 0, got ${tx}`, i + 1)
    rows.push({ id, x, tx, T, zbar })
  }
  return rows
}
