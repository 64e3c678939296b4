/**
 * A partition the feature consumer restored before any of its records came (at its assignment)
 * still notices that another consumer of its group folded and committed records of it meanwhile
 * (a session that expired and a partition given back, unawares): the next record is past the
 * group's committed offset the restore started from, so the partition is restored again and the
 * customer's row counts every order, not only the ones this consumer saw.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { TOPICS } from '../../common/topics.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { runFeatures } from '../../pipelines/features/run.ts'
import { customerPartition } from '../../pipelines/features/rows.ts'
import type { LogRecord } from '../../common/eventlog/port.ts'
import { caughtUp, silentLogger, testConfig, uniqueName } from '../helpers.ts'
import { order } from '../thread-events.ts'

let rt: Runtime
beforeAll(async () => {
  rt = await openRuntime(testConfig('embedded'), silentLogger)
})
afterAll(async () => {
  await rt?.close()
})

describe('a partition restored before its first record', () => {
  it('is restored again when the group committed past where it started, and the row counts every order', { timeout: 120_000 }, async () => {
    const tenant = 7_310_000 + Math.floor(Math.random() * 1_000)
    const customerId = 42
    const p = customerPartition(tenant, customerId, rt.config.partitions)
    const group = uniqueName('features-restore')
    const orders = TOPICS.orders.name
    const orderCount = async () => {
      const rs = await rt.store.query({ query: 'SELECT length(order_times) AS n FROM customer_features FINAL WHERE tenant_id = {t:UInt64} AND customer_id = {c:UInt64}', query_params: { t: tenant, c: customerId }, format: 'JSONEachRow' })
      return Number((await rs.json<{ n: number }>())[0]?.n ?? 0)
    }
    const run = async () => {
      const f = await runFeatures(rt, { name: group, tickMs: 3_600_000 })
      await caughtUp(rt.log, group, { topics: [orders] })
      await f.stop()
      return f
    }

    // Order 1, folded and committed by a first consumer of the group.
    await publishEvents(rt.log, rt.codec, 'orders', [order(tenant, customerId, 1)])
    await run()
    // A second consumer restores the partition at its assignment (order 1 from the store) and sees
    // no record of it: its expected offset is the group's committed one.
    const stale = await run()
    expect(await orderCount()).toBe(1)
    // Meanwhile a third consumer of the group folds and commits order 2.
    await publishEvents(rt.log, rt.codec, 'orders', [order(tenant, customerId, 2)])
    await run()
    expect(await orderCount()).toBe(2)

    // The second consumer gets the partition back without having seen it go, and order 3 comes.
    const offset = Number((await rt.log.endOffsets(orders)).find((e) => e.partition === p)!.offset)
    await publishEvents(rt.log, rt.codec, 'orders', [order(tenant, customerId, 3)])
    const value = (await rt.codec.encode(orders, order(tenant, customerId, 3)))
    const record: LogRecord = { topic: orders, partition: p, offset: String(offset), key: null, value, headers: {}, timestamp: Date.now() }
    const def = stale.engine.definition()
    def.onAssign!(Array.from({ length: rt.config.partitions }, (_, partition) => ({ topic: orders, partition })))
    const result = await def.process(record, rt.codec)
    if (result.kind !== 'ok') throw new Error(`order 3 was not kept: ${JSON.stringify(result)}`)
    await def.sink([{ record, value: result.value }])
    await def.close?.()
    // Restored again before order 3 was folded: orders 1, 2 and 3 (a stale copy would write 1 and 3).
    expect(await orderCount()).toBe(3)
  })
})
