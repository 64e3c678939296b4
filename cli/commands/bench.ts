import { UsageError } from '../args.ts'

/** `cdp bench <name>`: each benchmark is its own module under bench/. */
export const BENCHES: Record<string, () => Promise<{ run(argv: string[]): Promise<number | void> }>> = {
  ingest: () => import('../../bench/ingest.ts'),
  features: () => import('../../bench/features.ts'),
  api: () => import('../../bench/api.ts'),
  hashing: () => import('../../bench/hashing.ts'),
  demographics: () => import('../../bench/demographics.ts'),
  sync: () => import('../../bench/sync.ts'),
  identity: () => import('../../bench/identity.ts'),
  console: () => import('../../bench/console.ts'),
}

const USAGE = `usage: cdp bench ${Object.keys(BENCHES).join('|')} [options]

Each benchmark prints its figures beside their targets (bench/README.md);
\`cdp bench <name> --help\` lists its options.
`

export async function run(argv: string[]): Promise<number | void> {
  const [name, ...rest] = argv
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(USAGE)
    return 0
  }
  const load = name ? BENCHES[name] : undefined
  if (!load) throw new UsageError(name ? `unknown benchmark '${name}'\n${USAGE}` : USAGE)
  return (await load()).run(rest)
}
