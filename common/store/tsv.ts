/** ClickHouse's TabSeparated text (pure): what readers of large results parse instead of JSON. */

const TSV_ESCAPES: Record<string, string> = { b: '\b', f: '\f', r: '\r', n: '\n', t: '\t', '0': '\0', "'": "'", '\\': '\\' }

/** A TabSeparated field's text (ClickHouse escapes the backslash and control characters). */
export function unescapeTsv(s: string): string {
  return s.includes('\\') ? s.replace(/\\(.)/g, (_, ch: string) => TSV_ESCAPES[ch] ?? ch) : s
}
