import { ConfigError } from '../common/config.ts'
import fs from 'node:fs'
import { UsageError } from './args.ts'
import { BENCHES } from './commands/bench.ts'

/** The package's version (package.json). */
function version(): string {
  return (JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version
}

/** The command closest to a mistyped one (edit distance at most 2, or a prefix), if any. */
export function nearest(name: string, names: readonly string[]): string | null {
  const distance = (a: string, b: string) => {
    let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
    for (let i = 1; i <= a.length; i++) {
      const cur = [i]
      for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
      prev = cur
    }
    return prev[b.length]!
  }
  const scored = names.map((n) => ({ n, d: n.startsWith(name) || name.startsWith(n) ? 0.5 : distance(name, n) })).sort((x, y) => x.d - y.d)
  return scored[0] && scored[0].d <= 2 ? scored[0].n : null
}

/** `cdp <command>`: each command lives in its own module, loaded on demand so `cdp --help` stays instant. */
const COMMANDS: Record<string, { summary: string; load: () => Promise<{ run(argv: string[]): Promise<number | void> }> }> = {
  start: { summary: 'start the pipeline (embedded by default; --demo streams a demo tenant)', load: () => import('./commands/start.ts') },
  import: { summary: 'import orders and customers from a .csv or .jsonl file', load: () => import('./commands/import.ts') },
  generate: { summary: 'generate a realistic synthetic tenant (JSONL to a file or stdout, or --publish)', load: () => import('./commands/generate.ts') },
  replay: { summary: 'drop the ClickHouse projections and rebuild them from the event log', load: () => import('./commands/replay.ts') },
  migrate: { summary: 'create topics, register schemas and apply ClickHouse migrations', load: () => import('./commands/migrate.ts') },
  config: { summary: 'print the effective configuration (secrets masked)', load: () => import('./commands/config.ts') },
  apikey: { summary: 'create, list or revoke tenant API keys (`cdp apikey create --tenant N`)', load: () => import('./commands/apikey.ts') },
  segments: { summary: 'print the RFM segment map (`--json`: every score 111..555 to its segment)', load: () => import('./commands/segments.ts') },
  eval: { summary: 'evaluate models on reference data: `cdp eval clv --summary FILE`, `cdp eval demographics`', load: () => import('./commands/eval.ts') },
  keys: { summary: 'secrets at rest: `cdp keys rotate` re-encrypts every stored credential under the current key', load: () => import('./commands/keys.ts') },
  hash: { summary: "normalise and hash a value as the ads platform expects (`cdp hash --column EMAIL ' a@b.com '`)", load: () => import('./commands/hash.ts') },
  simulator: { summary: 'start a third-party platform simulator (`cdp simulator ads-platform --port N`)', load: () => import('./commands/simulator.ts') },
  bench: { summary: `benchmarks: \`cdp bench ${Object.keys(BENCHES).join('|')}\``, load: () => import('./commands/bench.ts') },
}

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((k) => k.length))
  return [
    'usage: cdp <command> [options]',
    '',
    ...Object.entries(COMMANDS).map(([k, c]) => `  ${k.padEnd(width)}  ${c.summary}`),
    '',
    'Run `cdp <command> --help` for the options of a command, `cdp --version` for the version. Configuration: README.md.',
  ].join('\n')
}

/** Errors whose message says all an operator needs (matched by name: their modules load on demand). */
const ONE_LINE_ERRORS = new Set(['StartupError', 'LogLockedError', 'StoreBusyError'])

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(`cdp ${version()}\n`)
    return 0
  }
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${usage()}\n`)
    return name ? 0 : 2
  }
  const cmd = COMMANDS[name]
  if (!cmd) {
    const guess = nearest(name, Object.keys(COMMANDS))
    process.stderr.write(`cdp: unknown command '${name}'${guess ? ` (did you mean '${guess}'?)` : ''}\n\n${usage()}\n`)
    return 2
  }
  const mod = await cmd.load()
  return (await mod.run(rest)) ?? 0
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (err: unknown) => {
    // A configured reference directory that cannot be read is a configuration error too
    // (pipelines/demographics/reference.ts; matched by name so every command does not load it).
    if (err instanceof UsageError || err instanceof ConfigError || (err as Error)?.name === 'ReferenceDataError') {
      process.stderr.write(`cdp: ${(err as Error).message}\n`)
      process.exitCode = 2
    } else if (ONE_LINE_ERRORS.has((err as Error)?.name)) {
      // A start-up the operator can fix (a port in use, a held lock): one line, no stack trace.
      process.stderr.write(`cdp: ${(err as Error).message}\n`)
      process.exitCode = 1
    } else {
      process.stderr.write(`cdp: ${(err as Error)?.stack ?? String(err)}\n`)
      process.exitCode = 1
    }
  },
)
