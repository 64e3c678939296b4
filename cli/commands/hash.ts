import { UsageError, parse } from '../args.ts'
import { AUDIENCE_COLUMNS, hashValue, isAudienceColumn, normalize } from '../../pipelines/audience-sync/ads-platform/hashing.ts'

const FLAGS = { column: { type: 'string', short: 'c' }, normalized: { type: 'boolean' } } as const

const USAGE = `usage: cdp hash --column ${AUDIENCE_COLUMNS.join('|')} [--normalized] VALUE [VALUE ...]

Normalises and hashes each VALUE the way the ads platform expects (docs/audience-sync.md):
  EMAIL   trimmed, lowercased
  PHONE   digits only (the country code stays: write it)
  FN, LN  characters that are neither word characters nor whitespace removed, lowercased, trimmed
then SHA-256 over UTF-8, lowercase hex. Prints one digest per value; an empty value (or one that
is empty once normalised) prints an empty line, as it is sent as an empty string.
  --normalized   print the normalised string (JSON-quoted) and a tab before each digest
Quote values with spaces: cdp hash --column EMAIL ' John@Example.com '
`

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, FLAGS)
  if (values.help) {
    process.stdout.write(USAGE)
    return 0
  }
  if (values.column === undefined) throw new UsageError(`--column is required\n\n${USAGE}`)
  const column = values.column.toUpperCase()
  if (!isAudienceColumn(column)) throw new UsageError(`--column must be one of ${AUDIENCE_COLUMNS.join(', ')}, got '${values.column}'`)
  if (positionals.length === 0) throw new UsageError(`give at least one value to hash\n\n${USAGE}`)
  const lines = positionals.map((value) => {
    const digest = hashValue(column, value)
    return values.normalized ? `${JSON.stringify(normalize(column, value))}\t${digest}` : digest
  })
  process.stdout.write(`${lines.join('\n')}\n`)
  return 0
}
