/**
 * Acceptance of "one customer, one profile", end to end on the embedded runtime: a tenant's buyers
 * pulled through the connectors' sync sources from the commerce-platform and marketplace
 * simulators serving one shared population; the projection, the identity resolution, the feature
 * consumer and the audience sync (against the ads-platform simulator) running as in production.
 *
 * - One profile per person: a person with accounts on both platforms is one row, with the orders
 *   of both; nothing is counted twice or lost (the profiles' spend adds up to every order's).
 * - The audience holds one row per profile in the segment, none for an absorbed customer.
 * - An admin's split undoes a merge: both get their own rows, and the audience follows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { groupLag } from '../../common/eventlog/port.ts'
import { runPipeline, type RunningPipeline } from '../../common/runtime/pipeline.ts'
import { TOPICS } from '../../common/topics.ts'
import { parseKeyring } from '../../common/secrets.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { projectionPipeline } from '../../pipelines/projection/pipeline.ts'
import { runFeatures, type RunningFeatures } from '../../pipelines/features/run.ts'
import { factOf, mergeFact, aggregate, type OrderFact } from '../../pipelines/features/order-facts.ts'
import { resolveTenant } from '../../pipelines/identity/resolve.ts'
import { IdentityService } from '../../pipelines/identity/service.ts'
import { IdentityStore } from '../../pipelines/identity/store.ts'
import { AudienceSyncStore } from '../../pipelines/audience-sync/store.ts'
import { AudienceSyncer } from '../../pipelines/audience-sync/syncer.ts'
import { segmentChangesPipeline } from '../../pipelines/audience-sync/consumer.ts'
import { createSyncSource, type SyncSource } from '../../pipelines/connectors/sources/source.ts'
import type { MappedCustomer, MappedOrder } from '../../pipelines/connectors/sources/mapping.ts'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import * as commerceSim from '../../services/simulators/commerce-platform/index.ts'
import * as marketplaceSim from '../../services/simulators/marketplace/index.ts'
import { start as startAds, type RunningAdsPlatformSimulator } from '../../services/simulators/ads-platform/index.ts'
import { silentLogger, testConfig, uniqueName, waitFor } from '../helpers.ts'

const SIM_NOW = Date.UTC(2025, 5, 1)
/** The pipelines' clock: a day after the simulators' data, moved by hand so the features' tick refreshes the model. */
let clock = SIM_NOW + 86_400_000
const now = () => clock
const TENANT = 880_000 + Math.floor(Math.random() * 10_000)
const SHARED = { customers: 120, seed: 'profiles-acceptance', overlap: 0.5, end: new Date(SIM_NOW), now: () => SIM_NOW }
const ADS = { token: 'EAAB-acceptance-token-0001', account: 'act_2000000001' }

let rt: Runtime
let cp: commerceSim.RunningCommercePlatformSimulator
let mp: marketplaceSim.RunningMarketplaceSimulator
let ads: RunningAdsPlatformSimulator
let projection: RunningPipeline
let features: RunningFeatures
let audienceConsumer: RunningPipeline
let syncStore: AudienceSyncStore
const groups = { projection: uniqueName('acc-proj'), features: uniqueName('acc-features'), audience: uniqueName('acc-audience') }

async function pull(source: SyncSource): Promise<{ customers: CustomerUpserted[]; orders: OrderEvent[] }> {
  const customers: MappedCustomer[] = []
  const orders: MappedOrder[] = []
  for (const entity of ['customers', 'orders'] as const) {
    let cursor: string | null = null
    do {
      const p = await source.page(entity, { from: null, to: SIM_NOW + 1 }, cursor, 50, new Map())
      if (entity === 'customers') customers.push(...p.customers)
      else orders.push(...p.orders)
      cursor = p.next
    } while (cursor)
  }
  return { customers: customers.map((c) => c.event), orders: orders.flatMap((o) => o.events) }
}

async function lag(group: string, topics: string[]): Promise<number> {
  let n = 0
  for (const t of topics) n += await groupLag(rt.log, group, t)
  return n
}

/** Every consumer caught up with everything published so far. */
async function settled(): Promise<void> {
  await waitFor(async () => (await lag(groups.projection, [TOPICS.orders.name, TOPICS.customers.name])) === 0, { what: 'projection caught up', timeoutMs: 120_000 })
  await waitFor(async () => (await lag(groups.features, [TOPICS.orders.name, TOPICS.customers.name, TOPICS.profileChanges.name])) === 0, { what: 'features caught up', timeoutMs: 120_000 })
  await waitFor(async () => (await lag(groups.audience, [TOPICS.segmentChanges.name, TOPICS.profileChanges.name])) === 0, { what: 'audience consumer caught up', timeoutMs: 120_000 })
}

async function rows<T>(query: string): Promise<T[]> {
  const rs = await rt.store.query({ query, query_params: { t: TENANT }, format: 'JSONEachRow' })
  return rs.json<T>()
}

const profileRows = () => rows<{ customer_id: number; frequency: number; monetary: string; segment: string | null; order_count: number }>(
  'SELECT customer_id, frequency, toString(monetary) AS monetary, segment, length(order_times) AS order_count FROM customer_features FINAL WHERE tenant_id = {t:UInt64} ORDER BY customer_id',
)

beforeAll(async () => {
  rt = await openRuntime(testConfig('embedded'), silentLogger)
  ;[cp, mp, ads] = await Promise.all([commerceSim.start(SHARED), marketplaceSim.start(SHARED), startAds({ tokens: [ADS.token], adAccounts: [ADS.account] })])
  projection = await runPipeline(projectionPipeline(rt.store, { name: groups.projection }), { log: rt.log, codec: rt.codec, logger: silentLogger })
  features = await runFeatures(rt, { now, tickMs: 3_600_000, name: groups.features })
  syncStore = new AudienceSyncStore(rt.store, parseKeyring(`t1:${'2'.repeat(64)}`), now)
  audienceConsumer = await runPipeline(segmentChangesPipeline(syncStore, groups.audience), { log: rt.log, codec: rt.codec, logger: silentLogger })
}, 120_000)

afterAll(async () => {
  await audienceConsumer?.stop()
  await features?.stop()
  await projection?.stop()
  await Promise.all([cp?.close(), mp?.close(), ads?.close()])
  await rt?.close()
})

describe('a tenant on the commerce platform and the marketplace, with buyers on both', () => {
  it('one profile per person with the orders of both, the audience one row per person, and a split the audience follows', { timeout: 300_000 }, async () => {
    const opts = { tenantId: TENANT, endpoints: { commercePlatform: cp.url, marketplace: mp.url, searchAds: '', socialAds: '' }, now }
    const shop = await pull(createSyncSource('commerce_platform', { account_name: 'demoshop', environment: 'commerce_stable', app_key: commerceSim.DEFAULTS.appKey, app_token: commerceSim.DEFAULTS.appToken }, {}, opts))
    const market = await pull(createSyncSource('marketplace', { client_id: marketplaceSim.DEFAULTS.clientId, client_secret: marketplaceSim.DEFAULTS.clientSecret, redirect_uri: marketplaceSim.DEFAULTS.redirectUri }, {}, opts))
    expect(market.customers.length).toBeGreaterThan(20)
    await publishEvents(rt.log, rt.codec, 'customers', [...shop.customers, ...market.customers])
    await publishEvents(rt.log, rt.codec, 'orders', [...shop.orders, ...market.orders])
    await settled()

    // Who is who: the simulators' truth, by the customer ids the connectors gave each account.
    const truth = async (url: string) => ((await (await fetch(`${url}/_sim/truth`)).json()) as { data: { source: string; id: string; person_id: number }[] }).data
    const personOf = new Map<number, number>()
    for (const [events, t] of [[shop.customers, await truth(cp.url)], [market.customers, await truth(mp.url)]] as const) {
      const byExternal = new Map(t.map((x) => [x.id, x.person_id]))
      for (const c of events) {
        const ext = c.source_ids.find((s) => s.source === (events === shop.customers ? 'commerce_platform' : 'marketplace'))?.id ?? null
        if (ext !== null && byExternal.has(ext)) personOf.set(c.customer_id, byExternal.get(ext)!)
      }
    }
    expect(personOf.size).toBe(shop.customers.length + market.customers.length)

    // Before any resolution: every account is scored alone, and an audience is filled from them.
    // Its segment: the one most accounts of people on both platforms are in, so the merges move it.
    clock += 3_600_000
    await features.tick()
    await settled()
    const twoAccounts = new Set([...personOf].filter(([, p]) => [...personOf.values()].filter((x) => x === p).length > 1).map(([c]) => c))
    const counts = new Map<string, number>()
    for (const r of await profileRows()) if (r.segment && twoAccounts.has(Number(r.customer_id))) counts.set(r.segment, (counts.get(r.segment) ?? 0) + 1)
    const segment = [...counts].sort((a, b) => b[1] - a[1])[0]![0]
    const config = await syncStore.createConfig({ tenant_id: TENANT, name: 'acceptance', segment, ad_account_id: ADS.account, token: ADS.token })
    const syncer = new AudienceSyncer({ store: syncStore, logger: silentLogger, ads: { baseUrl: ads.url, appAccessToken: ads.appAccessToken }, settleMs: 0, pacingMs: 0, now })
    const audience = async () => ads.state.members((await syncStore.getConfig(TENANT, config.config_id))!.audience_id!)
    const inSegment = () => profileRows().then((xs) => xs.filter((r) => r.segment === segment).map((r) => Number(r.customer_id)))
    await syncer.cycle()
    const accountsInAudience = (await audience()).length
    expect(accountsInAudience).toBe((await inSegment()).length)

    const resolved = await resolveTenant({ store: rt.store, log: rt.log, codec: rt.codec, logger: silentLogger }, TENANT)
    expect(resolved.reassigned).toBeGreaterThan(0)
    await settled()
    const ids = new IdentityStore(rt.store)
    const profileOf = await ids.profiles(TENANT)
    // Precision: no profile joins two people (family e-mails stay apart).
    const peopleOf = new Map<number, Set<number>>()
    for (const [c, p] of profileOf) peopleOf.set(p, new Set([...(peopleOf.get(p) ?? []), personOf.get(c)!]))
    expect([...peopleOf.values()].filter((s) => s.size > 1)).toEqual([])
    const merged = [...peopleOf.keys()].filter((p) => [...profileOf.values()].filter((x) => x === p).length > 1)
    expect(merged.length).toBeGreaterThan(market.customers.length / 2)

    // The features' tick (hourly here) scores every profile against the tenant's thresholds.
    clock += 3_600_000
    await features.tick()
    await settled()
    // One row per profile, each with the orders of all its members; the spend adds up.
    const stored = await profileRows()
    expect(stored.map((r) => Number(r.customer_id))).toEqual([...new Set(profileOf.values())].sort((a, b) => a - b))
    const facts = new Map<number, Map<string, OrderFact>>()
    for (const e of [...shop.orders, ...market.orders]) {
      const p = profileOf.get(e.customer_id) ?? e.customer_id
      if (!facts.has(p)) facts.set(p, new Map())
      mergeFact(facts.get(p)!, `${e.customer_id}/${e.order_id}`, factOf(e))
    }
    for (const r of stored) {
      const agg = aggregate(facts.get(Number(r.customer_id))?.values() ?? [])
      expect([Number(r.order_count), Number(r.frequency), Number(r.monetary)], `profile ${r.customer_id}`).toEqual([agg.orderCount, agg.purchaseDays, agg.monetaryCents / 100])
    }
    const total = [...facts.values()].reduce((s, f) => s + aggregate(f.values()).monetaryCents, 0)
    expect(Math.round(stored.reduce((s, r) => s + Number(r.monetary) * 100, 0))).toBe(total)

    // The audience now: one row per profile in the segment (the absorbed accounts' rows removed).
    const segmentOf = new Map(stored.map((r) => [Number(r.customer_id), r.segment]))
    await syncer.cycle()
    expect((await audience()).length).toBeGreaterThan(0)
    expect((await audience()).length).toBe((await inSegment()).length)
    // No absorbed customer is in the audience: its row was never added or has been removed.
    const members = await rows<{ customer_id: number }>(`SELECT customer_id FROM audience_members FINAL WHERE tenant_id = {t:UInt64} AND member = 1`)
    for (const m of members) expect(profileOf.get(Number(m.customer_id)) ?? Number(m.customer_id)).toBe(Number(m.customer_id))

    // An admin splits a merged profile of the segment: its second member gets its own row back, and the audience follows.
    expect(ads.requestLog.filter((r) => r.method === 'DELETE' && r.path.endsWith('/users')).length).toBeGreaterThan(0)
    const target = merged.find((p) => segmentOf.get(p) === segment)!
    const service = new IdentityService({ store: rt.store, log: rt.log, codec: rt.codec, logger: silentLogger })
    const leaving = (await service.profile(TENANT, target)).members[1]!.customer_id
    // Every identifier that links it to the others stops linking, one split at a time (as an admin would).
    for (let i = 0; i < 5 && (await ids.profiles(TENANT)).get(leaving) === target; i++) {
      const linked = (await service.profile(TENANT, target)).links.find((l) => l.customers.includes(leaving))!
      await service.split(TENANT, target, leaving, linked.identifier)
    }
    expect((await ids.profiles(TENANT)).get(leaving)).toBe(leaving)
    await settled()
    clock += 3_600_000
    await features.tick()
    await settled()
    const after = await profileRows()
    expect(after.map((r) => Number(r.customer_id))).toContain(leaving)
    expect(Number(after.find((r) => Number(r.customer_id) === leaving)!.order_count)).toBe(aggregate([...facts.get(target)!.entries()].filter(([k]) => k.startsWith(`${leaving}/`)).map(([, f]) => f)).orderCount)
    await syncer.cycle()
    expect((await audience()).length).toBe((await inSegment()).length)
  })
})
