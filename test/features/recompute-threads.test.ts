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

  /**
   * The store seen through a Proxy (what a server store does: no chdb file inserts, so rows go by
   * `insert` as values, from the worker too), with the staging table's inserts and its drop traced.
   * `hold(k)` holds the k-th staging insert until it settles (a timer, or another insert's start:
   * `started(j)`); `fail(k)` makes it throw after that.
   */
  function traced(opts: { hold?: (k: number, started: (j: number) => Promise<void>) => Promise<unknown>; fail?: (k: number) => boolean } = {}) {
    const events: string[] = []
    const rows: unknown[][] = []
    let n = 0
    const starts = new Map<number, () => void>()
    const startsOf = new Map<number, Promise<void>>()
    const started = (j: number) => {
      if (!startsOf.has(j)) startsOf.set(j, new Promise<void>((r) => starts.set(j, r)))
      return startsOf.get(j)!
    }
    const proxy = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'insert') {
          return async (args: { table: string; values: unknown[][]; columns: string[] }) => {
            if (!args.table.startsWith('recompute_staging')) return target.insert(args as never)
            const k = ++n
            events.push(`insert ${k} start`)
            void started(k)
            starts.get(k)!()
            await (opts.hold?.(k, started) ?? Promise.resolve())
            if (opts.fail?.(k)) {
              events.push(`insert ${k} settled`)
              throw new Error(`insert ${k} failed`)
            }
            const id = args.columns.indexOf('customer_id')
            for (const v of args.values) rows.push([v[id]])
            try {
              return await target.insert(args as never)
            } finally {
              events.push(`insert ${k} settled`)
            }
          }
        }
        if (prop === 'command') {
          return (args: { query: string }) => {
            if (/DROP TABLE IF EXISTS recompute_staging/.test(args.query)) events.push('drop staging')
            return target.command(args as never)
          }
        }
        const v = Reflect.get(target, prop, receiver)
        return typeof v === 'function' ? v.bind(target) : v
      },
    })
    return { proxy, events, rows }
  }

  it('stages every profile exactly once through the values path, progress rising to the total, on one thread and two', async () => {
    for (const parallelRowsFrom of [Infinity, 0]) {
      const { proxy, events, rows } = traced({ hold: (k) => new Promise((r) => setTimeout(r, (k % 3) * 5)) })
      const progress: number[] = []
      const engine = createRecomputeEngine({ store: proxy as Store, logger: createLogger({ level: 'error' }), partitions: 4, now: () => NOW + 2, parallelRowsFrom })
      await engine.run(T, { analyses: ['rfm'], batchSize: 150, force: true, signal: new AbortController().signal, onProgress: (done) => void progress.push(done) })
      const ids = rows.map((r) => Number(r[0]))
      expect(ids).toHaveLength(2048)
      expect(new Set(ids).size).toBe(2048)
      expect(progress.at(-1)).toBe(2048)
      expect(progress).toEqual([...progress].sort((a, b) => a - b))
      expect(events.at(-1)).toBe('drop staging')
    }
  }, 120_000)

  it('fails the run with a failed insert, and drops the staging table only once the other insert in flight has settled', async () => {
    // The first insert fails once the second has been given beside it; the second takes 200 ms more.
    const { proxy, events } = traced({ hold: (k, started) => (k === 1 ? started(2) : new Promise((r) => setTimeout(r, 200))), fail: (k) => k === 1 })
    const engine = createRecomputeEngine({ store: proxy as Store, logger: createLogger({ level: 'error' }), partitions: 4, now: () => NOW + 3, parallelRowsFrom: Infinity })
    await expect(engine.run(T, { analyses: ['rfm'], batchSize: 150, force: true, signal: new AbortController().signal })).rejects.toThrow('insert 1 failed')
    expect(events.slice(0, 2)).toEqual(['insert 1 start', 'insert 2 start'])
    const drop = events.indexOf('drop staging')
    expect(drop).toBeGreaterThan(events.indexOf('insert 2 settled'))
    expect(events.filter((e) => e.endsWith('start')).length).toBe(events.filter((e) => e.endsWith('settled')).length)
  }, 120_000)
})
