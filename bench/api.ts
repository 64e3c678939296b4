/**
 * `npm run bench:api` (`cdp bench api`): latency of the analytics endpoints at 1,000,000 customers.
 *
 * 1. Seeds one tenant with --customers (1,000,000) customers and --orders (10,000,000) orders
 *    straight into ClickHouse (SQL), and computes its features with the processing engine.
 * 2. Starts the API as a separate process (`cdp start --roles api` on the same data dir).
 * 3. Waits for the API's tenant summary (docs/analytics-performance.md), then from this process
 *    sends --requests (200) requests per endpoint with --concurrency (8) in flight. The API's
 *    response cache is off, so every answer is computed. Each endpoint is measured unfiltered
 *    (answered from the tenant summary plus live row queries) and with a customer filter that
 *    changes per request (answered from the summary's customer columns, docs/analytics-
 *    performance.md); each after 20 warm-up requests; then one export of 50,000 rows as CSV.
 * Prints p50/p99 per endpoint beside the spec's targets (overview < 100 ms, detailed < 500 ms,
 * export < 2 s) as a table and one JSON line.
 */
import fs from 'node:fs'
import os from 'node:os'
import ExcelJS from 'exceljs'
import path from 'node:path'
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { loadConfig } from '../common/config.ts'
import { createLogger } from '../common/logger.ts'
import { openRuntime } from '../common/runtime/context.ts'
import { createRecomputeEngine } from '../pipelines/features/recompute.ts'
import { intFlag, percentile, progress, benchFlags } from './common.ts'
import { seedTenant } from './features.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const FLAGS = { customers: { type: 'string' }, orders: { type: 'string' }, requests: { type: 'string' }, concurrency: { type: 'string' }, 'data-dir': { type: 'string' } } as const
const HELP = `usage: cdp bench api [--customers N] [--orders N] [--requests N] [--concurrency N] [--data-dir DIR]

--data-dir DIR  seed into DIR and keep it; a DIR seeded before (with the same sizes) is reused
                as it is, so a second run measures the endpoints without seeding again.
`
const TENANT = 77


interface Target {
  name: string
  kind: 'overview' | 'detailed'
  url(i: number): string
}

const day = (offset: number) => new Date(Date.UTC(2025, 6, 1) - offset * 86_400_000).toISOString().slice(0, 10)

const A = '/api/v2/cdp/analytics'
const periods = ['today', 'week', 'month', 'year']
/** Request i of each target; "filtered" targets narrow the customers with a filter that changes per request. */
const TARGETS: Target[] = [
  { name: 'rfm', kind: 'overview', url: (i) => `${A}/rfm?tenant_id=${TENANT}&offset=${i}` },
  { name: 'rfm filtered', kind: 'overview', url: (i) => `${A}/rfm?tenant_id=${TENANT}&min_value=${i}` },
  { name: 'clv', kind: 'overview', url: (i) => `${A}/clv?tenant_id=${TENANT}&offset=${i}` },
  { name: 'clv filtered', kind: 'overview', url: (i) => `${A}/clv?tenant_id=${TENANT}&min_value=${i}` },
  { name: 'churn', kind: 'overview', url: (i) => `${A}/churn?tenant_id=${TENANT}&offset=${i}` },
  { name: 'churn filtered', kind: 'overview', url: (i) => `${A}/churn?tenant_id=${TENANT}&days_inactive=${i % 200}` },
  { name: 'dashboard', kind: 'overview', url: (i) => `${A}/dashboard?tenant_id=${TENANT}&period=${periods[i % 4]}` },
  { name: 'dashboard filtered', kind: 'overview', url: (i) => `${A}/dashboard?tenant_id=${TENANT}&period=${periods[i % 4]}&min_value=${i}` },
  { name: 'segments/performance', kind: 'detailed', url: () => `${A}/segments/performance?tenant_id=${TENANT}` },
  { name: 'segments/performance filtered', kind: 'detailed', url: (i) => `${A}/segments/performance?tenant_id=${TENANT}&min_value=${i}` },
  { name: 'cohorts', kind: 'detailed', url: () => `${A}/cohorts?tenant_id=${TENANT}` },
  { name: 'cohorts other window', kind: 'detailed', url: (i) => `${A}/cohorts?tenant_id=${TENANT}&end_date=${day(i % 60)}` },
  { name: 'customers', kind: 'detailed', url: (i) => `/api/cdp/v2/customers?tenant_id=${TENANT}&offset=${i * 50}` },
]

const TARGET_MS = { overview: 100, detailed: 500, export: 2000 }


async function load(base: string, token: string, t: Target, requests: number, concurrency: number) {
  const latencies: number[] = []
  const statuses = new Map<number, number>()
  let next = 0
  const worker = async () => {
    while (next < requests) {
      const i = next++
      const start = performance.now()
      const res = await fetch(base + t.url(i), { headers: { authorization: `Bearer ${token}` } })
      await res.arrayBuffer()
      latencies.push(performance.now() - start)
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  latencies.sort((a, b) => a - b)
  return { p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)), statuses: Object.fromEntries(statuses) }
}

/** `BENCH_API_LOG=info|debug|…` shows the API's own log at that level (any other value: info); unset, warnings only, not shown. */
function apiLogLevel(): string {
  const v = process.env.BENCH_API_LOG
  if (!v) return 'warn'
  return ['fatal', 'error', 'warn', 'info', 'debug', 'trace'].includes(v) ? v : 'info'
}

async function startApi(dataDir: string, token: string): Promise<{ child: ChildProcess; base: string }> {
  const port = 20000 + Math.floor(Math.random() * 20000)
  const env: NodeJS.ProcessEnv = { ...process.env, CDP_DATA_DIR: dataDir, CDP_ROLES: 'api', CDP_API_PORT: String(port), CDP_ADMIN_TOKEN: token, LOG_LEVEL: apiLogLevel(), NODE_ENV: 'development',
    // Latency, not the limiter, is measured: lift the per-key and per-IP limits for the load.
    CDP_RATE_LIMIT_ANALYTICS_PER_MINUTE: '1000000', CDP_RATE_LIMIT_DEMOGRAPHICS_PER_15MIN: '1000000',
    // Every answer computed, none replayed from the response cache.
    CDP_ANALYTICS_CACHE_ENTRIES: '0' }
  // With this process's heap flags (npm run bench:api passes the ones npm start does), not its others (--inspect).
  const heapFlags = process.execArgv.filter((a) => /^--max-(semi|old)-space-size=/.test(a))
  const child = spawn(process.execPath, [...heapFlags, path.join(ROOT, 'bin/cdp.mjs'), 'start'], { env, stdio: ['ignore', process.env.BENCH_API_LOG ? 'inherit' : 'ignore', 'inherit'] })
  child.on('exit', (code, signal) => progress(`the API exited (${signal ?? code})`))
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 120_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the API exited with ${child.exitCode}`)
    try {
      if ((await fetch(`${base}/health`)).ok) return { child, base }
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error('the API did not start within 120 s')
    await new Promise((r) => setTimeout(r, 250))
  }
}

/** Polls the API's metrics until a tenant summary is usable; returns how long that took. */
async function waitForSummary(base: string): Promise<number> {
  const start = performance.now()
  for (;;) {
    let text = ''
    try {
      text = await (await fetch(`${base}/metrics`)).text()
    } catch (err) {
      progress(`metrics not read (${(err as Error & { cause?: Error }).cause?.message ?? err}); retrying`)
    }
    // The summary, and each analytics worker's copy of it prepared (they answer the filtered requests).
    const workers = Number(/^cdp_analytics_workers (\d+)/m.exec(text)?.[1] ?? 0)
    const ready = Number(/^cdp_analytics_worker_summaries_ready (\d+)/m.exec(text)?.[1] ?? 0)
    if (/^cdp_analytics_summary_tenants [1-9]/m.test(text) && ready >= workers) return Math.round(performance.now() - start)
    if (performance.now() - start > 300_000) throw new Error('no tenant summary within 300 s')
    await new Promise((r) => setTimeout(r, 500))
  }
}

export async function run(argv: string[]): Promise<number> {
  const values = benchFlags(argv, FLAGS, HELP)
  if (!values) return 0
  const customers = intFlag(values.customers, 'customers', 1_000_000)
  const orders = intFlag(values.orders, 'orders', 10_000_000)
  const requests = intFlag(values.requests, 'requests', 200)
  const concurrency = intFlag(values.concurrency, 'concurrency', 8)
  const keep = values['data-dir'] !== undefined
  const dataDir = keep ? path.resolve(values['data-dir']!) : fs.mkdtempSync(path.join(os.tmpdir(), 'cdp-bench-api-'))
  const seededMark = path.join(dataDir, `bench-api-seeded-${customers}-${orders}.json`)
  const token = randomBytes(24).toString('base64url')
  let child: ChildProcess | null = null
  try {
    const config = loadConfig(process.env, { runtime: 'embedded', dataDir, logLevel: 'warn' })
    const logger = createLogger({ level: 'warn' })
    const rt = await openRuntime(config, logger)
    let exportMin = 0
    try {
      if (keep && fs.existsSync(seededMark)) {
        exportMin = (JSON.parse(fs.readFileSync(seededMark, 'utf8')) as { exportMin: number }).exportMin
        progress(`reusing the tenant seeded in ${dataDir}`)
      } else {
        progress(`seeding ${customers.toLocaleString('en')} customers and ${orders.toLocaleString('en')} orders ...`)
        await seedTenant(rt.store, TENANT, customers, orders)
        progress('computing features (processing engine) ...')
        const engine = createRecomputeEngine({ store: rt.store, logger, partitions: config.partitions, now: () => Date.UTC(2025, 6, 1) })
        await engine.run(TENANT, { analyses: ['rfm', 'clv', 'churn'], batchSize: 10_000, force: true, signal: new AbortController().signal })
        // The spend above which just under 50,000 customers fall: the export filter (min_value).
        const rs = await rt.store.query({
          query: `SELECT toFloat64(monetary) AS m FROM customer_features FINAL WHERE tenant_id = {t:UInt64} ORDER BY monetary DESC LIMIT 1 OFFSET 49999`,
          query_params: { t: TENANT },
          format: 'JSONEachRow',
        })
        exportMin = Math.ceil(((await rs.json<{ m: number }>())[0]?.m ?? 0) + 0.01)
        if (keep) fs.writeFileSync(seededMark, JSON.stringify({ exportMin }))
      }
    } finally {
      await rt.close() // chdb admits one process per data dir: hand it to the API
    }
    progress('starting the API in a separate process ...')
    const api = await startApi(dataDir, token)
    child = api.child
    progress('waiting for the tenant summary ...')
    const summaryMs = await waitForSummary(api.base)
    progress(`tenant summary ready ${summaryMs} ms after the API answered`)
    const results: Record<string, { kind: string; p50: number; p99: number; target_ms: number; statuses: Record<string, number> }> = {}
    for (const t of TARGETS) {
      await load(api.base, token, t, Math.min(20, requests), concurrency) // warm-up: connections, JIT, ClickHouse caches
      const r = await load(api.base, token, t, requests, concurrency)
      results[t.name] = { kind: t.kind, ...r, target_ms: TARGET_MS[t.kind] }
      progress(`${t.name}: p50 ${r.p50} ms, p99 ${r.p99} ms (${JSON.stringify(r.statuses)})`)
    }
    // The same customers' export in every format the spec names: timed to the last byte, read back after.
    const exports: Record<string, { rows: number; ms: number; status: number }> = {}
    for (const format of ['csv', 'excel', 'json'] as const) {
      const start = performance.now()
      const res = await fetch(`${api.base}/api/cdp/v2/customers?tenant_id=${TENANT}&min_value=${exportMin}&format=${format}`, { headers: { authorization: `Bearer ${token}` } })
      const body = Buffer.from(await res.arrayBuffer())
      const ms = Math.round(performance.now() - start)
      const rows = res.ok ? await exportRowCount(format, body) : 0
      exports[format] = { rows, ms, status: res.status }
      progress(`export (${format}): ${rows} rows in ${ms} ms (status ${res.status})`)
    }

    const lines = ['', `| endpoint (${requests} requests, ${concurrency} concurrent, ${customers.toLocaleString('en')} customers) | p50 | p99 | target |`, '|---|---|---|---|']
    for (const [name, r] of Object.entries(results)) {
      const failed = Object.entries(r.statuses).filter(([s]) => s !== '200')
      const note = failed.length ? ` (non-200: ${failed.map(([s, n]) => `${n}× ${s}`).join(', ')})` : ''
      lines.push(`| ${name} (${r.kind}) | ${r.p50} ms | ${r.p99} ms | < ${r.target_ms} ms ${r.p99 <= r.target_ms && !failed.length ? '✓' : '✗'}${note} |`)
    }
    for (const [format, e] of Object.entries(exports)) {
      lines.push(`| export, ${e.rows.toLocaleString('en')} rows ${format} | ${e.ms} ms | | < 2000 ms ${e.ms <= 2000 && e.status === 200 ? '✓' : `✗ (status ${e.status})`} |`)
    }
    const out = { customers, orders, requests, concurrency, endpoints: results, exports, machine: { cpus: os.cpus().length, load1: os.loadavg()[0] } }
    process.stdout.write(`${lines.join('\n')}\n\n${JSON.stringify(out)}\n`)
    return 0
  } finally {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM')
      await new Promise((r) => child!.once('exit', r))
    }
    if (!keep) fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

/** The data rows of an export file (services/api/analytics/exports.ts: CSV with a header line, a JSON array, one xlsx sheet with a header row). */
async function exportRowCount(format: 'csv' | 'excel' | 'json', body: Buffer): Promise<number> {
  if (format === 'csv') return body.toString('utf8').split('\r\n').filter(Boolean).length - 1
  if (format === 'json') return (JSON.parse(body.toString('utf8')) as unknown[]).length
  const wb = new ExcelJS.Workbook()
  await wb.xlsx.load(body as unknown as ArrayBuffer)
  return (wb.worksheets[0]?.actualRowCount ?? 1) - 1
}
