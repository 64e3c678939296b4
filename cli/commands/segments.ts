import { UsageError, parse } from '../args.ts'
import { ALL_SCORES, SEGMENTS, SEGMENT_DESCRIPTIONS, SEGMENT_MAP, SEGMENT_SOURCE } from '../../pipelines/features/segments.ts'

const FLAGS = { json: { type: 'boolean' } } as const

const USAGE = `usage: cdp segments [--json]

Prints the RFM segment of every score combination 111..555.
  --json   one JSON object: each three-digit score (ascending) to its segment name
Without --json, a table grouped by segment. Marks: * listed twice in the spec (first listing
wins), + not listed in the spec (nearest listed combinations decide). See docs/segments.md.
`

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, FLAGS)
  if (values.help) {
    process.stdout.write(USAGE)
    return 0
  }
  if (positionals.length) throw new UsageError(`segments takes no arguments, got '${positionals.join(' ')}'`)
  if (values.json) {
    const out: Record<string, string> = {}
    for (const s of ALL_SCORES) out[s] = SEGMENT_MAP[s]!
    process.stdout.write(`${JSON.stringify(out)}\n`)
    return 0
  }
  const width = Math.max(...SEGMENTS.map((s) => s.length))
  const lines: string[] = []
  for (const segment of SEGMENTS) {
    const scores = ALL_SCORES.filter((s) => SEGMENT_MAP[s] === segment)
    const marked = scores.map((s) => s + (SEGMENT_SOURCE[s] === 'first-listing' ? '*' : SEGMENT_SOURCE[s] === 'nearest-listed' ? '+' : ''))
    lines.push(`${segment.padEnd(width)}  ${String(scores.length).padStart(3)}  ${SEGMENT_DESCRIPTIONS[segment]}`)
    lines.push(`${''.padEnd(width)}       ${marked.join(' ')}`)
  }
  lines.push('', '* listed twice in the spec, first listing wins   + not listed, nearest listed combinations decide')
  process.stdout.write(`${lines.join('\n')}\n`)
  return 0
}
