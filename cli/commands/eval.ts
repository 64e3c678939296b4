import fs from 'node:fs'
import path from 'node:path'
import { fitBgNbd, fitGammaGamma, parseCdnowSummary, SummaryParseError } from '../../pipelines/features/clv/index.ts'
import * as demo from '../../pipelines/demographics/evaluation.ts'
import { defaultReference } from '../../pipelines/demographics/enrich.ts'
import { parse, UsageError } from '../args.ts'
import { identifiersOf, resolveProfiles } from '../../pipelines/identity/index.ts'
import { pairwiseScores } from '../../pipelines/identity/evaluation.ts'
import { overlappingAccounts } from '../../pipelines/ingest/synthetic/overlap.ts'

const FLAGS = {
  summary: { type: 'string' },
  data: { type: 'string' },
  people: { type: 'string' },
  seed: { type: 'string' },
} as const

const USAGE = [
  'usage: cdp eval clv --summary FILE',
  '       cdp eval demographics [--data DIR]',
  '       cdp eval identity [--people 100000] [--seed S]',
  '',
  'clv: fits BG/NBD on (x, t_x, T) and Gamma-Gamma on the customers with x > 0 (zbar) of a CDNOW-style',
  '  summary CSV (`ID,x,t_x,T,zbar`, e.g. cdnow_customers_summary_with_transactions.csv, in weeks) and',
  '  prints one JSON line: {"bgnbd":{"r","alpha","a","b","ll"},"gammagamma":{"p","q","gamma"}}.',
  '  Published CDNOW values: r 0.243, alpha 4.414, a 0.793, b 2.426, LL -9582.4; p 6.25, q 3.74, gamma 15.44.',
  '',
  'demographics: scores the shipped reference tables against the Argentine reference data in DIR',
  '  (default ../shared/data/ar): gender from first names (INE), province from postal codes (Correo',
  '  localities), province aliases, age from DNI anchors, and enrichment throughput. Prints a table,',
  '  then one JSON line with the figures.',
  '',
  'identity: generates buyers of one shop on the commerce platform and the marketplace (a share on both,',
  '  their details written another way; families sharing an e-mail) with the truth of who is who,',
  '  resolves them into profiles and prints pairwise precision, recall and F1 against the targets',
  '  (precision >= 0.999, recall >= 0.98), then one JSON line.',
].join('\n')

/** `cdp eval clv --summary FILE`: reproduce the published CDNOW fits. `cdp eval demographics`. */
export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, FLAGS)
  if (values.help) {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  const [target, ...extra] = positionals
  if (target !== 'clv' && target !== 'demographics' && target !== 'identity') throw new UsageError(target ? `unknown evaluation '${target}'\n${USAGE}` : USAGE)
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'\n${USAGE}`)
  if (target === 'identity') {
    const people = Number(values.people ?? 100_000)
    if (!Number.isSafeInteger(people) || people < 1) throw new UsageError(`--people takes a positive whole number\n${USAGE}`)
    return identity(people, values.seed ?? 'eval-identity')
  }
  if (target === 'demographics') {
    if (values.summary !== undefined) throw new UsageError(`--summary is for \`cdp eval clv\`\n${USAGE}`)
    return demographics(values.data ?? '../shared/data/ar')
  }
  if (values.data !== undefined) throw new UsageError(`--data is for \`cdp eval demographics\`\n${USAGE}`)
  const file = values.summary
  if (!file) throw new UsageError(`--summary FILE is required\n${USAGE}`)

  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (e) {
    process.stderr.write(`cdp eval clv: cannot read ${file}: ${(e as Error).message}\n`)
    return 1
  }
  let rows
  try {
    rows = parseCdnowSummary(text)
  } catch (e) {
    if (!(e instanceof SummaryParseError)) throw e
    process.stderr.write(`cdp eval clv: ${file}: ${e.message}\n`)
    return 1
  }
  if (rows.length === 0) {
    process.stderr.write(`cdp eval clv: ${file}: no customers\n`)
    return 1
  }

  const bg = fitBgNbd(rows)
  const gg = fitGammaGamma(rows)
  // stdout carries exactly the one JSON line; diagnostics go to stderr.
  if (!bg.converged) process.stderr.write(`cdp eval clv: warning: BG/NBD fit did not converge (${bg.iterations} iterations)\n`)
  if (gg.customers === 0) process.stderr.write('cdp eval clv: warning: no customer with x > 0 and zbar > 0; Gamma-Gamma params are placeholders\n')
  else if (!gg.converged) process.stderr.write(`cdp eval clv: warning: Gamma-Gamma fit did not converge (${gg.iterations} iterations)\n`)
  const out = {
    bgnbd: { ...bg.params, ll: bg.ll },
    gammagamma: { p: gg.params.p, q: gg.params.q, gamma: gg.params.gamma },
  }
  process.stdout.write(`${JSON.stringify(out)}\n`)
  return 0
}

/** `cdp eval demographics`: the shipped tables scored against the reference data in DIR. */
function demographics(dir: string): number {
  const fail = (msg: string) => {
    process.stderr.write(`cdp eval demographics: ${msg}\n`)
    return 1
  }
  if (!fs.existsSync(dir)) {
    return fail(`data directory ${dir} not found; pass --data DIR, the folder holding names_genderator_ine_es/, localidades_correo_neousr/ and derived/ (../shared/data/ar in the workspace)`)
  }
  const read = (rel: string) => fs.readFileSync(path.join(dir, rel), 'utf8')
  const ref = defaultReference()
  const now = new Date()
  let report: demo.DemographicsReport
  let step = ''
  try {
    step = 'names_genderator_ine_es/names_ine.tsv'
    const gender = demo.evaluateGender(demo.parseIneNames(read(step)), ref)
    step = 'localidades_correo_neousr/por_provincia'
    const localities: demo.LocalityCode[] = []
    for (const file of fs.readdirSync(path.join(dir, step)).filter((f) => f.endsWith('.csv')).sort()) {
      const letter = demo.jurisdictionFromFileName(file)
      if (letter === null) return fail(`${step}/${file}: no province of that name`)
      localities.push(...demo.parseCorreoLocalities(read(path.join(step, file)), letter))
    }
    const postal = demo.evaluatePostal(localities, ref, now)
    step = 'derived/provincia_aliases_ar.csv'
    const aliases = demo.compactAliasFigures(demo.evaluateAliases(demo.parseAliases(read(step)), ref, now))
    step = 'derived/dni_birthyear_anchors.csv'
    const age = demo.evaluateAge(demo.parseAnchors(read(step)), ref, now)
    step = ''
    report = { gender, postal, aliases, age, enrich_customers_per_second: demo.measureThroughput(ref, now) }
  } catch (e) {
    const err = e as NodeJS.ErrnoException
    if (!(e instanceof demo.EvaluationDataError) && err.code === undefined) throw e
    return fail(`${path.join(dir, step)}: ${err.message}`)
  }
  // The table for people, then exactly one JSON line for scripts.
  process.stdout.write(`${demo.formatReport(dir, report)}\n${JSON.stringify(report)}\n`)
  return 0
}

/** `cdp eval identity`: profiles of a generated two-platform population against its truth. */
function identity(people: number, seed: string): number {
  const t0 = performance.now()
  const accounts = [...overlappingAccounts({ people, seed })]
  const t1 = performance.now()
  const r = resolveProfiles(accounts.map((a) => ({ customerId: a.customerId, firstSeenAt: a.firstSeenAt, identifiers: identifiersOf(a) })))
  const t2 = performance.now()
  const s = pairwiseScores(new Map(accounts.map((a) => [a.customerId, a.personId])), r.profileOf)
  const targets = { precision: 0.999, recall: 0.98 }
  const mark = (v: number, t: number) => `${v.toFixed(5)}  (target >= ${t}: ${v >= t ? 'pass' : 'FAIL'})`
  const report = {
    people,
    source_customers: accounts.length,
    profiles: r.profiles.length,
    blocked_identifiers: r.blocked.length,
    ...s,
    targets,
    pass: s.precision >= targets.precision && s.recall >= targets.recall,
    generate_s: Math.round(t1 - t0) / 1000,
    resolve_s: Math.round(t2 - t1) / 1000,
  }
  process.stdout.write(
    [
      `identity: ${people.toLocaleString('en')} people, ${accounts.length.toLocaleString('en')} source customers -> ${r.profiles.length.toLocaleString('en')} profiles (${r.blocked.length} identifiers blocked by the guard)`,
      `  precision ${mark(s.precision, targets.precision)}`,
      `  recall    ${mark(s.recall, targets.recall)}`,
      `  f1        ${s.f1.toFixed(5)}`,
      `  pairs: ${s.correct_pairs} correct of ${s.predicted_pairs} predicted, ${s.true_pairs} true; resolved in ${report.resolve_s} s`,
      JSON.stringify(report),
    ].join('\n') + '\n',
  )
  return report.pass ? 0 : 1
}
