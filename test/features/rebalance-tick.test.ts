/**
 * A tick works outside the consumer's batches, so the group can move a partition while it runs.
 * From the moment a rebalance begins until the next assignment, a tick writes nothing for the
 * partitions that may be moving (pipelines/features/engine.ts `owned`); the new owner scores them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { TOPICS } from '../../common/topics.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { runFeatures } from '../../pipelines/features/run.ts'
import { caughtUp, readTopic, silentLogger, testConfig, uniqueName } from '../helpers.ts'
import { TenantSettingsStore } from '../../common/store/tenant-settings.ts'
import { history, NOW } from './histories.ts'

const DAY = 86_400_000

describe('a tick written in chunks', () => {
  /** Runs the history through a fresh runtime's consumer and two ticks; returns what was stored and published per customer. */
  async function run(flushChunk: number | undefined) {
    const rt = await openRuntime(testConfig('embedded'), silentLogger)
    const tenant = 945
    const h = history(tenant, 43, 60)
    let clock = NOW
    const features = await runFeatures(rt, { now: () => clock, tickMs: 3_600_000, name: uniqueName('features'), flushChunk })
    try {
      await publishEvents(rt.log, rt.codec, 'customers', h.profiles)
      await publishEvents(rt.log, rt.codec, 'orders', h.orders)
      await caughtUp(rt.log, features.name, { what: 'caught up', timeoutMs: 60_000 })
      // An hour on, the batches' model is due (its thresholds came from the customers the first
      // write held, which depends on how the log split the batches and how many of them the first
      // write took): the first tick refits them from every stored customer, so the segments the
      // second tick's changes start from do not depend on the split either. A minute on, the model
      // was younger than boundaryMaxAgeMs (half the tick) and the tick kept it.
      clock += 3_600_000
      await features.tick()
      // Four months on, with the reference date moved to a day inside the history: the orders after
      // it no longer count, so the second tick rescores every customer and many change segment.
      // (Aging alone moves no one's quintile once the thresholds are refreshed; what the batches
      // wrote before depends on how the log split them; the second tick does not.)
      clock += 120 * DAY
      const settings = new TenantSettingsStore(rt.store)
      const { updated_at: _, ...current } = await settings.get(tenant)
      await settings.put({ ...current, reference_date: '2024-10-01' })
      const second = await features.tick()
      // The CLV fit starts from the batches' model, which depends on the split, so its last digits may differ; RFM does not.
      const q = async (query: string) => (await rt.store.query({ query, query_params: { t: tenant, at: clock }, format: 'JSONEachRow' })).json<Record<string, unknown>>()
      const rows = await q(`SELECT customer_id, argMax(tuple(segment, rfm_score, recency_days, frequency, toString(monetary)), version) AS latest FROM customer_features WHERE tenant_id = {t:UInt64} GROUP BY customer_id ORDER BY customer_id`)
      const changes = await q(`SELECT customer_id, previous_segment, segment FROM segment_changes WHERE tenant_id = {t:UInt64} AND occurred_at = fromUnixTimestamp64Milli({at:Int64}) ORDER BY customer_id`)
      const published = (await readTopic<{ tenant_id: number; occurred_at: number }>(rt.log, rt.codec, TOPICS.segmentChanges.name)).filter((r) => r.value.tenant_id === tenant && r.value.occurred_at === clock).length
      return { second, rows, changes, published, customers: new Set([...h.profiles, ...h.orders].map((e) => e.customer_id)).size }
    } finally {
      await features.stop()
      await rt.close()
    }
  }

  it('writes every customer once, as one write would: the same rows, changes and records', { timeout: 180_000 }, async () => {
    const chunked = await run(7)
    const whole = await run(undefined)
    expect(chunked.second.changed).toBeGreaterThan(3 * 7) // more customers than three chunks hold
    expect(chunked.second.segmentChanges).toBeGreaterThan(0)
    expect(chunked.rows.length).toBe(chunked.customers)
    expect(chunked.changes.length).toBe(chunked.second.segmentChanges)
    expect(chunked.published).toBe(chunked.second.segmentChanges)
    expect(chunked).toEqual(whole)
  })
})

describe('a tick during a rebalance', () => {
  let rt: Runtime
  beforeAll(async () => {
    rt = await openRuntime(testConfig('embedded'), silentLogger)
  })
  afterAll(async () => {
    await rt?.close()
  })

  it('publishes and stores nothing while a rebalance is under way, and everything once partitions are assigned again', { timeout: 120_000 }, async () => {
    const tenant = 940
    const h = history(tenant, 41, 60)
    await publishEvents(rt.log, rt.codec, 'customers', h.profiles)
    await publishEvents(rt.log, rt.codec, 'orders', h.orders)
    let clock = NOW
    const features = await runFeatures(rt, { now: () => clock, tickMs: 3_600_000, name: uniqueName('features') })
    const count = async (table: string) =>
      Number((await (await rt.store.query({ query: `SELECT count() AS n FROM ${table} WHERE tenant_id = {t:UInt64}`, query_params: { t: tenant }, format: 'JSONEachRow' })).json<{ n: string }>())[0]!.n)
    try {
      await caughtUp(rt.log, features.name, { what: 'caught up', timeoutMs: 60_000 })
      await features.tick()
      const changes = await count('segment_changes')
      // Four months on, every customer's recency, CLV and churn risk move: a tick has rows to write
      // (and segment changes, should a customer's segment move with them).
      clock += 120 * DAY
      const definition = features.engine.definition()
      definition.onRebalancing!()
      const during = await features.tick()
      // Rows processed at the tick's time (the table merges replaced rows away, so a plain count can shrink).
      const processedNow = async () =>
        Number((await (await rt.store.query({ query: 'SELECT count() AS n FROM customer_features FINAL WHERE tenant_id = {t:UInt64} AND processed_at >= fromUnixTimestamp64Milli({at:Int64})', query_params: { t: tenant, at: clock }, format: 'JSONEachRow' })).json<{ n: string }>())[0]!.n)
      expect([during.changed, during.segmentChanges]).toEqual([0, 0])
      expect([await count('segment_changes'), await processedNow()]).toEqual([changes, 0])
      // Assigned again (every partition, as the embedded log assigns): the same tick writes them.
      definition.onAssign!(Array.from({ length: rt.config.partitions }, (_, partition) => ({ topic: TOPICS.orders.name, partition })))
      const after = await features.tick()
      expect(after.changed).toBeGreaterThan(0)
      expect(await processedNow()).toBe(after.changed)
      expect(await count('segment_changes')).toBe(changes + after.segmentChanges)
    } finally {
      await features.stop()
    }
  })
})
