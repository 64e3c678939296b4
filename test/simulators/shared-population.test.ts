import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as commerceSim from '../../services/simulators/commerce-platform/index.ts'
import * as marketplaceSim from '../../services/simulators/marketplace/index.ts'
import { buildDataset, type SimCustomer } from '../../services/simulators/commerce-platform/dataset.ts'
import { buildSharedPopulation, SHARED_DEFAULTS, type TruthRow } from '../../services/simulators/commerce-platform/shared-population.ts'
import { createSyncSource, type SyncSource } from '../../pipelines/connectors/sources/source.ts'
import type { MappedCustomer, MappedOrder } from '../../pipelines/connectors/sources/mapping.ts'
import type { Entity } from '../../pipelines/connectors/sources/types.ts'
import { customerSemanticErrors } from '../../pipelines/ingest/validation.ts'
import { identifiersOf } from '../../pipelines/identity/index.ts'
import { run as runSimulator } from '../../cli/commands/simulator.ts'
import type { CustomerUpserted } from '../../common/events.ts'

const NOW = Date.UTC(2025, 5, 1)
const now = () => NOW
const END = new Date(NOW)
const START = new Date(NOW - 365 * 86_400_000)
const SHARED = { customers: 160, seed: 'shared-sim', overlap: 0.4, end: END, now }

/** The identifiers that can link two source customers (a source id names one source's customer only). */
const linkKeys = (c: Partial<CustomerUpserted>) => identifiersOf(c).filter((i) => i.kind !== 'source_id').map((i) => `${i.kind}:${i.value}`)
const simKeys = (c: SimCustomer) => linkKeys({ email: c.email, phone: c.phone, national_id: c.document })

describe('shared population of the commerce-platform and marketplace simulators (pure)', () => {
  const opts = { customers: 300, seed: 'pure', start: START, end: END, overlap: 0.4 }
  const pop = buildSharedPopulation(opts)
  const base = buildDataset(opts)

  it('is deterministic for a seed', () => {
    expect(buildSharedPopulation(opts)).toEqual(pop)
    expect(buildSharedPopulation({ ...opts, seed: 'other' }).marketplace.truth).not.toEqual(pop.marketplace.truth)
  })

  it('serves every person on the commerce platform; every marketplace buyer is one of them, with the same name', () => {
    expect(pop.commerce.data.customers.map((c) => c.no)).toEqual(base.customers.map((c) => c.no))
    expect(pop.commerce.truth.map((t) => [t.customer_id, t.person_id])).toEqual(base.customers.map((c) => [c.no, c.no]))
    const people = new Map(pop.commerce.data.customers.map((c) => [c.no, c]))
    const personOf = new Map(pop.marketplace.truth.map((t) => [t.customer_id, t.person_id]))
    expect(pop.marketplace.data.customers.length / base.customers.length).toBeGreaterThan(0.3)
    expect(pop.marketplace.data.customers.length / base.customers.length).toBeLessThan(0.5)
    expect(personOf.size).toBe(pop.marketplace.data.customers.length)
    for (const b of pop.marketplace.data.customers) {
      const person = people.get(personOf.get(b.no)!)
      expect(person).toBeDefined()
      expect([b.firstName, b.lastName]).toEqual([person!.firstName, person!.lastName])
    }
  })

  it('splits the orders: none on both platforms, none lost, each under the same person', () => {
    const personOf = new Map([...pop.commerce.truth, ...pop.marketplace.truth].map((t) => [t.customer_id, t.person_id]))
    const sides = [...pop.commerce.data.orders, ...pop.marketplace.data.orders]
    expect(sides.map((o) => o.seq).sort((a, b) => a - b)).toEqual(base.orders.map((o) => o.seq))
    const bySeq = new Map(base.orders.map((o) => [o.seq, o]))
    for (const o of sides) {
      const b = bySeq.get(o.seq)!
      expect([personOf.get(o.customerNo), o.placedAt, o.items, o.itemsCents, o.cancelledAt, o.deliveredAt, o.refund]).toEqual([b.customerNo, b.placedAt, b.items, b.itemsCents, b.cancelledAt, b.deliveredAt, b.refund])
    }
    expect(pop.marketplace.data.orders.length).toBeGreaterThan(0)
    expect(pop.marketplace.data.orders.every((o) => o.shippingCents === 0)).toBe(true)
  })

  it('spells a buyer’s identifiers otherwise, and the identity normaliser maps most people’s to the same key', () => {
    const people = new Map(pop.commerce.data.customers.map((c) => [c.no, c]))
    const personOf = new Map(pop.marketplace.truth.map((t) => [t.customer_id, t.person_id]))
    let linked = 0
    let written = 0
    for (const b of pop.marketplace.data.customers) {
      const c = people.get(personOf.get(b.no)!)!
      if (simKeys(b).some((k) => simKeys(c).includes(k))) linked++
      if (b.email !== c.email || b.phone !== c.phone || b.document !== c.document) written++
    }
    expect(linked / pop.marketplace.data.customers.length).toBeGreaterThan(0.9)
    expect(written / pop.marketplace.data.customers.length).toBeGreaterThan(0.6)
  })

  it('shares a family e-mail between different people, and nothing else', () => {
    const family = buildSharedPopulation({ ...opts, familyShare: 0.15 })
    const personOf = new Map([...family.commerce.truth, ...family.marketplace.truth].map((t) => [t.customer_id, t.person_id]))
    const persons = new Map<string, Set<number>>()
    for (const c of [...family.commerce.data.customers, ...family.marketplace.data.customers]) {
      for (const k of simKeys(c)) persons.set(k, (persons.get(k) ?? new Set()).add(personOf.get(c.no)!))
    }
    const shared = [...persons].filter(([, ps]) => ps.size > 1)
    expect(shared.length).toBeGreaterThan(0)
    for (const [key] of shared) expect(key).toMatch(/^email:familia\./)
  })
})

/** Every record of one entity, through the connector (its client, keyset paging and mapping). */
async function syncAll<T extends 'customers' | 'orders'>(source: SyncSource, entity: T & Entity): Promise<T extends 'customers' ? MappedCustomer[] : MappedOrder[]> {
  const out: (MappedCustomer | MappedOrder)[] = []
  let cursor: string | null = null
  do {
    const p = await source.page(entity, { from: null, to: NOW + 1 }, cursor, 50, new Map())
    expect(p.invalid).toEqual([])
    out.push(...(entity === 'customers' ? p.customers : p.orders))
    cursor = p.next
  } while (cursor)
  return out as T extends 'customers' ? MappedCustomer[] : MappedOrder[]
}

describe('two simulators started with the same --customers, --seed and --overlap', () => {
  let cp: commerceSim.RunningCommercePlatformSimulator
  let mp: marketplaceSim.RunningMarketplaceSimulator
  /** The connectors' sync sources, pointed at the two simulators. */
  const sources = () => {
    const opts = { tenantId: 9, endpoints: { commercePlatform: cp.url, marketplace: mp.url, searchAds: '', socialAds: '' }, now }
    return {
      commerce: createSyncSource('commerce_platform', { account_name: 'demoshop', environment: 'commerce_stable', app_key: commerceSim.DEFAULTS.appKey, app_token: commerceSim.DEFAULTS.appToken }, {}, opts),
      marketplace: createSyncSource('marketplace', { client_id: marketplaceSim.DEFAULTS.clientId, client_secret: marketplaceSim.DEFAULTS.clientSecret, redirect_uri: marketplaceSim.DEFAULTS.redirectUri }, {}, opts),
    }
  }
  const truthOf = async (url: string) => ((await (await fetch(`${url}/_sim/truth`)).json()) as { data: TruthRow[] }).data

  beforeAll(async () => {
    cp = await commerceSim.start(SHARED)
    mp = await marketplaceSim.start(SHARED)
  })
  afterAll(async () => {
    await Promise.all([cp?.close(), mp?.close()])
  })

  it('serve the two sides of one population, and the connectors’ customer events carry the identifiers that link them', async () => {
    const cpTruth = await truthOf(cp.url)
    const mpTruth = await truthOf(mp.url)
    expect(cpTruth).toHaveLength(160)
    expect(cpTruth.every((t) => t.source === 'commerce_platform')).toBe(true)
    expect(mpTruth.every((t) => t.source === 'marketplace')).toBe(true)
    const personOf = new Map([...cpTruth, ...mpTruth].map((t) => [`${t.source}:${t.id}`, t.person_id]))

    const { commerce, marketplace } = sources()
    const cpCustomers = await syncAll(commerce, 'customers')
    const mpCustomers = await syncAll(marketplace, 'customers')
    expect(cpCustomers.map((c) => c.externalId).sort()).toEqual(cpTruth.map((t) => t.id).sort())
    expect(mpCustomers.map((c) => c.externalId).sort()).toEqual(mpTruth.map((t) => t.id).sort())

    // Each buyer is a person with a commerce account; most share a normalised e-mail, phone or national id with it.
    const commerceOf = new Map(cpCustomers.map((c) => [personOf.get(`commerce_platform:${c.externalId}`)!, c.event]))
    let linked = 0
    for (const b of mpCustomers) {
      expect(customerSemanticErrors(b.event)).toEqual([])
      expect(b.event.source_ids).toEqual([{ source: 'marketplace', id: b.externalId }])
      const own = commerceOf.get(personOf.get(`marketplace:${b.externalId}`)!)
      expect(own).toBeDefined()
      expect([b.event.first_name, b.event.last_name]).toEqual([own!.first_name, own!.last_name])
      const mine = linkKeys(own!)
      const theirs = linkKeys(b.event)
      if (theirs.some((k) => mine.includes(k))) linked++
      // A phone or national id both have is the same one, whatever the spelling.
      for (const kind of ['phone', 'national_id']) {
        const a = mine.find((k) => k.startsWith(`${kind}:`))
        const z = theirs.find((k) => k.startsWith(`${kind}:`))
        if (a && z) expect(z).toBe(a)
      }
    }
    expect(linked / mpCustomers.length).toBeGreaterThan(0.9)
    // Different spellings reach the events: not every buyer's fields are written as the shop has them.
    expect(mpCustomers.filter((b) => { const c = commerceOf.get(personOf.get(`marketplace:${b.externalId}`)!)!; return b.event.phone !== c.phone || b.event.national_id !== c.national_id }).length).toBeGreaterThan(mpCustomers.length / 3)
  })

  it('serve each order on exactly one platform, under the same person, and lose none', async () => {
    const personOf = new Map([...(await truthOf(cp.url)), ...(await truthOf(mp.url))].map((t) => [`${t.source}:${t.id}`, t.person_id]))
    const { commerce, marketplace } = sources()
    const cpOrders = await syncAll(commerce, 'orders')
    const mpOrders = await syncAll(marketplace, 'orders')
    const seqOf = (source: string, id: string) => (source === 'commerce_platform' ? Number(id.slice(0, -3)) - 1_000_000 : Number(id) - 2_000_000_000_000_000)
    const seen = [...cpOrders.map((o) => ({ seq: seqOf('commerce_platform', o.externalId), person: personOf.get(`commerce_platform:${o.customerExternalId}`) })), ...mpOrders.map((o) => ({ seq: seqOf('marketplace', o.externalId), person: personOf.get(`marketplace:${o.customerExternalId}`) }))]
    const base = buildDataset({ customers: SHARED.customers, seed: SHARED.seed, start: START, end: END })
    expect(seen.map((o) => o.seq).sort((a, b) => a - b)).toEqual(base.orders.map((o) => o.seq))
    const buyerOf = new Map(base.orders.map((o) => [o.seq, o.customerNo]))
    for (const o of seen) expect(o.person).toBe(buyerOf.get(o.seq))
    expect(mpOrders.length).toBeGreaterThan(0)
  })

  it('default to the same population without --customers and --seed; without --overlap nothing changes and there is no truth', async () => {
    const a = commerceSim.createCommercePlatformSimulator({ overlap: 0.3, end: END, now })
    const b = marketplaceSim.createMarketplaceSimulator({ overlap: 0.3, end: END, now })
    expect(a.state.data.customers).toHaveLength(SHARED_DEFAULTS.customers)
    const people = new Set(a.state.truth()!.map((t) => t.person_id))
    expect(b.state.truth()!.length).toBeGreaterThan(0)
    for (const t of b.state.truth()!) expect(people.has(t.person_id)).toBe(true)
    const plain = marketplaceSim.createMarketplaceSimulator({ end: END, now })
    expect(plain.state.data).toEqual(buildDataset({ customers: marketplaceSim.DEFAULTS.customers, seed: marketplaceSim.DEFAULTS.seed, start: START, end: END, shippingShare: 0 }))
    expect(plain.state.truth()).toBeNull()
    const plainCp = await commerceSim.start({ customers: 5, end: END, now })
    try {
      expect((await fetch(`${plainCp.url}/_sim/truth`)).status).toBe(404)
    } finally {
      await plainCp.close()
    }
  })

  it('cdp simulator takes --overlap as a share between 0 and 1 and documents it', async () => {
    await expect(runSimulator(['commerce-platform', '--overlap', '1.5'])).rejects.toThrow(/--overlap must be a number between 0 and 1/)
    await expect(runSimulator(['marketplace', '--overlap', 'x'])).rejects.toThrow(/--overlap/)
    const written: string[] = []
    const write = process.stdout.write
    process.stdout.write = ((s: string) => written.push(s) > 0) as typeof process.stdout.write
    try {
      expect(await runSimulator(['marketplace', '--help'])).toBe(0)
      expect(await runSimulator(['commerce-platform', '--help'])).toBe(0)
    } finally {
      process.stdout.write = write
    }
    expect(written.join('').match(/--overlap SHARE/g)).toHaveLength(2)
  })
})
