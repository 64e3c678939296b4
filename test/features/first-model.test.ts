/**
 * A tenant's first model is fitted from the customers the consumer holds at its first write. Under
 * a backlog that write can hold customer records whose orders come in a later one: a model fitted
 * from no buyer scores no one, and is not kept, so the write that brings the orders fits one that
 * gives them segments, without waiting for a tick.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { TOPICS } from '../../common/topics.ts'
import type { LogRecord } from '../../common/eventlog/port.ts'
import { runFeatures } from '../../pipelines/features/run.ts'
import { engineInput } from '../../pipelines/features/engine.ts'
import { loadModels } from '../../pipelines/features/feature-store.ts'
import { silentLogger, testConfig, uniqueName } from '../helpers.ts'
import { history, NOW } from './histories.ts'

describe("a tenant's first model", () => {
  let rt: Runtime
  beforeAll(async () => {
    rt = await openRuntime(testConfig('embedded'), silentLogger)
  })
  afterAll(async () => {
    await rt?.close()
  })

  it('is not stored when fitted from customer records without orders, by a write or the tick: the write with their orders scores them', { timeout: 120_000 }, async () => {
    const tenant = 957
    const { profiles, orders } = history(tenant, 57, 60)
    const features = await runFeatures(rt, { now: () => NOW, tickMs: 3_600_000, name: uniqueName('features') })
    const record = (topic: string, offset: number) => ({ topic, partition: 0, offset: String(offset), key: null, value: null, headers: {}, timestamp: NOW }) as LogRecord
    const rows = async () => {
      const rs = await rt.store.query({ query: 'SELECT customer_id, segment, notEmpty(order_times) AS buyer FROM customer_features FINAL WHERE tenant_id = {t:UInt64} ORDER BY customer_id', query_params: { t: tenant }, format: 'JSONEachRow' })
      return (await rs.json<{ customer_id: string | number; segment: string | null; buyer: number }>()).map((r) => ({ customer: Number(r.customer_id), segment: r.segment, buyer: Number(r.buyer) === 1 }))
    }
    try {
      const sink = features.engine.definition().sink
      // The customer records first, alone in a write: no buyer, no segment, and no model stored.
      await sink(profiles.map((e, k) => ({ record: record(TOPICS.customers.name, k), value: engineInput({ kind: 'customer', event: e }) })))
      const before = await rows()
      expect(before.length).toBe(new Set(profiles.map((p) => p.customer_id)).size)
      expect(before.filter((r) => r.segment !== null)).toEqual([])
      expect((await loadModels(rt.store, [tenant])).get(tenant)).toBeUndefined()
      // Nor by the tick.
      await features.tick()
      expect((await loadModels(rt.store, [tenant])).get(tenant)).toBeUndefined()

      // Their orders in the next write: every buyer (a counting order) gets a segment from a model fitted with them.
      await sink(orders.map((e, k) => ({ record: record(TOPICS.orders.name, k), value: engineInput({ kind: 'order', event: e }) })))
      const after = await rows()
      const buyers = after.filter((r) => r.buyer)
      expect(buyers.length).toBeGreaterThan(after.length / 2)
      expect(buyers.filter((r) => r.segment === null)).toEqual([])
      expect(after.filter((r) => !r.buyer && r.segment !== null)).toEqual([])
      const model = (await loadModels(rt.store, [tenant])).get(tenant)
      expect(model?.boundaries).not.toBeNull()
      expect(model?.customers).toBeGreaterThan(0)
    } finally {
      await features.stop()
    }
  })
})
