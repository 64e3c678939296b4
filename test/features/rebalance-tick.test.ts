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
import { caughtUp, silentLogger, testConfig, uniqueName } from '../helpers.ts'
import { history, NOW } from './histories.ts'

const DAY = 86_400_000

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
      const [changes, rows] = [await count('segment_changes'), await count('customer_features')]
      // Four months on, quiet customers age into other segments: a tick has changes to write.
      clock += 120 * DAY
      const definition = features.engine.definition()
      definition.onRebalancing!()
      const during = await features.tick()
      expect(during.segmentChanges).toBe(0)
      expect([await count('segment_changes'), await count('customer_features')]).toEqual([changes, rows])
      // Assigned again (every partition, as the embedded log assigns): the same tick writes them.
      definition.onAssign!(Array.from({ length: rt.config.partitions }, (_, partition) => ({ topic: TOPICS.orders.name, partition })))
      const after = await features.tick()
      expect(after.segmentChanges).toBeGreaterThan(0)
      expect(await count('segment_changes')).toBe(changes + after.segmentChanges)
    } finally {
      await features.stop()
    }
  })
})
