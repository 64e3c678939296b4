/**
 * `cdp bench demographics` (npm run bench:demographics): customers per second through the pure
 * demographic enrichment (`enrichDemographics`, pipelines/demographics/enrich.ts: national id →
 * age and generation, CUIL prefix or first name → gender, province alias + postal code + city →
 * corrected location and region), as the demographics consumer runs it on every customer event.
 *
 * Customers come from the project's synthetic generator (drawProfile: DNI and CUIL spellings,
 * accents, province aliases, both postal-code forms, some fields missing or wrong), generated
 * chunk by chunk outside the timed section. With --reference-dir the fuller reference tables of
 * that directory are loaded over the shipped ones (CDP_DEMOGRAPHICS_REFERENCE_DIR), which makes the
 * city lookup larger. A checksum of the output keeps the work from being optimised away.
 *
 * Progress on stderr; a table and one JSON line on stdout.
 */
import { performance } from 'node:perf_hooks'
import { enrichDemographics, type DemographicInput } from '../pipelines/demographics/enrich.ts'
import { defaultReference } from '../pipelines/demographics/reference.ts'
import { loadReferenceDirectory } from '../pipelines/demographics/reference-loader.ts'
import { intFlag, loadAverages, machineInfo, progress, sig3, benchFlags, noteLoad } from './common.ts'
import { overGeneratedProfiles } from './profiles.ts'

const FLAGS = {
  customers: { type: 'string' },
  chunk: { type: 'string' },
  seed: { type: 'string' },
  'reference-dir': { type: 'string' },
} as const

const HELP = `usage: cdp bench demographics [--customers N] [--chunk N] [--seed S] [--reference-dir DIR]

Customers per second through the demographic enrichment (age, gender, corrected location,
region) for N generated customers (default 1,000,000), generated in chunks of --chunk (default
100,000) outside the timed section. --reference-dir loads fuller reference tables over the
shipped ones, as CDP_DEMOGRAPHICS_REFERENCE_DIR does.
Progress on stderr; a table and one JSON line on stdout.
`

const NOW = new Date(Date.UTC(2025, 6, 1))

export async function run(argv: string[]): Promise<number> {
  const values = benchFlags(argv, FLAGS, HELP)
  if (!values) return 0
  const customers = intFlag(values.customers, 'customers', 1_000_000)
  const chunkSize = Math.min(customers, intFlag(values.chunk, 'chunk', 100_000))
  const seed = values.seed ?? 'bench-demographics'
  const reference = values['reference-dir'] ? loadReferenceDirectory(values['reference-dir']) : defaultReference()
  const machine = machineInfo()
  const loadAtStart = loadAverages()
  noteLoad(loadAtStart, machine.cpus)
  progress(`${customers.toLocaleString('en-US')} customers, chunks of ${chunkSize.toLocaleString('en-US')}, reference ${values['reference-dir'] ?? 'shipped tables'}; ${machine.cpus} cpus, node ${machine.node}`)

  let enrichMs = 0
  let withAge = 0
  let withGender = 0
  let validated = 0
  let checksum = 0
  const { generateMs } = overGeneratedProfiles<DemographicInput>({
    customers,
    chunkSize,
    seed,
    label: 'generate + enrich',
    map: (p) => ({ national_id: p.nationalId, first_name: p.firstName, city: p.city, province: p.province, postal_code: p.postalCode }),
    warmUp: (rows) => rows.forEach((r) => enrichDemographics(r, NOW, reference)),
    work: (rows) => {
      const t = performance.now()
      for (const r of rows) {
        const d = enrichDemographics(r, NOW, reference)
        if (d.estimated_age !== null) withAge++
        if (d.gender === 'M' || d.gender === 'F') withGender++
        if (d.is_location_validated) validated++
        checksum += d.location_confidence
      }
      enrichMs += performance.now() - t
    },
  })

  const result = {
    customers,
    customers_per_s: sig3(customers / (enrichMs / 1000)),
    enrich_s: Math.round(enrichMs) / 1000,
    generate_s: Math.round(generateMs) / 1000,
    with_age: withAge,
    with_gender: withGender,
    location_validated: validated,
    checksum: Math.round(checksum),
    reference: values['reference-dir'] ?? 'shipped',
    machine,
    loadavg: { start: loadAtStart, end: loadAverages() },
  }
  const fmt = (x: number) => Math.round(x).toLocaleString('en-US')
  const share = (n: number) => `${((100 * n) / customers).toFixed(1)} %`
  process.stdout.write(
    [
      `demographics benchmark: ${fmt(customers)} generated customers, reference ${result.reference}; ${machine.cpus} cpus, node ${machine.node}`,
      `  enrich   ${fmt(result.customers_per_s).padStart(12)} customers/s   (${result.enrich_s} s)`,
      `  with an age ${share(withAge)}, a gender M/F ${share(withGender)}, a validated location ${share(validated)}`,
      '',
    ].join('\n'),
  )
  process.stdout.write(`${JSON.stringify(result)}\n`)
  return 0
}
