/**
 * Several feature consumers share a store: a tenant's model is refreshed by one of them per tick
 * interval (pipelines/features/feature-store.ts `claimModelRefresh`, docs/features.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { runFeatures } from '../../pipelines/features/run.ts'
import { claimModelRefresh, loadModels } from '../../pipelines/features/feature-store.ts'
import { caughtUp, silentLogger, testConfig, uniqueName } from '../helpers.ts'
import { history, NOW } from './histories.ts'
import { expectedFeatureRows, featureRows } from './batch-expectation.ts'

describe('model refresh, one consumer per interval', () => {
  let rt: Runtime
  beforeAll(async () => {
    rt = await openRuntime(testConfig('embedded'), silentLogger)
  })
  afterAll(async () => {
    await rt?.close()
  })

  it('of concurrent claims for a tenant and interval exactly one wins; the next interval is claimed anew', async () => {
    const owners = Array.from({ length: 8 }, (_, i) => `owner-${i}`)
    const won = await Promise.all(owners.map((o) => claimModelRefresh(rt.store, 77, 1000, o)))
    expect(won.filter(Boolean)).toHaveLength(1)
    // Later claims of the same interval lose to the first.
    expect(await claimModelRefresh(rt.store, 77, 1000, 'late')).toBe(false)
    // Another tenant, another interval: independent.
    expect(await claimModelRefresh(rt.store, 78, 1000, 'late')).toBe(true)
    expect(await claimModelRefresh(rt.store, 77, 1001, 'owner-3')).toBe(true)
    expect(await claimModelRefresh(rt.store, 77, 1001, 'owner-4')).toBe(false)
  })

  it('three consumers ticking at once store one new model; after their next tick all score with it', { timeout: 120_000 }, async () => {
    const tenant = 930
    const h = history(tenant, 31, 60)
    await publishEvents(rt.log, rt.codec, 'customers', h.profiles)
    await publishEvents(rt.log, rt.codec, 'orders', h.orders)
    let clock = NOW
    const now = () => clock
    // Three groups of one consumer each: every consumer holds the whole tenant, as the members of one group hold theirs.
    const consumers = await Promise.all([1, 2, 3].map(() => runFeatures(rt, { now, tickMs: 3_600_000, name: uniqueName('features') })))
    try {
      for (const c of consumers) {
        await caughtUp(rt.log, c.name, { timeoutMs: 60_000 })
      }
      clock += 3_600_000
      const before = (await loadModels(rt.store, [tenant])).get(tenant)!
      expect(before.version).toBeLessThan(clock)
      await Promise.all(consumers.map((c) => c.tick()))
      const versions = await rt.store.query({ query: 'SELECT version FROM tenant_models WHERE tenant_id = {t:UInt64} AND version = {v:UInt64}', query_params: { t: tenant, v: clock }, format: 'JSONEachRow' })
      expect(await versions.json()).toHaveLength(1)
      for (const c of consumers) await c.tick()
      const model = (await loadModels(rt.store, [tenant])).get(tenant)!
      expect(model.version).toBe(clock)
      // The losers scored their first tick with the model they had; their next tick uses the new one: every row equals the batch under it.
      const expected = expectedFeatureRows(h.orders, h.profiles, tenant, model, clock)
      const rows = await featureRows(rt.store, tenant)
      expect(rows.length).toBe(expected.rows.size)
      for (const row of rows) expect(row, `customer ${row.customer_id}`).toEqual(expected.rows.get(row.customer_id as number))
    } finally {
      for (const c of consumers) await c.stop()
    }
  })
})
