import fs from 'node:fs'
import { fitBgNbd, fitGammaGamma, parseCdnowSummary, SummaryParseError } from '../../pipelines/features/clv/index.ts'
import { parse, UsageError } from '../args.ts'

const FLAGS = {
  summary: { type: 'string' },
} as const

const USAGE = [
  'usage: cdp eval clv --summary FILE',
  '',
  '  Fits BG/NBD on (x, t_x, T) and Gamma-Gamma on the customers with x > 0 (zbar) of a CDNOW-style',
  '  summary CSV (`ID,x,t_x,T,zbar`, e.g. cdnow_customers_summary_with_transactions.csv, in weeks) and',
  '  prints one JSON line: {"bgnbd":{"r","alpha","a","b","ll"},"gammagamma":{"p","q","gamma"}}.',
  '  Published CDNOW values: r 0.243, alpha 4.414, a 0.793, b 2.426, LL -9582.4; p 6.25, q 3.74, gamma 15.44.',
].join('\n')

/** `cdp eval clv --summary FILE`: reproduce the published CDNOW fits. */
export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, FLAGS)
  if (values.help) {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  const [target, ...extra] = positionals
  if (target !== 'clv') throw new UsageError(target ? `unknown evaluation '${target}'\n${USAGE}` : USAGE)
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'\n${USAGE}`)
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
