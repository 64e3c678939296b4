import { UsageError } from '../args.ts'

/** `cdp bench <name>`: each benchmark is its own module under bench/. */
const BENCHES: Record<string, () => Promise<{ run(argv: string[]): Promise<number | void> }>> = {
  ingest: () => import('../../bench/ingest.ts'),
  features: () => import('../../bench/features.ts'),
  api: () => import('../../bench/api.ts'),
  hashing: () => import('../../bench/hashing.ts'),
  demographics: () => import('../../bench/demographics.ts'),
  sync: () => import('../../bench/sync.ts'),
  identity: () => import('../../bench/identity.ts'),
}

export async function run(argv: string[]): Promise<number | void> {
  const [name, ...rest] = argv
  const load = name ? BENCHES[name] : undefined
  if (!load) throw new UsageError(`usage: cdp bench ${Object.keys(BENCHES).join('|')} [options]`)
  return (await load()).run(rest)
}
