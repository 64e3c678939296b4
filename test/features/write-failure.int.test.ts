/**
 * A write of the feature consumer ends its turn once published, and its inserts run while the
 * next write is scored (engine.ts, write()). Should they fail, the write is rolled back and its
 * batches come again: nothing of it may be lost. The order facts are the state store a restart
 * restores from, and the stream folds an order's fact only once, so a fact whose insert failed
 * must be written again by a later write.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import { TOPICS } from '../../common/topics.ts'
import type { SegmentChanged } from '../../common/events.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { runFeatures } from '../../pipelines/features/run.ts'
import { loadModels } from '../../pipelines/features/feature-store.ts'
import { caughtUp, migratedStore, readTopic, silentLogger, testConfig, uniqueName } from '../helpers.ts'
import { history, NOW } from './histories.ts'
import { expectedFeatureRows, featureRows } from './batch-expectation.ts'

let store: Store
let rt: Runtime
beforeAll(async () => {
  store = await migratedStore()
  rt = await openRuntime(testConfig('embedded'), silentLogger, { store })
})
afterAll(async () => {
  await rt.close()
  await store.close()
})

const count = async (sql: string, tenant: number) => Number((await (await store.query({ query: sql, query_params: { t: tenant }, format: 'JSONEachRow' })).json<{ n: string }>())[0]!.n)

describe('the feature consumer when its inserts fail', () => {
  it('rolls the write back and stores it when its batches come again: every fact, every row, the last change of each customer', { timeout: 180_000 }, async () => {
    const tenant = 90_000 + Math.floor(Math.random() * 1e6)
    const { orders, profiles } = history(tenant, 41, 80)
    const group = uniqueName('features')
    let clock = NOW
    const features = await runFeatures(rt, { now: () => clock, tickMs: 3_600_000, name: group })
    let away = false
    try {
      // The first half lands: the consumer has restored its partitions and holds these customers.
      const half = Math.floor(orders.length / 2)
      await publishEvents(rt.log, rt.codec, 'customers', profiles)
      await publishEvents(rt.log, rt.codec, 'orders', orders.slice(0, half))
      await caughtUp(rt.log, group, { timeoutMs: 60_000 })
      const factsBefore = await count('SELECT count() AS n FROM feature_order_facts FINAL WHERE tenant_id = {t:UInt64}', tenant)
      expect(factsBefore).toBeGreaterThan(0)

      // The state store's facts table is away: the second half's writes publish, then fail to store.
      await store.command({ query: 'RENAME TABLE feature_order_facts TO feature_order_facts_away' })
      away = true
      await publishEvents(rt.log, rt.codec, 'orders', orders.slice(half))
      // Long enough for several deliveries of the batches, each failing.
      await new Promise((r) => setTimeout(r, 1500))
      const committed = (await rt.log.committedOffsets(group, TOPICS.orders.name)).reduce((s, o) => s + Math.max(0, Number(o.offset)), 0)
      expect(committed).toBeLessThan(orders.length)
      await store.command({ query: 'RENAME TABLE feature_order_facts_away TO feature_order_facts' })
      away = false
      await caughtUp(rt.log, group, { timeoutMs: 60_000 })
      clock += 3_600_000
      await features.tick()
    } finally {
      if (away) await store.command({ query: 'RENAME TABLE feature_order_facts_away TO feature_order_facts' })
      await features.stop()
    }

    // Every order's latest fact is stored, those of the failed writes included.
    expect(await count('SELECT count() AS n FROM feature_order_facts FINAL WHERE tenant_id = {t:UInt64}', tenant)).toBe(new Set(orders.map((o) => o.order_id)).size)
    // Every row is the batch's: every event once, through the same pure functions.
    const model = (await loadModels(store, [tenant])).get(tenant)!
    const expected = expectedFeatureRows(orders, profiles, tenant, model, clock)
    const rows = await featureRows(store, tenant)
    expect(rows.map((r) => r.customer_id)).toEqual([...expected.rows.keys()])
    for (const row of rows) expect(row, `customer ${row.customer_id}`).toEqual(expected.rows.get(row.customer_id as number))
    // The last change published for a customer names its stored segment.
    const last = new Map<number, string | null>()
    for (const { value: c } of await readTopic<SegmentChanged>(rt.log, rt.codec, TOPICS.segmentChanges.name)) if (c.tenant_id === tenant) last.set(c.customer_id, c.segment)
    for (const row of rows) expect(last.get(row.customer_id as number) ?? null, `customer ${row.customer_id}`).toBe(row.segment)
  })
})
