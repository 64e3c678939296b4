/**
 * Features per profile (docs/identity.md): the feature consumer scores a profile over the orders
 * of all its members. Fed a generated history together with the profile-change records of two
 * resolutions (a merge of pairs and triples, then a split and a merge of two profiles) in random
 * order, duplicated, with a restart in the middle, it ends with exactly the rows the batch
 * recompute writes from the final memberships, and with the values computed by hand from the
 * members' orders: one row per profile, none for an absorbed customer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { runPipeline } from '../../common/runtime/pipeline.ts'
import { TOPICS } from '../../common/topics.ts'
import type { ProfileChanged, SegmentChanged } from '../../common/events.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { projectionPipeline } from '../../pipelines/projection/pipeline.ts'
import { runFeatures } from '../../pipelines/features/run.ts'
import { aggregate, factOf, orderHistory } from '../../pipelines/features/order-facts.ts'
import { computeFeatures } from '../../pipelines/features/features.ts'
import { loadModels } from '../../pipelines/features/feature-store.ts'
import { createRecomputeEngine } from '../../pipelines/features/recompute.ts'
import { ProfileMemberships, type ProfileRecord } from '../../pipelines/features/profiles.ts'
import { profileEvents } from '../../pipelines/identity/resolve.ts'
import { IdentityStore } from '../../pipelines/identity/store.ts'
import { caughtUp, readTopic, silentLogger, testConfig, uniqueName } from '../helpers.ts'
import { factsByProfile, history, NOW, resolutions, rng, shuffle } from './histories.ts'

const record = (e: ProfileChanged): ProfileRecord => ({ tenantId: e.tenant_id, profileId: e.profile_id, members: e.members, absorbedInto: e.absorbed_into, at: e.occurred_at, eventId: e.event_id })

describe('profile memberships (pure fold of profile-change records)', () => {
  it('records in any order and twice fold to the last resolution', () => {
    const ids = Array.from({ length: 40 }, (_, i) => i + 1)
    const { r1, r2 } = resolutions(ids)
    const events = [...profileEvents(7, new Map(), r1, 1000), ...profileEvents(7, r1.profileOf, r2, 2000)]
    expect(events.some((e) => e.change === 'absorbed')).toBe(true)
    expect(events.some((e) => e.change === 'split')).toBe(true)
    for (let seed = 1; seed <= 20; seed++) {
      const rand = rng(seed)
      const m = new ProfileMemberships()
      for (const e of shuffle([...events, ...events.filter(() => rand() < 0.3)], rand)) m.apply(record(e))
      for (const p of r2.profiles) {
        expect(m.membersOf(7, p.profileId), `seed ${seed} profile ${p.profileId}`).toEqual(p.members)
        expect(m.isProfile(7, p.profileId)).toBe(true)
        for (const c of p.members) expect(m.profileOf(7, c)).toBe(p.profileId)
      }
      for (const c of ids) if (r2.profileOf.get(c) !== c) expect(m.isProfile(7, c), `seed ${seed} customer ${c}`).toBe(false)
    }
  })

  it('an older record after a newer one changes nothing; a customer nobody lists is its own profile', () => {
    const m = new ProfileMemberships()
    const at = (t: number, members: number[], id = 'e') => ({ tenantId: 1, profileId: 10, members, absorbedInto: null, at: t, eventId: id })
    expect(m.membersOf(1, 10)).toEqual([10])
    expect(m.apply(at(2, [10, 11]))).toBe(true)
    expect(m.apply(at(1, [10, 11, 12]))).toBe(false)
    expect(m.apply(at(2, [10, 11]))).toBe(false)
    expect(m.membersOf(1, 10)).toEqual([10, 11])
    expect(m.profileOf(1, 12)).toBeUndefined()
    expect(m.isProfile(1, 12)).toBe(true)
  })
})

describe('feature consumer per profile (embedded log, chdb)', () => {
  let rt: Runtime
  beforeAll(async () => {
    rt = await openRuntime(testConfig('embedded'), silentLogger)
  })
  afterAll(async () => {
    await rt?.close()
  })

  const topics = [TOPICS.orders.name, TOPICS.customers.name, TOPICS.profileChanges.name]
  async function drain(group: string): Promise<void> {
    await caughtUp(rt.log, group, { topics, timeoutMs: 60_000 })
  }

  async function rows(tenant: number) {
    const rs = await rt.store.query({
      query: `SELECT customer_id, email, recency_days, frequency, toDecimalString(monetary, 2) AS monetary, rfm_score, segment,
                     toUnixTimestamp64Milli(first_order_at) AS first, toUnixTimestamp64Milli(last_order_at) AS last, purchase_days, repeat_purchases,
                     total_clv, clv_tier, p_alive, churn_risk, churn_probability, order_times, order_cents
              FROM customer_features FINAL WHERE tenant_id = {t:UInt64} ORDER BY customer_id`,
      query_params: { t: tenant },
      format: 'JSONEachRow',
    })
    return rs.json<Record<string, unknown>>()
  }

  const segmentChanges = async (tenant: number) =>
    (await readTopic<SegmentChanged>(rt.log, rt.codec, TOPICS.segmentChanges.name))
      .map((r) => r.value)
      .filter((e) => e.tenant_id === tenant)
      .sort((a, b) => a.occurred_at - b.occurred_at)

  for (const seed of [21, 22]) {
    it(`seed ${seed}: merges and a split in any order, duplicated, across a restart: one row per profile, equal to the batch recompute`, { timeout: 120_000 }, async () => {
      const tenant = 600 + seed
      const { orders, profiles, delivery } = history(tenant, seed, 80)
      const ids = [...new Set(profiles.map((p) => p.customer_id))].sort((a, b) => a - b)
      const { r1, r2, split, merged } = resolutions(ids)
      const changes = [...profileEvents(tenant, new Map(), r1, NOW - 7200_000), ...profileEvents(tenant, r1.profileOf, r2, NOW - 3600_000)]
      const rand = rng(seed)
      const records = shuffle([...changes, ...changes.filter(() => rand() < 0.3)], rand)
      const publishRecords = (xs: ProfileChanged[]) =>
        Promise.all(xs.map(async (e) => rt.log.send(TOPICS.profileChanges.name, [{ key: `${e.tenant_id}:${e.profile_id}`, value: await rt.codec.encode(TOPICS.profileChanges.name, e) }])))
      const half = <T>(xs: T[]) => Math.floor(xs.length / 2)
      const group = uniqueName('profile-features')
      let clock = NOW
      const now = () => clock

      await publishEvents(rt.log, rt.codec, 'customers', delivery.profiles.slice(0, half(delivery.profiles)))
      await publishRecords(records.slice(0, half(records)))
      await publishEvents(rt.log, rt.codec, 'orders', delivery.orders.slice(0, half(delivery.orders)))
      const first = await runFeatures(rt, { now, tickMs: 3_600_000, name: group })
      await drain(group)
      await first.stop()

      await publishEvents(rt.log, rt.codec, 'orders', delivery.orders.slice(half(delivery.orders)))
      await publishRecords(records.slice(half(records)))
      await publishEvents(rt.log, rt.codec, 'customers', delivery.profiles.slice(half(delivery.profiles)))
      const second = await runFeatures(rt, { now, tickMs: 3_600_000, name: group })
      await drain(group)
      clock += 3_600_000
      await second.tick()
      await second.stop()
      const model = (await loadModels(rt.store, [tenant])).get(tenant)!
      expect(model.clv).not.toBeNull()

      // By hand: each profile of the last resolution folds the facts of all its members.
      const facts = factsByProfile(orders, r2.profileOf)
      const emails = new Map<number, { at: number; email: string }>()
      for (const p of profiles) {
        const cur = emails.get(p.customer_id)
        const email = p.email ?? ''
        if (!cur || p.occurred_at > cur.at || (p.occurred_at === cur.at && email > cur.email)) emails.set(p.customer_id, { at: p.occurred_at, email })
      }
      const streamed = await rows(tenant)
      expect(streamed.map((r) => r.customer_id)).toEqual(r2.profiles.map((p) => p.profileId).sort((a, b) => a - b))
      for (const row of streamed) {
        const id = row.customer_id as number
        const agg = aggregate(facts.get(id)?.values() ?? [])
        const v = computeFeatures(agg, model, clock)
        const h = orderHistory(facts.get(id)?.values() ?? [])
        expect(row, `profile ${id}`).toEqual({
          customer_id: id, email: emails.get(id)?.email ?? '', recency_days: v.recency_days, frequency: v.frequency, monetary: (agg.monetaryCents / 100).toFixed(2),
          rfm_score: v.rfm_score, segment: v.segment, first: agg.firstOrderAt, last: agg.lastOrderAt, purchase_days: agg.purchaseDays, repeat_purchases: agg.repeatPurchases,
          total_clv: v.total_clv, clv_tier: v.clv_tier, p_alive: v.p_alive, churn_risk: v.churn_risk, churn_probability: v.churn_probability,
          order_times: h.times, order_cents: h.cents,
        })
      }
      // The merged profile counts the orders of all five members; the split pair counts apart.
      const mergedId = Math.min(...merged.flat())
      expect(streamed.find((r) => r.customer_id === mergedId)!.order_times).toHaveLength(merged.flat().reduce((n, c) => n + orderHistory(new Map(orders.filter((o) => o.customer_id === c).map((o) => [o.order_id, factOf(o)])).values()).times.length, 0))
      expect(streamed.map((r) => r.customer_id)).toEqual(expect.arrayContaining(split))

      // The last segment change of every customer names what it has now: its profile's segment, or none when absorbed.
      const last = new Map<number, SegmentChanged>()
      for (const c of await segmentChanges(tenant)) last.set(c.customer_id, c)
      const segmentOf = new Map(streamed.map((r) => [r.customer_id as number, r.segment]))
      for (const c of ids) expect(last.get(c)?.segment ?? null, `customer ${c}`).toBe(segmentOf.get(c) ?? null)

      // The batch recompute from the raw projections and the stored memberships writes the same rows.
      const projection = await runPipeline(projectionPipeline(rt.store, { name: `${group}-projection` }), { log: rt.log, codec: rt.codec, logger: silentLogger })
      await caughtUp(rt.log, `${group}-projection`, { what: 'projection caught up' })
      await projection.stop()
      await new IdentityStore(rt.store).writeProfiles(tenant, [...r2.profileOf])
      const engine = createRecomputeEngine({ store: rt.store, logger: silentLogger, partitions: rt.config.partitions, now })
      const result = await engine.run(tenant, { analyses: ['rfm'], batchSize: 25, force: true, signal: new AbortController().signal })
      expect(result.rfm!.total_processed).toBe(streamed.filter((r) => (r.frequency as number) > 0).length)
      const batch = await rows(tenant)
      const comparable = (xs: Record<string, unknown>[]) => xs.map((r) => [r.customer_id, r.email, r.frequency, r.monetary, r.first, r.last, r.purchase_days, r.repeat_purchases, r.order_times, r.order_cents, r.rfm_score])
      expect(comparable(batch)).toEqual(comparable(streamed))
    })
  }
})
