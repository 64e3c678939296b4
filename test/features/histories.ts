/** Generated tenant histories and their disordered, duplicated deliveries, for the stream-equals-batch tests. */
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { generateEvents } from '../../pipelines/ingest/synthetic/generate.ts'
import type { Resolution } from '../../pipelines/identity/graph.ts'
import { factOf, mergeFact, type OrderFact } from '../../pipelines/features/order-facts.ts'

export const WINDOW = { start: new Date(Date.UTC(2024, 0, 1)), end: new Date(Date.UTC(2025, 6, 1)) }
export const NOW = Date.UTC(2025, 6, 15, 12)

/** mulberry32: a small seeded generator, so a failing seed can be replayed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export function shuffle<T>(xs: T[], rand: () => number): T[] {
  const out = [...xs]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1))
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

/** A tenant's generated history, every event once, plus a delivery with duplicates in random order. */
export function history(tenant: number, seed: number, customers: number) {
  const all = [...generateEvents({ tenantId: tenant, customers, seed: `features-${seed}`, ...WINDOW })]
  const orders = all.filter((e) => e.topic === 'orders').map((e) => e.value as OrderEvent)
  const profiles = all.filter((e) => e.topic === 'customers').map((e) => e.value as CustomerUpserted)
  const rand = rng(seed)
  const dupes = <T>(xs: T[]) => [...xs, ...xs.filter(() => rand() < 0.25)]
  return { orders, profiles, delivery: { orders: shuffle(dupes(orders), rand), profiles: shuffle(dupes(profiles), rand) } }
}

/** A resolution that makes these groups (oldest first: the first member is the profile). */
export function resolution(groups: number[][]): Resolution {
  const profiles = groups.map((members) => ({ profileId: members[0]!, members, links: [] }))
  return { profiles, profileOf: new Map(profiles.flatMap((p) => p.members.map((m) => [m, p.profileId] as [number, number]))), blocked: [] }
}

/** Groups ids into pairs and triples (every fourth id stays alone), then R2: one pair split, two profiles merged. */
export function resolutions(ids: number[]) {
  const first: number[][] = []
  for (let i = 0; i < ids.length; ) {
    const size = i % 4 === 0 ? 1 : i % 3 === 0 ? 3 : 2
    first.push(ids.slice(i, i + size))
    i += size
  }
  const pairs = first.filter((g) => g.length === 2)
  const triples = first.filter((g) => g.length === 3)
  const split = pairs[0]!
  const [a, b] = [pairs[1]!, triples[0]!]
  const second = [
    ...first.filter((g) => g !== split && g !== a && g !== b),
    [split[0]!], [split[1]!],
    [...a, ...b].sort((x, y) => x - y),
  ]
  return { r1: resolution(first), r2: resolution(second), split, merged: [a, b] }
}


/** The latest fact of every order, grouped by the profile its customer belongs to (a customer no profile lists is its own). */
export function factsByProfile(orders: Iterable<OrderEvent>, profileOf: ReadonlyMap<number, number>): Map<number, Map<string, OrderFact>> {
  const out = new Map<number, Map<string, OrderFact>>()
  for (const e of orders) {
    const p = profileOf.get(e.customer_id) ?? e.customer_id
    if (!out.has(p)) out.set(p, new Map())
    mergeFact(out.get(p)!, `${e.customer_id}/${e.order_id}`, factOf(e))
  }
  return out
}
