import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { migrate, openStore, type Store } from '../../common/store/clickhouse.ts'
import { runPipeline } from '../../common/runtime/pipeline.ts'
import { projectionPipeline } from '../../pipelines/projection/pipeline.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { TOPICS } from '../../common/topics.ts'
import { deadLetters } from '../../common/runtime/metrics.ts'
import type { OrderEvent } from '../../common/events.ts'
import { silentLogger, testConfig, tmpDir, uniqueName, waitFor } from '../helpers.ts'

/**
 * A tenant's currency that cannot be read (its store table is away) fails the batch, which comes
 * again: valid orders are not dead-lettered for an outage, on the decode thread's path and on the
 * main thread's alike.
 */
const T0 = Date.UTC(2025, 0, 1)
const order = (tenant: number, n: number): OrderEvent => ({
  event_id: `e-${tenant}-${n}`, tenant_id: tenant, occurred_at: T0 + n * 60_000, source: 'test', event_type: 'placed',
  order_id: `o-${n}`, customer_id: 1 + (n % 3), status: 'paid', total: '10.00', currency: 'ARS',
  refunded_amount: null, items: [{ sku: 's', name: null, quantity: 1, unit_price: '10.00' }], placed_at: T0 + n * 60_000,
})

let store: Store
let rt: Runtime
beforeAll(async () => {
  store = await openStore({ database: 'cdp', chdbPath: tmpDir() })
  await migrate(store)
  rt = await openRuntime(testConfig('embedded'), silentLogger, { store })
})
afterAll(async () => {
  await rt.close()
  await store.close()
})

const rows = async (tenant: number) => {
  const rs = await store.query({ query: 'SELECT count() AS n FROM order_events WHERE tenant_id = {t:UInt64}', query_params: { t: tenant }, format: 'JSONEachRow' })
  return Number((await rs.json<{ n: string }>())[0]!.n)
}
const deadOf = async (group: string) => (await deadLetters.get()).values.filter((v) => v.labels.pipeline === group).reduce((s, v) => s + v.value, 0)

describe('the projection while the tenant settings cannot be read', () => {
  it.each([true, false])('delivers the batch again instead of dead-lettering its orders (decode thread: %s)', async (thread) => {
    const tenant = 70_000 + Math.floor(Math.random() * 1e6)
    await publishEvents(rt.log, rt.codec, 'orders', [order(tenant, 1), order(tenant, 2), order(tenant, 3)])
    const group = uniqueName('proj')
    await store.command({ query: 'RENAME TABLE tenants TO tenants_away' })
    let renamed = true
    const p = await runPipeline(projectionPipeline(store, { name: group, thread }), { log: rt.log, codec: rt.codec, logger: silentLogger })
    try {
      // Long enough for several deliveries of the batch, each failing.
      await new Promise((r) => setTimeout(r, 1500))
      expect(await rows(tenant)).toBe(0)
      expect(await deadOf(group)).toBe(0)
      const committed = await rt.log.committedOffsets(group, TOPICS.orders.name)
      expect(committed.map((o) => o.offset)).toEqual(committed.map(() => '-1'))
      await store.command({ query: 'RENAME TABLE tenants_away TO tenants' })
      renamed = false
      await waitFor(async () => (await rows(tenant)) === 3, { what: "the tenant's 3 orders", timeoutMs: 30_000 })
      expect(await deadOf(group)).toBe(0)
    } finally {
      if (renamed) await store.command({ query: 'RENAME TABLE tenants_away TO tenants' })
      await p.stop()
    }
  })
})
