/**
 * The feature consumer folds and writes batches one at a time; batches of other partitions that
 * arrive meanwhile are written together in the next turn (engine.ts `sinkInTurn`). Whatever the
 * grouping, a batch's sink settles only once its customers' rows are stored (its offsets are
 * committed after that), and the rows are those of one batch after another. Under a backlog, an
 * order batch and the customer batch of its partition read in step with it are written together.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { TOPICS } from '../../common/topics.ts'
import { customerKey, type OrderEvent } from '../../common/events.ts'
import { partitionFor } from '../../common/eventlog/partitioner.ts'
import type { LogRecord } from '../../common/eventlog/port.ts'
import { runFeatures } from '../../pipelines/features/run.ts'
import { engineInput } from '../../pipelines/features/engine.ts'
import { caughtUp, readTopic, silentLogger, testConfig, uniqueName } from '../helpers.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { history, NOW } from './histories.ts'

describe('batches of several partitions at once', () => {
  let rt: Runtime
  beforeAll(async () => {
    rt = await openRuntime(testConfig('embedded'), silentLogger)
  })
  afterAll(async () => {
    await rt?.close()
  })

  it('settle each batch once its own rows are stored, and store every customer of every batch', { timeout: 120_000 }, async () => {
    const tenant = 951
    const { orders } = history(tenant, 51, 40)
    const features = await runFeatures(rt, { now: () => NOW, tickMs: 3_600_000, name: uniqueName('features') })
    const partitions = rt.config.partitions
    const stored = async (customers: number[]) => {
      const rs = await rt.store.query({ query: 'SELECT DISTINCT customer_id FROM customer_features WHERE tenant_id = {t:UInt64} AND customer_id IN {c:Array(UInt64)}', query_params: { t: tenant, c: customers }, format: 'JSONCompactEachRow' })
      return (await rs.json<[number]>()).map(([c]) => Number(c)).sort((a, b) => a - b)
    }
    try {
      // The orders as the log would deliver them: by partition of their key, in offset order.
      const byPartition = new Map<number, OrderEvent[]>()
      for (const o of orders) {
        const p = partitionFor(customerKey(tenant, o.customer_id), partitions, () => 0)
        byPartition.set(p, [...(byPartition.get(p) ?? []), o])
      }
      expect(byPartition.size).toBeGreaterThan(1)
      const sink = features.engine.definition().sink
      const batches = [...byPartition].flatMap(([partition, events]) => {
        const half = Math.ceil(events.length / 2)
        // Two batches a partition: the second only after the first settles, as a consumer delivers them.
        const item = (e: OrderEvent, offset: number) => ({ record: { topic: TOPICS.orders.name, partition, offset: String(offset), key: null, value: null, headers: {}, timestamp: NOW } as LogRecord, value: engineInput({ kind: 'order', event: e }) })
        return [{ partition, events: events.slice(0, half), items: events.slice(0, half).map((e, k) => item(e, k)) }, { partition, events: events.slice(half), items: events.slice(half).map((e, k) => item(e, half + k)) }]
      })
      const settledWith = new Map<number, number[]>()
      await Promise.all(
        [...byPartition.keys()].map(async (partition) => {
          for (const [k, b] of batches.filter((x) => x.partition === partition).entries()) {
            await sink(b.items)
            const customers = [...new Set(b.events.map((e) => e.customer_id))]
            // Settled: every customer of the batch has its row already.
            expect(await stored(customers), `partition ${partition} batch ${k}`).toEqual(customers.sort((a, c) => a - c))
            settledWith.set(partition, [...(settledWith.get(partition) ?? []), b.items.length])
          }
        }),
      )
      const all = [...new Set(orders.map((o) => o.customer_id))].sort((a, b) => a - b)
      expect(await stored(all)).toEqual(all)
      expect([...settledWith.values()].flat().reduce((s, n) => s + n, 0)).toBe(orders.length)
    } finally {
      await features.stop()
    }
  })
})

describe('a backlog of customer records and their orders, on two topics', () => {
  it("is scored a customer at a time, not a topic at a time: one feature snapshot for most customers, not one for the record and one for the orders", { timeout: 120_000 }, async () => {
    // Batches far smaller than a partition's backlog, as under a real backlog at the default size.
    const rt = await openRuntime(testConfig('embedded', { featuresBatchSize: 50 }), silentLogger)
    try {
      const tenant = 953
      const { profiles, orders } = history(tenant, 53, 240)
      // Published as a shop's history arrives: twenty customers' records, then their orders, and so on.
      for (let i = 0; i < profiles.length; i += 20) {
        const chunk = new Set(profiles.slice(i, i + 20).map((p) => p.customer_id))
        await publishEvents(rt.log, rt.codec, 'customers', profiles.slice(i, i + 20))
        await publishEvents(rt.log, rt.codec, 'orders', orders.filter((o) => chunk.has(o.customer_id)))
        await new Promise((r) => setTimeout(r, 2))
      }
      const features = await runFeatures(rt, { now: () => NOW, tickMs: 3_600_000, name: uniqueName('features') })
      try {
        await caughtUp(rt.log, features.name, { what: 'caught up', timeoutMs: 60_000 })
      } finally {
        await features.stop()
      }
      const snapshots = (await readTopic<{ tenant_id: number; customer_id: number }>(rt.log, rt.codec, TOPICS.customerFeatures.name)).filter((r) => r.value.tenant_id === tenant)
      const perCustomer = new Map<number, number>()
      for (const r of snapshots) perCustomer.set(r.value.customer_id, (perCustomer.get(r.value.customer_id) ?? 0) + 1)
      expect(perCustomer.size).toBe(profiles.length)
      const again = [...perCustomer.values()].filter((n) => n > 1).length
      // Read a topic at a time, a customer's record comes batches before its orders, and seven in ten were scored
      // twice here; read in step and paired, about a third.
      expect(again).toBeLessThan(profiles.length / 2)
    } finally {
      await rt.close()
    }
  })
})
