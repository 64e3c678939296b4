import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../common/store/clickhouse.ts'
import { createLogger } from '../../common/logger.ts'
import { createRecomputeEngine } from '../../pipelines/features/recompute.ts'
import type { ProcessingResults } from '../../pipelines/features/analyses.ts'
import { migratedStore } from '../helpers.ts'

/**
 * A large tenant's recompute scores every other batch of rows on a worker thread
 * (feature-batches.ts). The rows and the results are the ones one thread gives, value for value:
 * the same tenant recomputed both ways.
 */
describe('recompute on two threads', () => {
  let store: Store
  const T = 4242
  const NOW = Date.UTC(2025, 6, 1)
  beforeAll(async () => {
    store = await migratedStore()
    // 2,000 customers with a profile (the last 200 without an order), 6,000 orders of customers
    // 1–1,900 and 50 of customers without a profile (2,001–2,050); a few cancelled, a few credit notes.
    await store.command({
      query: `INSERT INTO customers (tenant_id, customer_id, last_event_id, email, source, updated_at, version)
              SELECT {t:UInt64}, number + 1, concat('c', toString(number)), concat('c', toString(number + 1), '@example.com'), 't', toDateTime64('2023-07-01 00:00:00', 3, 'UTC'), 1
              FROM numbers(2000)`,
      query_params: { t: T },
    })
    await store.command({
      query: `INSERT INTO orders (tenant_id, customer_id, order_id, last_event_id, status, total, refunded_amount, currency, items_count, placed_at, updated_at, is_cancelled, source, version)
              SELECT {t:UInt64}, customer_id, concat('o', toString(number)), concat('e', toString(number)), 'paid',
                     toDecimal64(if(number % 97 = 0, -5, 5 + (cityHash64(number, 'v') % 20000) / 100), 2), NULL, 'ARS', 1, placed, placed, number % 50 = 0, 't', 1
              FROM (
                  SELECT number,
                         if(number < 6000, 1 + toUInt64(floor(1900 * pow((cityHash64(number, 'c') % 1000000) / 1000000, 2))), 2001 + number - 6000) AS customer_id,
                         fromUnixTimestamp64Milli(toInt64(1688169600000 + cityHash64(number, 't') % 63158400000), 'UTC') AS placed
                  FROM numbers(6050)
              )`,
      query_params: { t: T },
    })
  })
  afterAll(async () => {
    await store?.close()
  })

  async function recompute(parallelRowsFrom: number, now: number) {
    const logs: Record<string, unknown>[] = []
    const logger = createLogger({ level: 'info', destination: { write: (line: string) => void logs.push(JSON.parse(line)) } })
    const engine = createRecomputeEngine({ store, logger, partitions: 4, now: () => now, parallelRowsFrom })
    const results = await engine.run(T, { analyses: ['rfm', 'clv', 'churn'], batchSize: 150, force: true, signal: new AbortController().signal })
    const rs = await store.query({
      query: 'SELECT * EXCEPT (processed_at, version, model_version) FROM customer_features FINAL WHERE tenant_id = {t:UInt64} ORDER BY customer_id',
      query_params: { t: T },
      format: 'JSONEachRow',
    })
    const done = logs.find((l) => l.msg === 'tenant recomputed')!
    return { results, rows: await rs.json<Record<string, unknown>>(), workerBatches: done.workerBatches, warnings: logs.filter((l) => (l.level as number) >= 40) }
  }

  const withoutTimes = (r: ProcessingResults) => JSON.parse(JSON.stringify(r, (k, v) => (k === 'processing_time' ? undefined : v)))

  it('writes the rows and counts one thread does', async () => {
    const one = await recompute(Infinity, NOW)
    expect(one.workerBatches).toBe(0)
    // Customers 2,001 (its order cancelled) and 2,015 (a credit note alone) have no counting order
    // and no profile: no row.
    expect(one.rows).toHaveLength(2048)
    // A millisecond later, so the second run's rows are the ones FINAL reads.
    const two = await recompute(0, NOW + 1)
    expect(two.warnings).toEqual([])
    // 2,048 customers in batches of 150: 14 batches, every other one on the worker.
    expect(two.workerBatches).toBe(7)
    expect(two.rows).toEqual(one.rows)
    expect(withoutTimes(two.results)).toEqual(withoutTimes(one.results))
    expect(one.results.rfm!.total_processed).toBe(one.rows.filter((r) => (r.frequency as number) > 0).length)
    expect(one.results.rfm!.total_processed).toBeGreaterThan(1500)
  }, 120_000)
})
