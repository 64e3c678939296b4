/**
 * `cdp bench sync` (npm run bench:sync): one full connector sync, end to end, on the embedded
 * runtime (chdb + on-disk log).
 *
 * The commerce-platform simulator runs in this process with --customers (5,000) customers and a
 * year of history ending 2025-06-01 (the same orders every run). A commerce_platform integration
 * with its credentials is stored through the IntegrationStore (sealed with a throwaway keyring)
 * and a full sync of products, customers and orders is queued on the SyncQueue, as the API's
 * POST /sync does. Timed: `runConnectors(rt, …).runOnce()`, which
 * claims and runs that job: platform requests, mapping, Avro publishing, checkpoints. The
 * analysis trigger is a no-op that only records the call, so the figure is the sync alone.
 *
 * The projection pipeline (orders and customers topics → ClickHouse) runs alongside from the start,
 * as `cdp start` runs it; "to ClickHouse" is the time from the sync's start until
 * `uniqExact(order_id)` of the tenant in `orders` equals the orders the sync published.
 * `--no-projection` leaves it out (the sync alone on the cores).
 *
 * Progress on stderr; a table and one JSON line on stdout.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { loadConfig } from '../common/config.ts'
import { createLogger } from '../common/logger.ts'
import { openRuntime } from '../common/runtime/context.ts'
import { runPipeline, type RunningPipeline } from '../common/runtime/pipeline.ts'
import { parseKeyring } from '../common/secrets.ts'
import type { Store } from '../common/store/clickhouse.ts'
import { projectionPipeline } from '../pipelines/projection/pipeline.ts'
import { runConnectors } from '../pipelines/connectors/run.ts'
import { SyncQueue, type EntityStats, type SyncJob } from '../pipelines/connectors/queue.ts'
import { IntegrationStore } from '../pipelines/connectors/store.ts'
import { applyConfiguration, configuredEntities, defaultConfiguration } from '../pipelines/connectors/schemas.ts'
import * as commerceSim from '../services/simulators/commerce-platform/index.ts'
import { UsageError } from '../cli/args.ts'
import { intFlag, loadAverages, machineInfo, progress, sig3, benchFlags } from './common.ts'

const FLAGS = {
  customers: { type: 'string' },
  'page-size': { type: 'string' },
  'rate-limit': { type: 'string' },
  seed: { type: 'string' },
  'no-projection': { type: 'boolean' },
} as const

const HELP = `usage: cdp bench sync [--customers N] [--page-size N] [--rate-limit N] [--seed S] [--no-projection]

One full sync (products, customers, orders) from the in-process commerce-platform simulator
(a year of history ending 2025-06-01) into the embedded runtime, through the connectors' runner.

  --customers N    customers of the simulated shop (default 5000; about 1.9 orders each)
  --page-size N    the integration's batch_size, records per platform request (1..100, default 100)
  --rate-limit N   the platform's requests per minute per app key (default 600, the simulator's);
                   a sync that hits it stops, waits for Retry-After and resumes, as the runner does
  --seed S         the simulator's seed (default 'commerce-platform')
  --no-projection  do not run the projection alongside (no "to ClickHouse" figure)

Progress on stderr; a table and one JSON line on stdout.
`

const TENANT = 1
/** The shop's history ends here (a year of it), so every run syncs the same orders. */
const HISTORY_END = new Date(Date.UTC(2025, 5, 1))
const secs = (ms: number) => Math.round(ms) / 1000
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

async function distinctOrders(store: Store, tenant: number): Promise<number> {
  const rs = await store.query({ query: 'SELECT uniqExact(order_id) AS n FROM orders WHERE tenant_id = {t:UInt64}', query_params: { t: tenant }, format: 'JSONEachRow' })
  const [row] = await rs.json<{ n: number | string }>()
  return Number(row?.n ?? 0)
}

export async function run(argv: string[]): Promise<number> {
  const values = benchFlags(argv, FLAGS, HELP)
  if (!values) return 0
  const customers = intFlag(values.customers, 'customers', 5_000)
  const pageSize = intFlag(values['page-size'], 'page-size', 100)
  if (pageSize > 100) throw new UsageError(`--page-size must be at most 100 (the platform's largest per_page), got ${pageSize}`)
  const rateLimit = intFlag(values['rate-limit'], 'rate-limit', 600)
  const seed = values.seed ?? commerceSim.DEFAULTS.seed
  const withProjection = !values['no-projection']
  const machine = machineInfo()
  const loadAtStart = loadAverages()

  progress(`simulating a shop of ${customers.toLocaleString('en')} customers ...`)
  let t = performance.now()
  const sim = await commerceSim.start({ customers, seed, end: HISTORY_END, rateLimit: { requests: rateLimit, windowMs: 60_000 } })
  progress(`simulator up in ${secs(performance.now() - t)} s at ${sim.url}`)

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdp-bench-sync-'))
  const config = loadConfig(process.env, { runtime: 'embedded', dataDir: dir, logLevel: 'warn', batchSize: 5000 })
  const logger = createLogger({ level: 'warn' })
  let projection: RunningPipeline | null = null
  let connectors: Awaited<ReturnType<typeof runConnectors>> | null = null
  try {
    const rt = await openRuntime(config, logger) // migrated
    try {
      // The integration as the API stores it, without the credential check against the platform.
      const secrets = parseKeyring(`bench:${randomBytes(32).toString('hex')}`)
      const integrations = new IntegrationStore(rt.store, secrets)
      const configuration = applyConfiguration(defaultConfiguration('commerce_platform'), { batch_size: pageSize, sync_interval: 'manual', initial_sync: false, webhook_notifications: false })
      const rec = await integrations.create({
        tenant_id: TENANT,
        integration_type: 'commerce_platform',
        account_name: sim.accountName,
        environment: sim.environment,
        account_key: `${sim.accountName}:${sim.environment}`,
        configuration,
        credentials: { account_name: sim.accountName, environment: sim.environment, app_key: commerceSim.DEFAULTS.appKey, app_token: commerceSim.DEFAULTS.appToken },
        webhook_secret: null,
      })
      const queue = new SyncQueue(rt.store)
      const job = await queue.enqueue({
        integration_id: rec.id,
        tenant_id: TENANT,
        kind: 'manual',
        sync_type: 'full',
        entities: configuredEntities('commerce_platform', configuration),
        date_from: null,
        date_to: null,
        scheduled_for: null,
        max_attempts: 1 + configuration.retry_attempts,
      })

      if (withProjection) {
        projection = await runPipeline(projectionPipeline(rt.store, { name: 'bench-sync-projection' }), { log: rt.log, codec: rt.codec, logger, fromBeginning: true, maxBatch: config.projectionBatchSize })
      }
      const analysed: number[] = []
      connectors = await runConnectors(rt, {
        secrets,
        triggerAnalysis: async (tenant) => void analysed.push(tenant),
        endpoints: { commercePlatform: sim.url, marketplace: 'http://127.0.0.1:9', searchAds: 'http://127.0.0.1:9', socialAds: 'http://127.0.0.1:9' },
        pollMs: 3_600_000,
      })

      const requestsBefore = sim.requestLog.length
      progress(`full sync of ${configuration.batch_size} records per page${withProjection ? ', projection alongside' : ''} ...`)
      t = performance.now()
      // A retriable failure (the platform's 429) puts the job back in the queue with a not_before
      // (Retry-After); the next tick resumes it from its checkpoint, as the runner's poll loop would.
      let attempts = 0
      let waitedMs = 0
      let done: SyncJob | null = null
      for (let ticks = 0; ticks < 2 * job.max_attempts; ticks++) {
        attempts += await connectors.runOnce()
        done = await queue.get(rec.id, job.sync_id)
        if (done?.status !== 'queued') break
        const wait = Math.max(0, done.not_before - Date.now()) + 50
        progress(`attempt ${attempts} stopped (${done.error?.error ?? 'no error'}); resuming from the checkpoint in ${secs(wait)} s ...`)
        waitedMs += wait
        await sleep(wait)
      }
      const syncMs = performance.now() - t
      if (done?.status !== 'success' || !done.stats) throw new Error(`the sync did not succeed after ${attempts} attempts: status ${done?.status}, error ${JSON.stringify(done?.error)}`)
      const requests = sim.requestLog.slice(requestsBefore)
      const stats = done.stats
      const entity = (e: 'products' | 'customers' | 'orders'): EntityStats => stats.entities[e] ?? { pages: 0, received: 0, expected: null, published: 0 }
      const orders = entity('orders').published
      const orderEvents = stats.events_published.orders
      const events = orderEvents + stats.events_published.customers
      progress(`sync done in ${secs(syncMs)} s: ${orders.toLocaleString('en')} orders, ${orderEvents.toLocaleString('en')} order events, ${requests.length} requests`)

      let toClickHouseMs: number | null = null
      if (projection) {
        const deadline = performance.now() + 120_000
        for (;;) {
          if ((await distinctOrders(rt.store, TENANT)) >= orders) {
            toClickHouseMs = performance.now() - t
            break
          }
          if (performance.now() > deadline) throw new Error(`the projection did not reach ${orders} orders within 120 s of the sync's end`)
          await sleep(100)
        }
        progress(`projection holds every order ${secs(toClickHouseMs)} s after the sync started`)
      }

      const result = {
        customers,
        customers_published: entity('customers').published,
        orders,
        order_events: orderEvents,
        customer_events: stats.events_published.customers,
        products: entity('products').published,
        pages: { products: entity('products').pages, customers: entity('customers').pages, orders: entity('orders').pages, page_size: pageSize },
        sync_s: secs(syncMs),
        orders_per_s: sig3(orders / (syncMs / 1000)),
        events_per_s: sig3(events / (syncMs / 1000)),
        order_events_per_s: sig3(orderEvents / (syncMs / 1000)),
        platform_requests: requests.length,
        platform_429: requests.filter((r) => r.status === 429).length,
        platform_ms_total: Math.round(requests.reduce((s, r) => s + r.durationMs, 0)),
        to_clickhouse_s: toClickHouseMs === null ? null : secs(toClickHouseMs),
        attempts,
        retry_wait_s: secs(waitedMs),
        analysis_triggered: analysed.length === 1 && analysed[0] === TENANT,
        integrity: { duplicates: stats.integrity.duplicates, total_mismatches: stats.integrity.total_mismatches, unknown_customers: stats.integrity.unknown_customers, invalid_records: stats.integrity.invalid_records },
        machine,
        loadavg: { start: loadAtStart, end: loadAverages() },
      }
      const n = (x: number) => x.toLocaleString('en')
      const lines = [
        '',
        '| figure | value |',
        '|---|---|',
        `| customers (published) | ${n(result.customers_published)} |`,
        `| orders | ${n(orders)} |`,
        `| order events published | ${n(orderEvents)} (+ ${n(result.customer_events)} customer events) |`,
        `| pages of ${pageSize} | ${n(result.pages.orders)} orders, ${n(result.pages.customers)} customers, ${n(result.pages.products)} products |`,
        `| sync | ${result.sync_s} s${attempts > 1 ? ` (${attempts} attempts; ${result.retry_wait_s} s waiting out the rate limit)` : ''} |`,
        `| orders/s | ${n(result.orders_per_s)} |`,
        `| events/s | ${n(result.events_per_s)} (order events ${n(result.order_events_per_s)}) |`,
        `| platform requests | ${n(result.platform_requests)} (${result.platform_429} answered 429; ${secs(result.platform_ms_total)} s inside the simulator) |`,
      ]
      if (result.to_clickhouse_s !== null) lines.push(`| to ClickHouse (sync start → every order in \`orders\`) | ${result.to_clickhouse_s} s |`)
      process.stdout.write(`${lines.join('\n')}\n\n${JSON.stringify(result)}\n`)
      return 0
    } finally {
      await connectors?.stop()
      await projection?.stop()
      await rt.close()
    }
  } finally {
    await sim.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
