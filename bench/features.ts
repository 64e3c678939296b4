/**
 * `npm run bench:features` (`cdp bench features`): the three figures of the feature pipeline.
 *
 *  (a) full recompute (the processing API's engine) of one tenant with --customers (1,000,000)
 *      customers and --orders (10,000,000) orders, generated inside ClickHouse with SQL;
 *  (b) incremental: events/s of the feature consumer through a backlog of generated history, then
 *      p50/p99 freshness from publishing a first order to receiving its SegmentChanged on
 *      cdp.segment-changes.v1 (a first order always moves a customer from no segment into one);
 *  (c) BG/NBD, MBG/NBD and Gamma-Gamma maximum-likelihood fit time on the customers of (a) (no
 *      dropout: the degenerate case) and on as many customers drawn from BG/NBD with dropout;
 *  (d) the feature consumer's in-memory state for --state-orders (10,000,000) order facts: the JS
 *      heap and buffers it adds (after a full GC) once every partition is loaded and once a tick
 *      scored every customer (the steady state: each customer then also holds the digest of its
 *      values), and the process's RSS growth at those two moments: at once, and after
 *      --settle-s (45) seconds idle. Right after a load or a tick, the RSS still holds working
 *      memory the allocators return within about 30 s (chdb's jemalloc for the queries, V8's
 *      freed pages); the settled figure is what the process keeps for the state.
 * Each figure is printed beside the issue's target with ✓ or ✗.
 *
 * Embedded runtime by default (chdb + on-disk log); `--runtime kafka` uses KAFKA_BROKERS and
 * SCHEMA_REGISTRY_URL for (b). Progress on stderr, a table and one JSON line on stdout.
 */
import fs from 'node:fs'
import v8 from 'node:v8'
import vm from 'node:vm'
import os from 'node:os'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { loadConfig, type Config } from '../common/config.ts'
import { createLogger } from '../common/logger.ts'
import { openRuntime } from '../common/runtime/context.ts'
import { groupLag } from '../common/eventlog/port.ts'
import type { Store } from '../common/store/clickhouse.ts'
import { TOPICS } from '../common/topics.ts'
import type { CustomerUpserted, OrderEvent, SegmentChanged } from '../common/events.ts'
import { publishEvents } from '../pipelines/ingest/publisher.ts'
import { generateEvents } from '../pipelines/ingest/synthetic/generate.ts'
import { runFeatures } from '../pipelines/features/run.ts'
import { createRecomputeEngine, loadTenantCustomers } from '../pipelines/features/recompute.ts'
import { fitGammaGamma, TRANSACTION_MODELS } from '../pipelines/features/clv/index.ts'
import { utcDay } from '../pipelines/features/order-facts.ts'
import { simulateBgNbd } from '../pipelines/ingest/synthetic/bgnbd.ts'
import { partitionFor } from '../common/eventlog/partitioner.ts'
import { customerKey } from '../common/events.ts'
import { UsageError } from '../cli/args.ts'
import { sleep } from '../common/retry.ts'
import { intFlag, percentile, progress, sig3, benchFlags } from './common.ts'

const FLAGS = {
  customers: { type: 'string' },
  orders: { type: 'string' },
  'stream-customers': { type: 'string' },
  'freshness-orders': { type: 'string' },
  rate: { type: 'string' },
  batch: { type: 'string' },
  runtime: { type: 'string' },
  only: { type: 'string' },
  'state-orders': { type: 'string' },
  'state-customers': { type: 'string' },
  'settle-s': { type: 'string' },
} as const

/**
 * The targets each figure is printed beside (the speed issue's). `state_mb` is the consumer's own
 * memory (JS heap and buffers); the RSS is printed beside it, since embedded chdb shares the process.
 */
export const FEATURE_TARGETS = { recompute_s: 15, events_per_s: 100_000, freshness_p99_ms: 250, fit_s: 2, state_mb: 1024 } as const
const mark = (ok: boolean) => (ok ? '✓' : '✗')

const HELP = `usage: cdp bench features [--customers N] [--orders N] [--stream-customers N] [--freshness-orders N] [--rate N] [--batch N] [--runtime embedded|kafka] [--state-orders N] [--state-customers N] [--settle-s N] [--only a,b,c,d]

(a) full recompute of --customers (1,000,000) customers with --orders (10,000,000) orders,
    rows written --batch (10,000) at a time;
(b) incremental throughput over the history of --stream-customers (1,000,000) generated customers
    (about 4.9 million events: the scale of (a), and the consumer's start, 1.5-2 s, a small part
    of the time; at 100,000 customers it was a third),
    then freshness of --freshness-orders (3,000) first orders published at --rate (1,000) per second;
(c) CLV fit time on the customers of (a) and on as many drawn from BG/NBD with dropout;
(d) RSS growth of the feature consumer holding --state-orders (10,000,000) order facts of
    --state-customers (1,000,000) customers, loaded and after one tick: at once, and again after
    --settle-s (45) seconds idle, once the allocators have returned the load's or the tick's
    working memory.
Output: progress on stderr; a table and one JSON line on stdout.
`

const secs = (ms: number) => Math.round(ms) / 1000


function freshConfig(runtime: 'embedded' | 'distributed'): { config: Config; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdp-bench-features-'))
  const config = loadConfig(process.env, { runtime, dataDir: dir, logLevel: 'warn', batchSize: 5000, featuresTickMs: 3_600_000 })
  return { config, dir }
}

// ---------------------------------------------------------------------------------------------
/** Waits (up to `maxMs`) until the store runs no merge or mutation; returns how long that took. */
async function storeIdle(store: Store, maxMs: number): Promise<number> {
  const start = performance.now()
  for (;;) {
    const rs = await store.query({ query: 'SELECT (SELECT count() FROM system.merges) + (SELECT count() FROM system.mutations WHERE NOT is_done) AS busy', format: 'JSONEachRow' })
    const [row] = await rs.json<{ busy: string | number }>()
    if (Number(row?.busy ?? 0) === 0 || performance.now() - start > maxMs) return performance.now() - start
    await new Promise((r) => setTimeout(r, 500))
  }
}

// (a) and (c)

/** Customers and orders of one tenant written straight into the raw projections by SQL (seconds, not minutes). */
export async function seedTenant(store: Store, tenant: number, customers: number, orders: number): Promise<void> {
  // Customer of an order: skewed (u² puts more orders on low ids), so frequencies range from 1 to hundreds.
  // Placed times: uniform over the two years before 2025-07-01; 2 % cancelled, 3 % partially refunded.
  await store.command({
    query: `INSERT INTO customers (tenant_id, customer_id, last_event_id, email, source, updated_at, version)
            SELECT {t:UInt64}, number + 1, concat('c', toString(number)), concat('c', toString(number + 1), '@example.com'), 'bench',
                   toDateTime64('2023-07-01 00:00:00', 3, 'UTC'), 1
            FROM numbers({n:UInt64})`,
    query_params: { t: tenant, n: customers },
  })
  await store.command({
    query: `INSERT INTO orders (tenant_id, customer_id, order_id, last_event_id, status, total, refunded_amount, currency, items_count, placed_at, updated_at, is_cancelled, source, version)
            SELECT {t:UInt64}, customer_id, concat('o', toString(number)), concat('e', toString(number)), 'paid',
                   toDecimal64(if(refunded, total_raw * 0.5, total_raw), 2), NULL, 'ARS', 1, placed, placed, cancelled, 'bench',
                   toUInt64(toUnixTimestamp64Milli(placed)) * 4
            FROM (
                SELECT number,
                       1 + toUInt64(floor({c:UInt64} * pow((cityHash64(number, 'c') % 1000000) / 1000000, 2))) AS customer_id,
                       toDecimal64(5 + (cityHash64(number, 'v') % 2000000) / 100, 2) AS total_raw,
                       cityHash64(number, 'x') % 100 < 2 AS cancelled,
                       cityHash64(number, 'r') % 100 < 3 AS refunded,
                       fromUnixTimestamp64Milli(toInt64(1688169600000 + cityHash64(number, 't') % 63158400000), 'UTC') AS placed
                FROM numbers({n:UInt64})
            )`,
    query_params: { t: tenant, n: orders, c: customers },
  })
}

async function benchRecompute(customers: number, orders: number, batch: number) {
  const { config, dir } = freshConfig('embedded')
  const logger = createLogger({ level: process.env.LOG_LEVEL === 'info' || process.env.LOG_LEVEL === 'debug' ? process.env.LOG_LEVEL : 'warn' })
  const rt = await openRuntime(config, logger)
  const tenant = 77
  try {
    progress(`(a) seeding ${customers.toLocaleString('en')} customers and ${orders.toLocaleString('en')} orders in ClickHouse ...`)
    let t = performance.now()
    await seedTenant(rt.store, tenant, customers, orders)
    const seedMs = performance.now() - t
    const now = Date.UTC(2025, 6, 1)
    const engine = createRecomputeEngine({ store: rt.store, logger, partitions: config.partitions, now: () => now })
    // A tenant's orders arrive over months, and its parts are merged long before a recompute; ten
    // million rows seeded a second ago are not. The recompute is timed once the store is idle.
    const settleMs = await storeIdle(rt.store, 300_000)
    progress(`(a) seeded in ${secs(seedMs)} s, merged in ${secs(settleMs)} s more; full recompute (rfm, clv, churn; batches of ${batch}) ...`)
    let last = 0
    t = performance.now()
    const results = await engine.run(tenant, {
      analyses: ['rfm', 'clv', 'churn'],
      batchSize: batch,
      force: true,
      signal: new AbortController().signal,
      onProgress: (done, total) => {
        if (done - last >= total / 10 || done === total) {
          last = done
          progress(`(a) rows written ${done.toLocaleString('en')}/${total.toLocaleString('en')}`)
        }
      },
    })
    const recomputeMs = performance.now() - t

    progress('(c) loading the aggregates of (a) for the fit timing ...')
    let aggs = (await loadTenantCustomers(rt.store, tenant)).map((c) => c.agg).filter((a) => a.orderCount > 0)
    const today = utcDay(now)
    const data = aggs.map((a) => ({ x: a.repeatPurchases, tx: a.repeatSpanDays, T: Math.max(today - a.firstDay!, a.repeatSpanDays) }))
    const spend = aggs.filter((a) => a.repeatPurchases > 0 && a.repeatAvgCents > 0).map((a) => ({ x: a.repeatPurchases, zbar: a.repeatAvgCents / 100 }))
    aggs = [] // the fits read `data` and `spend` only
    // The fits are timed with no merge or mutation of the store running beside them.
    const idleMs = await storeIdle(rt.store, 120_000)
    progress(`(c) store idle after ${secs(idleMs)} s of background merges; timing the fits ...`)
    const fits: Record<string, { seconds: number; params: unknown; patterns?: number; converged?: boolean }> = {}
    for (const name of ['bgnbd', 'mbgnbd'] as const) {
      t = performance.now()
      const fit = TRANSACTION_MODELS[name].fit(data)
      fits[name] = { seconds: secs(performance.now() - t), params: fit.params, patterns: fit.patterns, converged: fit.converged }
      progress(`(c) ${name}: ${fits[name]!.seconds} s over ${fit.patterns.toLocaleString('en')} distinct (x, t_x, T) patterns, ${fit.evaluations} likelihood evaluations`)
    }
    // Real-like data with dropout: as many customers drawn from BG/NBD (day-scale parameters of a
    // shop whose buyers order every few months and one in four stops after each purchase).
    const drawn = simulateBgNbd(data.length, { r: 0.5, alpha: 60, a: 0.9, b: 3 }, 730, 17)
    for (const name of ['bgnbd', 'mbgnbd'] as const) {
      t = performance.now()
      const fit = TRANSACTION_MODELS[name].fit(drawn)
      fits[`${name}_dropout`] = { seconds: secs(performance.now() - t), params: fit.params, patterns: fit.patterns, converged: fit.converged }
      progress(`(c) ${name} on data with dropout: ${fits[`${name}_dropout`]!.seconds} s over ${fit.patterns.toLocaleString('en')} patterns`)
    }
    t = performance.now()
    const gg = fitGammaGamma(spend)
    fits.gammagamma = { seconds: secs(performance.now() - t), params: gg.params }
    progress(`(c) gamma-gamma: ${fits.gammagamma!.seconds} s over ${spend.length.toLocaleString('en')} repeat buyers`)
    return {
      a: {
        customers,
        orders,
        batch,
        seed_s: secs(seedMs),
        settle_s: secs(settleMs),
        recompute_s: secs(recomputeMs),
        customers_per_s: sig3(customers / (recomputeMs / 1000)),
        phases: { rfm_s: results.rfm!.processing_time, clv_s: results.clv!.processing_time, churn_s: results.churn!.processing_time },
        segments: results.rfm!.segments,
      },
      c: { customers: data.length, repeat_buyers: spend.length, ...fits },
    }
  } finally {
    await rt.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

// ---------------------------------------------------------------------------------------------
// (b)


async function benchIncremental(runtime: 'embedded' | 'distributed', streamCustomers: number, freshnessOrders: number, rate: number) {
  const { config, dir } = freshConfig(runtime)
  const logger = createLogger({ level: 'warn' })
  const rt = await openRuntime(config, logger)
  const tenant = 1_000_000 + Math.floor(Math.random() * 1e6)
  const group = `bench-features-${randomUUID().slice(0, 8)}`
  try {
    progress(`(b) generating and publishing the history of ${streamCustomers.toLocaleString('en')} customers ...`)
    let events = 0
    let chunk: { orders: OrderEvent[]; customers: CustomerUpserted[] } = { orders: [], customers: [] }
    const flush = async () => {
      await publishEvents(rt.log, rt.codec, 'customers', chunk.customers)
      await publishEvents(rt.log, rt.codec, 'orders', chunk.orders)
      chunk = { orders: [], customers: [] }
    }
    for (const e of generateEvents({ tenantId: tenant, customers: streamCustomers, seed: 'bench-features', start: new Date(Date.UTC(2024, 0, 1)), end: new Date(Date.UTC(2025, 6, 1)) })) {
      if (e.topic === 'orders') chunk.orders.push(e.value as OrderEvent)
      else chunk.customers.push(e.value as CustomerUpserted)
      events++
      if (chunk.orders.length + chunk.customers.length >= 10_000) await flush()
    }
    await flush()
    const lag = async () => (await groupLag(rt.log, group, TOPICS.orders.name)) + (await groupLag(rt.log, group, TOPICS.customers.name))
    progress(`(b) ${events.toLocaleString('en')} events published; consuming the backlog ...`)
    let t = performance.now()
    const cpu0 = process.cpuUsage()
    const features = await runFeatures(rt, { name: group, tickMs: 3_600_000 })
    // The consumer's start (joining, restoring its partitions, the first model fit) is in the
    // throughput; the time to its first commit is printed beside it.
    let firstCommitMs: number | null = null
    for (;;) {
      const left = await lag()
      if (left === 0) break
      if (firstCommitMs === null && left < events) firstCommitMs = performance.now() - t
      await new Promise((r) => setTimeout(r, 50))
    }
    const backlogMs = performance.now() - t
    const cpu = process.cpuUsage(cpu0)
    // The freshness of a shop's steady trickle of orders, once the store has merged what the
    // backlog wrote (as (a) is timed once the seeded parts are merged), not ClickHouse's catch-up
    // on the backlog's parts: 0.5–1.1 s after 4.9 million events. The time it took is printed.
    const mergeMs = await storeIdle(rt.store, 300_000)
    progress(`(b) backlog: ${sig3(events / (backlogMs / 1000))} events/s; its parts merged in ${secs(mergeMs)} s more; freshness of ${freshnessOrders} first orders at ${rate}/s ...`)

    // Freshness: first orders of new customers, each answered by exactly one SegmentChanged.
    const sentAt = new Map<number, number>()
    const latencies: number[] = []
    const readGroup = `${group}-changes`
    const reader = await rt.log.consume({
      groupId: readGroup,
      topics: [TOPICS.segmentChanges.name],
      fromBeginning: false,
      maxBatch: 1000,
      onBatch: async (b) => {
        const at = performance.now()
        for (const r of b.records) {
          const e = await rt.codec.decode<SegmentChanged>(TOPICS.segmentChanges.name, r.value)
          const sent = e.tenant_id === tenant ? sentAt.get(e.customer_id) : undefined
          if (sent !== undefined && e.previous_segment === null) {
            latencies.push(at - sent)
            sentAt.delete(e.customer_id)
          }
        }
      },
    })
    await new Promise((r) => setTimeout(r, 1500)) // let the reader join before the first order
    const perTick = Math.max(1, Math.round(rate / 20))
    t = performance.now()
    for (let i = 0; i < freshnessOrders; ) {
      const batch: OrderEvent[] = []
      for (let k = 0; k < perTick && i < freshnessOrders; k++, i++) {
        const customer = 10_000_000 + i
        const at = Date.now()
        batch.push({
          event_id: randomUUID(), tenant_id: tenant, occurred_at: at, source: 'bench', event_type: 'placed', order_id: `fresh-${i}`,
          customer_id: customer, status: 'paid', total: '1500.00', currency: 'ARS', refunded_amount: null,
          items: [{ sku: 'sku-1', name: null, quantity: 1, unit_price: '1500.00' }], placed_at: at,
        })
      }
      const sent = performance.now()
      for (const o of batch) sentAt.set(o.customer_id, sent)
      await publishEvents(rt.log, rt.codec, 'orders', batch)
      const next = t + (i * 1000) / rate
      const wait = next - performance.now()
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    }
    const deadline = performance.now() + 60_000
    while (sentAt.size && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100))
    await reader.stop()
    await features.stop()
    latencies.sort((a, b) => a - b)
    return {
      runtime,
      events,
      backlog_s: secs(backlogMs),
      events_per_s: sig3(events / (backlogMs / 1000)),
      first_commit_s: firstCommitMs === null ? null : secs(firstCommitMs),
      // The process's CPU over the backlog, every thread (the consumer's, its decode thread, V8's
      // collector threads, chdb's): steadier than the rate on a machine whose speed moves.
      backlog_cpu_s: secs((cpu.user + cpu.system) / 1000),
      merged_after_s: secs(mergeMs),
      freshness: { samples: latencies.length, missing: sentAt.size, rate_per_s: rate, p50_ms: Math.round(percentile(latencies, 50)), p99_ms: Math.round(percentile(latencies, 99)), max_ms: Math.round(latencies.at(-1) ?? NaN) },
    }
  } finally {
    await rt.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

// ---------------------------------------------------------------------------------------------
// (d)

/**
 * The feature consumer's state for `orders` order facts: facts seeded into its state store by SQL
 * (`customers` customers, spread over the partitions), then one first order per partition
 * published, so the consumer loads every partition as it would after a restart or a rebalance.
 * RSS is read once the group has no lag.
 */
/** A full collection, so the heap holds only what is live (`--expose-gc` is turned on here when node was not started with it). */
function collectGarbage(): void {
  if (!global.gc) v8.setFlagsFromString('--expose-gc')
  ;(global.gc ?? (vm.runInNewContext('gc') as () => void))()
}

async function benchState(orders: number, customers: number, settleS: number) {
  const { config, dir } = freshConfig('embedded')
  const logger = createLogger({ level: 'warn' })
  const rt = await openRuntime(config, logger)
  const tenant = 88
  const group = `bench-state-${randomUUID().slice(0, 8)}`
  try {
    progress(`(d) seeding ${orders.toLocaleString('en')} order facts of ${customers.toLocaleString('en')} customers ...`)
    await rt.store.command({
      query: `INSERT INTO feature_order_facts (partition, tenant_id, customer_id, order_id, version, event_id, placed_at, total_cents, cancelled)
              SELECT customer_id % {p:UInt16}, {t:UInt64}, customer_id, concat('o', toString(number)), 1, concat('e', toString(number)),
                     toDateTime64('2023-07-01 00:00:00', 3, 'UTC') + toIntervalSecond(number % 63072000), 1000 + number % 90000, number % 50 = 0
              FROM (SELECT number, 1 + (number * 7919) % {c:UInt64} AS customer_id FROM numbers({n:UInt64}))`,
      query_params: { p: config.partitions, t: tenant, c: customers, n: orders },
    })
    // The seeding's own working memory is returned first, so that the growth is the consumer's.
    progress(`(d) seeded; idle ${settleS} s before the baseline ...`)
    await sleep(settleS * 1000)
    collectGarbage()
    const before = process.memoryUsage()
    const t = performance.now()
    const features = await runFeatures(rt, { name: group, tickMs: 3_600_000 })
    // One new customer's first order per partition: each partition's state is loaded to fold it.
    const seen = new Set<number>()
    const batch: OrderEvent[] = []
    for (let id = customers + 1; seen.size < config.partitions; id++) {
      const p = partitionFor(customerKey(tenant, id), config.partitions, () => 0)
      if (seen.has(p)) continue
      seen.add(p)
      const at = Date.UTC(2025, 5, 30)
      batch.push({
        event_id: randomUUID(), tenant_id: tenant, occurred_at: at, source: 'bench', event_type: 'placed', order_id: `state-${id}`,
        customer_id: id, status: 'paid', total: '1500.00', currency: 'ARS', refunded_amount: null,
        items: [{ sku: 'sku-1', name: null, quantity: 1, unit_price: '1500.00' }], placed_at: at,
      })
    }
    await publishEvents(rt.log, rt.codec, 'orders', batch)
    while ((await groupLag(rt.log, group, TOPICS.orders.name)) > 0) await new Promise((r) => setTimeout(r, 200))
    const loadMs = performance.now() - t
    const mb = (x: number) => Math.round(x / 1048576)
    const measure = () => {
      collectGarbage()
      const m = process.memoryUsage()
      return { rss_mb: mb(m.rss), rss_growth_mb: mb(m.rss - before.rss), state_mb: mb(m.heapUsed + m.external - before.heapUsed - before.external), heap_used_mb: mb(m.heapUsed) }
    }
    const loaded = measure()
    const settled = async () => {
      await sleep(settleS * 1000)
      return mb(process.memoryUsage().rss - before.rss)
    }
    progress(`(d) loaded in ${secs(loadMs)} s; RSS grew ${loaded.rss_growth_mb} MB at once; idle ${settleS} s ...`)
    const loadedSettled = await settled()
    progress(`(d) state of ${orders.toLocaleString('en')} orders loaded in ${secs(loadMs)} s: ${loaded.state_mb} MB of heap; RSS ${loaded.rss_mb} MB (${mb(before.rss)} MB before); ticking ...`)
    const tickStarted = performance.now()
    await features.tick()
    const tickMs = performance.now() - tickStarted
    const ticked = measure()
    progress(`(d) after a tick over every customer (${secs(tickMs)} s): ${ticked.state_mb} MB of heap; RSS grew ${ticked.rss_growth_mb} MB at once; idle ${settleS} s ...`)
    const tickedSettled = await settled()
    await features.stop()
    return {
      orders,
      customers,
      partitions: config.partitions,
      load_s: secs(loadMs),
      tick_s: secs(tickMs),
      rss_before_mb: mb(before.rss),
      settle_s: settleS,
      loaded: { ...loaded, rss_growth_settled_mb: loadedSettled },
      ticked: { ...ticked, rss_growth_settled_mb: tickedSettled },
      state_mb: Math.max(loaded.state_mb, ticked.state_mb),
      rss_settled_mb: Math.max(loadedSettled, tickedSettled),
      target_mb: FEATURE_TARGETS.state_mb,
    }
  } finally {
    await rt.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

// ---------------------------------------------------------------------------------------------

export async function run(argv: string[]): Promise<number> {
  const values = benchFlags(argv, FLAGS, HELP)
  if (!values) return 0
  const runtime = values.runtime ?? 'embedded'
  if (runtime !== 'embedded' && runtime !== 'kafka') throw new UsageError(`--runtime must be embedded or kafka, got '${runtime}'`)
  if (runtime === 'kafka' && !(process.env.KAFKA_BROKERS && process.env.SCHEMA_REGISTRY_URL)) throw new UsageError('--runtime kafka needs KAFKA_BROKERS and SCHEMA_REGISTRY_URL')
  const only = new Set((values.only ?? 'a,b,c,d').split(',').map((s) => s.trim()))
  const customers = intFlag(values.customers, 'customers', 1_000_000)
  const orders = intFlag(values.orders, 'orders', 10_000_000)
  const batch = intFlag(values.batch, 'batch', 10_000)
  const out: Record<string, unknown> = { machine: { cpus: os.cpus().length, load1: os.loadavg()[0], node: process.version } }
  if (only.has('a') || only.has('c')) Object.assign(out, await benchRecompute(customers, orders, batch))
  if (only.has('b')) out.b = await benchIncremental(runtime === 'kafka' ? 'distributed' : 'embedded', intFlag(values['stream-customers'], 'stream-customers', 1_000_000), intFlag(values['freshness-orders'], 'freshness-orders', 3_000), intFlag(values.rate, 'rate', 1_000))
  if (only.has('d')) out.d = await benchState(intFlag(values['state-orders'], 'state-orders', 10_000_000), intFlag(values['state-customers'], 'state-customers', 1_000_000), intFlag(values['settle-s'], 'settle-s', 45))

  const a = out.a as Awaited<ReturnType<typeof benchRecompute>>['a'] | undefined
  const b = out.b as Awaited<ReturnType<typeof benchIncremental>> | undefined
  const c = out.c as ({ customers: number } & Record<'bgnbd' | 'mbgnbd' | 'bgnbd_dropout' | 'mbgnbd_dropout' | 'gammagamma', { seconds: number }>) | undefined
  const d = out.d as Awaited<ReturnType<typeof benchState>> | undefined
  const T = FEATURE_TARGETS
  const lines = ['', '| figure | value | target |', '|---|---|---|']
  if (a) lines.push(`| (a) full recompute, ${a.customers.toLocaleString('en')} customers / ${a.orders.toLocaleString('en')} orders | ${a.recompute_s} s (${a.customers_per_s.toLocaleString('en')} customers/s) | < ${T.recompute_s} s ${mark(a.recompute_s < T.recompute_s)} |`)
  if (b) {
    lines.push(`| (b) incremental throughput (${b.runtime}, ${b.events.toLocaleString('en')} events; first commit after ${b.first_commit_s ?? '–'} s; ${b.backlog_cpu_s} CPU-s) | ${b.events_per_s.toLocaleString('en')} events/s | ≥ ${T.events_per_s.toLocaleString('en')} ${mark(b.events_per_s >= T.events_per_s)} |`)
    lines.push(`| (b) freshness order → segment change (${b.freshness.samples} samples at ${b.freshness.rate_per_s}/s) | p50 ${b.freshness.p50_ms} ms, p99 ${b.freshness.p99_ms} ms | p99 < ${T.freshness_p99_ms} ms ${mark(b.freshness.p99_ms < T.freshness_p99_ms && b.freshness.missing === 0)} |`)
  }
  if (c) {
    lines.push(`| (c) fit at ${c.customers.toLocaleString('en')} customers, no dropout | BG/NBD ${c.bgnbd.seconds} s, MBG/NBD ${c.mbgnbd.seconds} s, Gamma-Gamma ${c.gammagamma.seconds} s | BG/NBD < ${T.fit_s} s ${mark(c.bgnbd.seconds < T.fit_s)} |`)
    lines.push(`| (c) fit at ${c.customers.toLocaleString('en')} customers drawn with dropout | BG/NBD ${c.bgnbd_dropout.seconds} s, MBG/NBD ${c.mbgnbd_dropout.seconds} s | BG/NBD < ${T.fit_s} s ${mark(c.bgnbd_dropout.seconds < T.fit_s)} |`)
  }
  if (d) {
    lines.push(`| (d) feature state, ${d.orders.toLocaleString('en')} orders of ${d.customers.toLocaleString('en')} customers (JS heap and buffers it added) | ${d.loaded.state_mb.toLocaleString('en')} MB loaded (${d.load_s} s), ${d.ticked.state_mb.toLocaleString('en')} MB after a tick (${d.tick_s} s) | ≤ ${T.state_mb.toLocaleString('en')} MB ${mark(d.state_mb <= T.state_mb)} |`)
    lines.push(`| (d) process RSS growth, embedded chdb's own memory included (${d.rss_before_mb} MB before) | at once: ${d.loaded.rss_growth_mb.toLocaleString('en')} MB loaded, ${d.ticked.rss_growth_mb.toLocaleString('en')} MB after the tick; after ${d.settle_s} s idle: ${d.loaded.rss_growth_settled_mb.toLocaleString('en')} MB loaded, ${d.ticked.rss_growth_settled_mb.toLocaleString('en')} MB after the tick | settled ≤ ${T.state_mb.toLocaleString('en')} MB ${mark(d.rss_settled_mb <= T.state_mb)} |`)
  }
  process.stdout.write(`${lines.join('\n')}\n\n${JSON.stringify(out)}\n`)
  return 0
}
