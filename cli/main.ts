import { ConfigError } from '../common/config.ts'
import { UsageError } from './args.ts'

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
  bench: { summary: 'benchmarks: `cdp bench ingest|features|api|hashing`', load: () => import('./commands/bench.ts') },
}

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((k) => k.length))
  return [
    'usage: cdp <command> [options]',
    '',
    ...Object.entries(COMMANDS).map(([k, c]) => `  ${k.padEnd(width)}  ${c.summary}`),
    '',
    'Run `cdp <command> --help` for the options of a command. Configuration: README.md.',
  ].join('\n')
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${usage()}\n`)
    return name ? 0 : 2
  }
  const cmd = COMMANDS[name]
  if (!cmd) {
    process.stderr.write(`cdp: unknown command '${name}'\n\n${usage()}\n`)
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
    } else {
      process.stderr.write(`cdp: ${(err as Error)?.stack ?? String(err)}\n`)
      process.exitCode = 1
    }
  },
)
