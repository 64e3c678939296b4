/**
 * `cdp bench hashing` (npm run bench:hashing): customer rows per second normalised and hashed for
 * the ads platform, four columns (EMAIL, PHONE, FN, LN) per row, as the audience upload prepares
 * them (`hashRow`, pipelines/audience-sync/ads-platform/hashing.ts).
 *
 * Customers come from the project's synthetic generator (drawProfile: Argentine names with
 * accents and compound surnames, phones as "+54 9 11 4123-4567" or local spellings, e-mails; some
 * fields missing), generated chunk by chunk outside the timed sections. Per chunk, two timed
 * passes over the same rows: normalise only, then normalise + SHA-256 (the figure). A checksum
 * of the output keeps the work from being optimised away.
 *
 * Progress on stderr; a table and one JSON line on stdout.
 */
import { performance } from 'node:perf_hooks'
import { hashRow, normalize, type AudienceColumn, type CustomerIdentifiers } from '../pipelines/audience-sync/ads-platform/hashing.ts'
import { intFlag, loadAverages, machineInfo, progress, sig3, benchFlags, noteLoad } from './common.ts'
import { overGeneratedProfiles } from './profiles.ts'

const FLAGS = {
  customers: { type: 'string' },
  chunk: { type: 'string' },
  seed: { type: 'string' },
} as const

const HELP = `usage: cdp bench hashing [--customers N] [--chunk N] [--seed S]

Rows per second normalised and hashed (EMAIL, PHONE, FN, LN; SHA-256 hex per non-empty value)
for N generated customers (default 1,000,000). Customers are generated in chunks of --chunk
(default 100,000) outside the timed sections.
Progress on stderr; a table and one JSON line on stdout.
`

const COLUMNS: readonly AudienceColumn[] = ['EMAIL', 'PHONE', 'FN', 'LN']

export async function run(argv: string[]): Promise<number> {
  const values = benchFlags(argv, FLAGS, HELP)
  if (!values) return 0
  const customers = intFlag(values.customers, 'customers', 1_000_000)
  const chunkSize = Math.min(customers, intFlag(values.chunk, 'chunk', 100_000))
  const seed = values.seed ?? 'bench-hashing'
  const machine = machineInfo()
  // Other work on the machine skews the figure; the load averages go into the JSON to tell.
  const loadAtStart = loadAverages()
  noteLoad(loadAtStart, machine.cpus)
  progress(`${customers.toLocaleString('en-US')} customers, 4 columns, chunks of ${chunkSize.toLocaleString('en-US')}; ${machine.cpus} cpus, node ${machine.node}`)

  let normalizeMs = 0
  let hashMs = 0
  let values_hashed = 0
  let empty_values = 0
  let checksum = 0
  const { generateMs } = overGeneratedProfiles<CustomerIdentifiers>({
    customers,
    chunkSize,
    seed,
    label: 'generate + hash',
    map: (p) => ({ EMAIL: p.email, PHONE: p.phone, FN: p.firstName, LN: p.lastName }),
    warmUp: (rows) => rows.forEach((r) => hashRow(COLUMNS, r)),
    work: (rows) => {
      let t = performance.now()
      for (const r of rows) for (const c of COLUMNS) checksum += normalize(c, r[c]).length
      normalizeMs += performance.now() - t

      t = performance.now()
      for (const r of rows) {
        const hashed = hashRow(COLUMNS, r)
        for (const h of hashed) {
          if (h === '') empty_values++
          else {
            values_hashed++
            checksum += h.charCodeAt(0)
          }
        }
      }
      hashMs += performance.now() - t
    },
  })

  const rowsPerS = customers / (hashMs / 1000)
  const result = {
    customers,
    rows_per_s: sig3(rowsPerS),
    values_per_s: sig3(values_hashed / (hashMs / 1000)),
    normalize_only_rows_per_s: sig3(customers / (normalizeMs / 1000)),
    hash_s: Math.round(hashMs) / 1000,
    normalize_s: Math.round(normalizeMs) / 1000,
    generate_s: Math.round(generateMs) / 1000,
    values_hashed,
    empty_values,
    checksum,
    machine,
    loadavg: { start: loadAtStart, end: loadAverages() },
  }
  const fmt = (x: number) => Math.round(x).toLocaleString('en-US')
  process.stdout.write(
    [
      `hashing benchmark: ${fmt(customers)} generated customers, columns ${COLUMNS.join(', ')}; ${machine.cpus} cpus, node ${machine.node}`,
      `  normalise + SHA-256   ${fmt(result.rows_per_s).padStart(12)} rows/s   (${fmt(result.values_per_s)} digests/s, ${result.hash_s} s)`,
      `  normalise only        ${fmt(result.normalize_only_rows_per_s).padStart(12)} rows/s   (${result.normalize_s} s)`,
      `  ${fmt(values_hashed)} digests, ${fmt(empty_values)} empty values (sent as '')`,
      '',
    ].join('\n'),
  )
  process.stdout.write(`${JSON.stringify(result)}\n`)
  return 0
}
