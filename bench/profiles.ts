import { performance } from 'node:perf_hooks'
import { createProgress } from '../common/progress.ts'
import { EmailRegistry } from '../pipelines/ingest/synthetic/identity.ts'
import { drawProfile, type Profile } from '../pipelines/ingest/synthetic/profile.ts'
import { Rng } from '../pipelines/ingest/synthetic/random.ts'

/**
 * The loop of the benchmarks over generated customer profiles (bench:hashing, bench:demographics):
 * Argentine profiles from the synthetic generator (30 % dirty), made chunk by chunk outside the
 * timed sections, mapped to what the measured code takes. A warm-up of up to 20,000 other rows
 * lets the JIT settle first. `work` times its own sections; the generation time is returned.
 */
export interface ProfileLoop<T> {
  customers: number
  chunkSize: number
  seed: string
  /** The progress bar's label. */
  label: string
  map: (p: Profile) => T
  warmUp: (rows: T[]) => void
  work: (rows: T[]) => void
}

function generateChunk<T>(from: number, count: number, seed: string, emails: EmailRegistry, map: (p: Profile) => T): T[] {
  const out = new Array<T>(count)
  for (let i = 0; i < count; i++) {
    const customerId = from + i
    const rng = new Rng(`${seed}|customer:${customerId}`)
    out[i] = map(drawProfile(rng, { customerId, referenceYear: 2025, dirty: rng.chance(0.3), emails }))
  }
  return out
}

export function overGeneratedProfiles<T>(o: ProfileLoop<T>): { generateMs: number } {
  o.warmUp(generateChunk(1, Math.min(20_000, o.chunkSize), `${o.seed}|warm-up`, new EmailRegistry(), o.map))
  const emails = new EmailRegistry()
  const bar = createProgress({ total: o.customers, label: o.label })
  let generateMs = 0
  for (let from = 1; from <= o.customers; from += o.chunkSize) {
    const count = Math.min(o.chunkSize, o.customers - from + 1)
    const t = performance.now()
    const rows = generateChunk(from, count, o.seed, emails, o.map)
    generateMs += performance.now() - t
    o.work(rows)
    bar.tick(count)
  }
  bar.done()
  return { generateMs }
}
