/**
 * `cdp bench ingest` (npm run bench:ingest): events per second from producer to ClickHouse rows.
 *
 * For each runtime (kafka = distributed, embedded):
 *   A. produce: N synthetic 'placed' order events, generated and published chunk by chunk
 *      (publishEvents, the importer's path: Avro encode + log.send, durable on return);
 *   B. pipeline: the projection pipeline (projectionPipeline + runPipeline, a fresh consumer group)
 *      from the beginning of the topic until `uniqExact(order_id)` of the bench tenant in `orders`
 *      reaches N (polled every 100 ms);
 *   A+B: the two phases back to back;
 *   C. live: producer → rows as a running system has it: the projection already running (a fresh
 *      group, from the end of the topic) while N events of a fresh tenant are produced, from the
 *      first publish until the tenant's N orders are rows;
 *   baselines: a bare kafkajs consumer that only Avro-decodes each value (no validation, no
 *      ClickHouse), and on the embedded runtime also the embedded log's consume + decode loop.
 *
 * Kafka and the schema registry come from KAFKA_BROKERS / SCHEMA_REGISTRY_URL when both are set;
 * otherwise a fresh local broker and registry are started with test/infra/*.sh under
 * .cache/infra/bench-<pid> and stopped at the end (also on error and Ctrl-C). On an external
 * broker the fixed topics may already hold other runs' records: the pipeline and the baseline then
 * read those too, and only the bench tenant's records count towards N (the output says how many
 * other records were in the way). ClickHouse is chdb under each runtime's fresh data dir, unless
 * CLICKHOUSE_URL is set.
 *
 * Progress goes to stderr; a table and one JSON line go to stdout.
 */
import { execFile, execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { performance } from 'node:perf_hooks'
import { Kafka, logLevel as kafkaLogLevel } from 'kafkajs'
import { loadConfig, PROJECTION_BATCH_SIZE, type Config } from '../common/config.ts'
import { createLogger, type Logger } from '../common/logger.ts'
import { openRuntime, type Runtime } from '../common/runtime/context.ts'
import { runPipeline, type PipelineDefinition, type RunningPipeline } from '../common/runtime/pipeline.ts'
import { deadLetters } from '../common/runtime/metrics.ts'
import { groupLag } from '../common/eventlog/port.ts'
import { CONSUMER_SETTINGS } from '../common/eventlog/kafka.ts'
import { NO_MERGE_ON_INSERT, type Store } from '../common/store/clickhouse.ts'
import type { OrderEvent } from '../common/events.ts'
import { TOPICS } from '../common/topics.ts'
import { projectionPipeline } from '../pipelines/projection/pipeline.ts'
import { orderEventRow, orderStateRow } from '../pipelines/projection/rows.ts'
import { publishEvents } from '../pipelines/ingest/publisher.ts'
import { generateOrderEvents } from '../pipelines/ingest/synthetic/generate.ts'
import { UsageError } from '../cli/args.ts'
import { intFlag, progress, sig3, benchFlags, noteLoad } from './common.ts'

const run$ = promisify(execFile)
/** Issue targets: the pipeline against the store's own bulk load, and against raw consume+decode. */
const TARGETS = { storeLimit: 0.6, raw: 0.4, liveEmbedded: 80_000 } as const
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const ORDERS = TOPICS.orders.name

const FLAGS = {
  events: { type: 'string' },
  runtime: { type: 'string' },
  batch: { type: 'string' },
  chunk: { type: 'string' },
  partitions: { type: 'string' },
  'stall-timeout': { type: 'string' },
  keep: { type: 'boolean' },
} as const

const HELP = `usage: cdp bench ingest [--events N] [--runtime kafka|embedded|both] [--batch N] [--chunk N]
                        [--partitions N] [--stall-timeout SECONDS] [--keep]

Measures events per second from the producer to ClickHouse rows for N order events
(default 1,000,000) on the Kafka runtime, the embedded runtime, or both (default).

  --events N         order events per runtime (default 1000000)
  --runtime R        kafka | embedded | both (default both)
  --batch N          pipeline maxBatch (records per sink write; default 50000, the projection's CDP_PROJECTION_BATCH_SIZE)
  --chunk N          events per publishEvents call (default 10000)
  --partitions N     partitions of newly created topics (default CDP_PARTITIONS or 4)
  --stall-timeout S  fail when no progress is seen for S seconds (default 180)
  --keep             keep the temporary data dirs (event log, chdb) instead of deleting them

Kafka: KAFKA_BROKERS and SCHEMA_REGISTRY_URL when both are set, else a fresh local broker and
registry (test/infra/kafka.sh, registry.sh) are started and stopped. ClickHouse: chdb under a
fresh data dir per runtime, or CLICKHOUSE_URL when set.
Progress on stderr; a table and one JSON line on stdout.
`

interface Options {
  events: number
  runtimes: ('kafka' | 'embedded')[]
  batch: number
  chunk: number
  partitions?: number
  stallMs: number
  keep: boolean
}


// ---------------------------------------------------------------------------------------------
// Clean-up: everything started registers its undo here, run in reverse on success, error or signal.

const cleanups: { name: string; fn: () => Promise<void> }[] = []
let aborted = false

/** Registers an undo step; the returned function drops it (call it once the thing was undone in line). */
function onCleanup(name: string, fn: () => Promise<void>): () => void {
  const entry = { name, fn }
  cleanups.push(entry)
  return () => {
    const i = cleanups.indexOf(entry)
    if (i >= 0) cleanups.splice(i, 1)
  }
}

/** Runs (in reverse) and drops the undo steps registered since `mark` = cleanups.length at that time. */
async function cleanupSince(mark: number): Promise<void> {
  const mine = cleanups.splice(mark)
  for (const c of mine.reverse()) {
    try {
      await withTimeout(c.fn(), 60_000, c.name)
    } catch (err) {
      progress(`clean-up '${c.name}' failed: ${(err as Error).message}`)
    }
  }
}

async function runCleanups(): Promise<void> {
  while (cleanups.length) {
    const c = cleanups.pop()!
    try {
      await withTimeout(c.fn(), 60_000, c.name)
    } catch (err) {
      progress(`clean-up '${c.name}' failed: ${(err as Error).message}`)
    }
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms / 1000} s`)), ms)
      timer.unref()
    }),
  ])
}

class AbortedError extends Error {}

function checkAborted(): void {
  if (aborted) throw new AbortedError('interrupted')
}

// ---------------------------------------------------------------------------------------------
// Output helpers

const r2 = (x: number) => Math.round(x * 100) / 100
const fmtInt = (x: number) => Math.round(x).toLocaleString('en-US')
const fmtEps = (x: number | null | undefined) => (x == null ? '-' : `${fmtInt(sig3(x))}/s`)

// ---------------------------------------------------------------------------------------------
// CPU accounting: this process (chdb runs in it) and, when we started it, the broker.

interface CpuMark {
  wall: number
  node: NodeJS.CpuUsage
  broker: number | null
  threads: Map<string, number>
}

let brokerPid: number | null = null
const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()

/** User + system CPU seconds of a /proc `stat` line (a process's or a thread's). */
function statCpuSeconds(stat: string): number {
  // Fields after the ") " that closes the command name: state is field 3, utime 14, stime 15.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(rest[11]) + Number(rest[12])) / CLK_TCK
}

/**
 * CPU seconds of this process's threads, summed by kind (Linux; empty elsewhere): the main thread,
 * node's worker threads and chdb's pools go by their thread names, with the digits taken out.
 */
function threadCpuSeconds(): Map<string, number> {
  const out = new Map<string, number>()
  let tids: string[]
  try {
    tids = fs.readdirSync('/proc/self/task')
  } catch {
    return out
  }
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
      const name = Number(tid) === process.pid ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/\d+/g, '#')
      out.set(name, (out.get(name) ?? 0) + statCpuSeconds(stat))
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out
}

/** Where a phase's CPU went, by thread kind, largest first (kinds under 0.05 s left out). */
function threadCpuSpent(from: Map<string, number>, to: Map<string, number>): Record<string, number> {
  const spent: [string, number][] = []
  for (const [name, s] of to) {
    const d = s - (from.get(name) ?? 0)
    if (d >= 0.05) spent.push([name, r2(d)])
  }
  return Object.fromEntries(spent.sort((a, b) => b[1] - a[1]))
}

function brokerCpuSeconds(): number | null {
  if (brokerPid === null) return null
  try {
    return statCpuSeconds(fs.readFileSync(`/proc/${brokerPid}/stat`, 'utf8'))
  } catch {
    return null
  }
}

function cpuMark(): CpuMark {
  return { wall: performance.now(), node: process.cpuUsage(), broker: brokerCpuSeconds(), threads: threadCpuSeconds() }
}

interface PhaseStats {
  seconds: number
  eps: number
  /** CPU seconds of this process (JS + chdb threads + libuv) during the phase. */
  node_cpu_s: number
  /** node_cpu_s by thread kind (Linux), largest first; threads that ended during the phase are missing. */
  threads_cpu_s: Record<string, number>
  broker_cpu_s?: number
}

/** A phase's CPU by thread kind, as a progress line (nothing where /proc is missing). */
function progressThreads(label: string, stats: PhaseStats): void {
  const threads = Object.entries(stats.threads_cpu_s)
  if (threads.length) progress(`${label} cpu by thread: ${threads.map(([name, s]) => `${name} ${s} s`).join(', ')}`)
}

function phaseStats(from: CpuMark, n: number): PhaseStats {
  const to = cpuMark()
  const seconds = (to.wall - from.wall) / 1000
  const cpu = process.cpuUsage(from.node)
  const out: PhaseStats = { seconds: r2(seconds), eps: sig3(n / seconds), node_cpu_s: r2((cpu.user + cpu.system) / 1e6), threads_cpu_s: threadCpuSpent(from.threads, to.threads) }
  if (from.broker !== null && to.broker !== null) out.broker_cpu_s = r2(to.broker - from.broker)
  return out
}

// ---------------------------------------------------------------------------------------------
// Infra

interface Infra {
  brokers: string
  registry: string
  source: 'environment' | 'local'
  /** Stops what provideInfra started (nothing for the environment's). */
  stop(): Promise<void>
}

async function provideInfra(): Promise<Infra> {
  const envBrokers = process.env.KAFKA_BROKERS
  const envRegistry = process.env.SCHEMA_REGISTRY_URL
  if (envBrokers && envRegistry) return { brokers: envBrokers, registry: envRegistry, source: 'environment', stop: async () => {} }
  if (envBrokers || envRegistry) progress('only one of KAFKA_BROKERS / SCHEMA_REGISTRY_URL is set: starting a local broker and registry instead')

  const dir = path.join(ROOT, '.cache', 'infra', `bench-${process.pid}`)
  const mark = cleanups.length
  const script = (name: string) => path.join(ROOT, 'test', 'infra', name)
  const stopSync = (name: string, sub: string) => {
    try {
      execFileSync('bash', [script(name), 'stop', path.join(dir, sub)], { stdio: 'ignore', timeout: 30_000 })
    } catch {
      /* best effort */
    }
  }
  onCleanup('remove infra dir', async () => fs.rmSync(dir, { recursive: true, force: true }))
  // Stop scripts read the pid files in `dir`; registered before starting so a failed or
  // interrupted start still stops whatever did come up.
  onCleanup('stop schema registry', async () => void (await run$('bash', [script('registry.sh'), 'stop', path.join(dir, 'registry')]).catch(() => stopSync('registry.sh', 'registry'))))
  onCleanup('stop kafka broker', async () => void (await run$('bash', [script('kafka.sh'), 'stop', path.join(dir, 'kafka')]).catch(() => stopSync('kafka.sh', 'kafka'))))
  progress(`starting a local Kafka broker and schema registry under ${path.relative(ROOT, dir)} ...`)
  const t0 = performance.now()
  const start = async (name: string, sub: string, key: string): Promise<string> => {
    try {
      const { stdout } = await run$('bash', [script(name), 'start', path.join(dir, sub)], { timeout: 600_000, maxBuffer: 1 << 20 })
      const line = stdout.split('\n').find((l) => l.startsWith(`${key}=`))
      if (!line) throw new Error(`printed no ${key}=: ${stdout}`)
      return line.slice(key.length + 1).trim()
    } catch (e) {
      const err = e as { stderr?: string; message: string }
      throw new Error(`could not start ${name}: ${err.stderr || err.message}`)
    }
  }
  const [brokers, registry] = await Promise.all([start('kafka.sh', 'kafka', 'KAFKA_BROKERS'), start('registry.sh', 'registry', 'SCHEMA_REGISTRY_URL')])
  try {
    brokerPid = Number(fs.readFileSync(path.join(dir, 'kafka', 'pid'), 'utf8').trim()) || null
  } catch {
    brokerPid = null
  }
  progress(`infra up in ${((performance.now() - t0) / 1000).toFixed(1)} s: Kafka ${brokers}, registry ${registry}`)
  return {
    brokers,
    registry,
    source: 'local',
    stop: async () => {
      progress('stopping the local broker and registry ...')
      brokerPid = null
      await cleanupSince(mark)
    },
  }
}

// ---------------------------------------------------------------------------------------------
// Store queries

async function scalar(store: Store, sql: string, tenant: number): Promise<number> {
  const rs = await store.query({ query: sql, query_params: { t: tenant }, format: 'JSONEachRow' })
  const [row] = await rs.json<{ n: number | string }>()
  return Number(row?.n ?? 0)
}

/** Cheap (primary-key range, one column): rows of the tenant, duplicates included. */
const tenantRows = (store: Store, t: number) => scalar(store, 'SELECT count() AS n FROM orders WHERE tenant_id = {t:UInt64}', t)
/** What the bench waits for: distinct orders of the tenant. Only run once the row count says it can be N. */
const tenantOrders = (store: Store, t: number) => scalar(store, 'SELECT uniqExact(order_id) AS n FROM orders WHERE tenant_id = {t:UInt64}', t)

/** How far the tenant's n orders are stored: rows counted cheaply until they could be n, then its distinct orders. */
async function ordersStored(store: Store, tenant: number, n: number): Promise<{ rows: number; count: number; done: boolean }> {
  const rows = await tenantRows(store, tenant)
  if (rows < n) return { rows, count: rows, done: false }
  const distinct = await tenantOrders(store, tenant)
  return { rows, count: distinct, done: distinct >= n }
}

function deadLetterCount(): Promise<number> {
  return deadLetters.get().then((m) => m.values.reduce((s, v) => s + v.value, 0))
}

// ---------------------------------------------------------------------------------------------
// Waiting with a stall detector

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/**
 * Polls `sample` every `intervalMs` until it reports done. Fails when the count does not move for
 * `stallMs`. Prints a progress line every 10 s.
 */
async function waitUntil(
  what: string,
  n: number,
  stallMs: number,
  sample: () => Promise<{ count: number; done: boolean; note?: string }>,
  intervalMs = 500,
): Promise<{ firstAt: number | null }> {
  const t0 = performance.now()
  let last = -1
  let lastChange = t0
  let lastPrint = t0
  let firstAt: number | null = null
  for (;;) {
    checkAborted()
    const s = await sample()
    const now = performance.now()
    if (s.count > 0 && firstAt === null) firstAt = now
    if (s.done) return { firstAt }
    if (s.count !== last) {
      last = s.count
      lastChange = now
    } else if (now - lastChange > stallMs) {
      throw new Error(`${what}: stuck at ${fmtInt(s.count)}/${fmtInt(n)} for ${stallMs / 1000} s${s.note ? ` (${s.note})` : ''}`)
    }
    if (now - lastPrint >= 10_000) {
      lastPrint = now
      const secs = (now - t0) / 1000
      progress(`  ${what}: ${fmtInt(s.count)}/${fmtInt(n)} after ${secs.toFixed(0)} s (${fmtEps(s.count / secs)})${s.note ? `, ${s.note}` : ''}`)
    }
    await sleep(intervalMs)
  }
}

// ---------------------------------------------------------------------------------------------
// Pipeline instrumentation: wall time during which at least one process() / sink() was in flight.
// (Batches of several partitions run concurrently on Kafka, so per-call sums would over-count.)

class BusyClock {
  private active = 0
  private since = 0
  ms = 0
  enter(): void {
    if (this.active++ === 0) this.since = performance.now()
  }
  leave(): void {
    if (--this.active === 0) this.ms += performance.now() - this.since
  }
}

interface PipelineProbe {
  process: BusyClock
  sink: BusyClock
  batches: number
  records: number
  largestBatch: number
}

function instrument<T>(def: PipelineDefinition<T>, probe: PipelineProbe): PipelineDefinition<T> {
  return {
    ...def,
    process(record, codec) {
      probe.process.enter()
      let result: ReturnType<typeof def.process>
      try {
        result = def.process(record, codec)
      } catch (err) {
        probe.process.leave()
        throw err
      }
      if (result instanceof Promise) return result.finally(() => probe.process.leave())
      probe.process.leave()
      return result
    },
    // The projection decodes order records in parts on its decode thread: the time a part is in flight.
    processMany: def.processMany
      ? async (records, codec) => {
          probe.process.enter()
          try {
            return await def.processMany!(records, codec)
          } finally {
            probe.process.leave()
          }
        }
      : undefined,
    async sink(items) {
      probe.sink.enter()
      try {
        await def.sink(items)
      } finally {
        probe.sink.leave()
      }
      probe.batches++
      probe.records += items.length
      if (items.length > probe.largestBatch) probe.largestBatch = items.length
    },
  }
}

// ---------------------------------------------------------------------------------------------
// The phases

interface RuntimeResult {
  produce_eps: number
  pipeline_eps: number
  end_to_end_eps: number
  /** Phase C: producer → rows with the pipeline running while the events are produced. */
  live_eps: number
  raw_kafkajs_eps: number | null
  ratio_to_raw: number | null
  raw_embedded_eps?: number
  ratio_to_embedded_raw?: number
  /** The store's own bulk-load rate for the same rows: what the pipeline's writes could reach at best. */
  store_limit_eps: number
  ratio_to_store_limit: number
  detail: Record<string, unknown>
}

/** One runtime's figures: produce and pipeline rates, end to end, and the pipeline against raw consume+decode. */
function runtimeResult(opts: Options, a: PhaseStats, b: PhaseStats, c: PhaseStats, limit: PhaseStats, rawKafkaEps: number | null, extra: Partial<RuntimeResult>, detail: Record<string, unknown>): RuntimeResult {
  const e2eSeconds = a.seconds + b.seconds
  return {
    produce_eps: a.eps,
    pipeline_eps: b.eps,
    end_to_end_eps: sig3(opts.events / e2eSeconds),
    live_eps: c.eps,
    raw_kafkajs_eps: rawKafkaEps,
    ratio_to_raw: rawKafkaEps ? r2(b.eps / rawKafkaEps) : null,
    store_limit_eps: limit.eps,
    ratio_to_store_limit: r2(b.eps / limit.eps),
    ...extra,
    detail: { ...detail, produce: a, pipeline: b, live: c, store_limit: limit, end_to_end_s: r2(e2eSeconds) },
  }
}

function benchConfig(runtime: 'embedded' | 'distributed', dataDir: string, opts: Options, infra: Infra | null): Config {
  return loadConfig(process.env, {
    runtime,
    dataDir,
    logLevel: 'warn',
    batchSize: opts.batch,
    ...(opts.partitions ? { partitions: opts.partitions } : {}),
    ...(runtime === 'distributed' && infra ? { kafkaBrokers: infra.brokers, schemaRegistryUrl: infra.registry } : {}),
  })
}

function freshDataDir(label: string, keep: boolean): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `cdp-bench-${label}-`))
  if (!keep) onCleanup(`remove ${dir}`, async () => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

async function sumEndOffsets(rt: Runtime, topic: string): Promise<number> {
  return (await rt.log.endOffsets(topic)).reduce((s, o) => s + Number(o.offset), 0)
}

/** Phase A: generate and publish N order events, chunk by chunk. */
/** The bench's N order events of a tenant (the same ones for the produce phase and the store's limit). */
function benchEvents(tenant: number, opts: Options) {
  return generateOrderEvents({
    tenantId: tenant,
    count: opts.events,
    customers: Math.max(100, Math.floor(opts.events / 5)),
    seed: `bench-${tenant}`,
    start: new Date(Date.UTC(2024, 0, 1)),
    end: new Date(Date.UTC(2025, 0, 1)),
  })
}

/**
 * The store's own limit: the rows the pipeline writes for the same N events (order_events and
 * orders, mapped by the projection's row functions), written to JSONEachRow files first (not
 * timed), then bulk-loaded by the store itself (`INSERT … SELECT FROM file(…)` on chdb; on a
 * ClickHouse server, which cannot read this machine's files, one streamed client insert per
 * table) into empty copies of the two tables. Events per second of both loads together.
 */
async function storeLimit(rt: Runtime, tenant: number, opts: Options, dataDir: string, label: string) {
  const dir = path.join(dataDir, 'store-limit')
  fs.mkdirSync(dir, { recursive: true })
  const files = { order_events: path.join(dir, 'order_events.jsonl'), orders: path.join(dir, 'orders.jsonl') }
  const out = { order_events: fs.createWriteStream(files.order_events), orders: fs.createWriteStream(files.orders) }
  const write = (w: fs.WriteStream, line: string) => (w.write(line) ? Promise.resolve() : new Promise<void>((r) => w.once('drain', () => r())))
  for (const { value } of benchEvents(tenant, opts)) {
    const e = value as OrderEvent
    await write(out.order_events, JSON.stringify(orderEventRow(e)) + '\n')
    await write(out.orders, JSON.stringify(orderStateRow(e)) + '\n')
  }
  await Promise.all(Object.values(out).map((w) => new Promise<void>((r) => w.end(() => r()))))
  const server = Boolean(rt.config.clickhouseUrl)
  // The merges the pipeline's inserts left run first: during the load they would take its CPU and
  // lower the limit (more, smaller inserts would then flatter the pipeline's ratio to it).
  const waited = await mergesSettled(rt.store, 120_000)
  progress(`${label} store limit: ${waited.merging ? `merges still running after ${waited.seconds} s; measuring anyway` : `no merge running (waited ${waited.seconds} s)`}`)
  progress(`${label} store limit: bulk-loading the same rows with ${server ? 'a streamed client insert (ClickHouse server)' : 'INSERT … SELECT FROM file() (chdb)'} ...`)
  const mark = cpuMark()
  for (const table of ['order_events', 'orders'] as const) {
    const copy = `bench_limit_${table}_${tenant}`
    await rt.store.command({ query: `CREATE TABLE ${copy} AS ${table}` })
    try {
      // With the settings the projection's inserts have, so the limit is of the same work.
      if (server) await rt.store.insert({ table: copy, values: fs.createReadStream(files[table]), format: 'JSONEachRow', clickhouse_settings: NO_MERGE_ON_INSERT.settings })
      else await rt.store.command({ query: `INSERT INTO ${copy} SELECT * FROM file({f:String}, JSONEachRow)`, query_params: { f: files[table] }, clickhouse_settings: NO_MERGE_ON_INSERT.settings })
    } finally {
      if (table === 'orders') await rt.store.command({ query: `DROP TABLE IF EXISTS bench_limit_order_events_${tenant}` })
      await rt.store.command({ query: `DROP TABLE IF EXISTS ${copy}` }).catch(() => undefined)
    }
  }
  const stats = phaseStats(mark, opts.events)
  fs.rmSync(dir, { recursive: true, force: true })
  progress(`${label} store limit: ${fmtInt(opts.events)} events' rows bulk-loaded in ${stats.seconds.toFixed(2)} s = ${fmtEps(stats.eps)}`)
  return { ...stats, method: server ? 'client insert (server)' : 'INSERT SELECT FROM file (chdb)' }
}

async function produce(rt: Runtime, tenant: number, opts: Options, label: string): Promise<PhaseStats & { generate_s: number; publish_s: number; avg_value_bytes: number }> {
  const gen = benchEvents(tenant, opts)
  progress(`${label} A produce: ${fmtInt(opts.events)} order events in chunks of ${fmtInt(opts.chunk)} ...`)
  let genMs = 0
  let pubMs = 0
  let sent = 0
  let sampleBytes = 0
  let sampled = 0
  let lastPrint = performance.now()
  const mark = cpuMark()
  for (;;) {
    checkAborted()
    const g0 = performance.now()
    const chunk: OrderEvent[] = []
    while (chunk.length < opts.chunk) {
      const next = gen.next()
      if (next.done) break
      chunk.push(next.value.value as OrderEvent)
    }
    const g1 = performance.now()
    genMs += g1 - g0
    if (chunk.length === 0) break
    await publishEvents(rt.log, rt.codec, 'orders', chunk)
    pubMs += performance.now() - g1
    if (sampled < 1000) {
      // Wire size of a sample (outside the timed part would be nicer; 1000 encodes are ~ms).
      for (const e of chunk.slice(0, 1000 - sampled)) sampleBytes += (await rt.codec.encode(ORDERS, e)).length
      sampled = Math.min(1000, sampled + chunk.length)
    }
    sent += chunk.length
    if (performance.now() - lastPrint >= 10_000) {
      lastPrint = performance.now()
      const secs = (lastPrint - mark.wall) / 1000
      progress(`  ${label} produce: ${fmtInt(sent)}/${fmtInt(opts.events)} (${fmtEps(sent / secs)})`)
    }
  }
  const stats = phaseStats(mark, sent)
  const out = { ...stats, generate_s: r2(genMs / 1000), publish_s: r2(pubMs / 1000), avg_value_bytes: Math.round(sampleBytes / Math.max(1, sampled)) }
  progress(
    `${label} A produce: ${fmtInt(sent)} events in ${stats.seconds.toFixed(2)} s = ${fmtEps(stats.eps)} ` +
      `(generate ${out.generate_s} s, encode+send ${out.publish_s} s; ~${out.avg_value_bytes} B/value)`,
  )
  return out
}

/** Phase B: the projection pipeline from the beginning until the tenant's N orders are rows. */
async function pipelinePhase(rt: Runtime, logger: Logger, tenant: number, opts: Options, label: string) {
  const group = `bench-projection-${tenant}-${randomUUID().slice(0, 8)}`
  const probe: PipelineProbe = { process: new BusyClock(), sink: new BusyClock(), batches: 0, records: 0, largestBatch: 0 }
  const def = instrument(projectionPipeline(rt.store, { name: group }), probe)
  const dlqBefore = await deadLetterCount()
  // Also warms the group coordinator up (a fresh broker creates __consumer_offsets on first use),
  // so the timed part starts with a broker that can take the group at once.
  const lagAtStart = await groupLag(rt.log, group, ORDERS)
  progress(`${label} B pipeline: consume → decode → validate → insert (group ${group}, maxBatch ${fmtInt(opts.batch)}) ...`)
  const mark = cpuMark()
  const pipeline: RunningPipeline = await runPipeline(def, { log: rt.log, codec: rt.codec, logger, maxBatch: opts.batch, fromBeginning: true })
  const stopped = onCleanup(`stop pipeline ${group}`, () => pipeline.stop())
  const started = performance.now()
  let rows = 0
  const { firstAt } = await waitUntil(`${label} pipeline rows`, opts.events, opts.stallMs, async () => {
    const stored = await ordersStored(rt.store, tenant, opts.events)
    rows = stored.rows
    const dlq = (await deadLetterCount()) - dlqBefore
    return { ...stored, note: dlq > 0 ? `${fmtInt(dlq)} dead-lettered` : undefined }
  }, 100)
  const stats = phaseStats(mark, opts.events)
  const t0 = performance.now()
  await pipeline.stop()
  stopped()
  const detail = {
    ...stats,
    group,
    lag_at_start: lagAtStart,
    start_call_s: r2((started - mark.wall) / 1000),
    first_rows_after_s: firstAt === null ? null : r2((firstAt - mark.wall) / 1000),
    process_busy_s: r2(probe.process.ms / 1000),
    sink_busy_s: r2(probe.sink.ms / 1000),
    batches: probe.batches,
    avg_batch: probe.batches ? Math.round(probe.records / probe.batches) : 0,
    largest_batch: probe.largestBatch,
    records_handled: probe.records,
    rows_seen: rows,
    dead_lettered: (await deadLetterCount()) - dlqBefore,
    stop_s: r2((performance.now() - t0) / 1000),
  }
  progress(
    `${label} B pipeline: ${fmtInt(opts.events)} orders as rows in ${stats.seconds.toFixed(2)} s = ${fmtEps(stats.eps)} ` +
      `(first rows after ${detail.first_rows_after_s ?? '-'} s; ${detail.batches} batches of ~${fmtInt(detail.avg_batch)}; ` +
      `busy: decode+validate ${detail.process_busy_s} s, insert ${detail.sink_busy_s} s; cpu node ${stats.node_cpu_s} s` +
      `${stats.broker_cpu_s !== undefined ? `, broker ${stats.broker_cpu_s} s` : ''})`,
  )
  progressThreads(`${label} B`, stats)
  return detail
}

/**
 * Phase C: producer → rows as a running system has it. The projection runs first (a fresh group
 * from the end of the topic, so the earlier phases' records are not read again) and has joined;
 * then N events of a fresh tenant are produced while it consumes them, timed from the first
 * publish until the tenant's N orders are rows.
 */
async function livePhase(rt: Runtime, logger: Logger, opts: Options, label: string, startAtEnd?: (group: string) => Promise<void>): Promise<PhaseStats & { tenant: number; produce_s: number }> {
  const tenant = uniqueTenant()
  const group = `bench-live-${tenant}-${randomUUID().slice(0, 8)}`
  // A Kafka group resolves "from the end" at its first fetch, which may come after the first
  // publish (a run lost 2,500 records that way): its offsets are set to the ends first instead.
  await startAtEnd?.(group)
  const pipeline = await runPipeline(projectionPipeline(rt.store, { name: group }), { log: rt.log, codec: rt.codec, logger, maxBatch: opts.batch, fromBeginning: false })
  const stopped = onCleanup(`stop pipeline ${group}`, () => pipeline.stop())
  // A Kafka group that joins after the first publish would start past it (from the end).
  const joinBy = performance.now() + 120_000
  while (!pipeline.isRunning()) {
    if (performance.now() > joinBy) throw new Error(`${label} live: the projection's group ${group} did not join in 120 s`)
    await sleep(50)
  }
  progress(`${label} C live: producing ${fmtInt(opts.events)} events of tenant ${tenant} while the projection runs (group ${group}) ...`)
  const mark = cpuMark()
  const produced = await produce(rt, tenant, opts, `${label} C`)
  await waitUntil(`${label} live rows`, opts.events, opts.stallMs, () => ordersStored(rt.store, tenant, opts.events), 100)
  const stats = phaseStats(mark, opts.events)
  await pipeline.stop()
  stopped()
  progress(`${label} C live: ${fmtInt(opts.events)} events produced and stored as rows in ${stats.seconds.toFixed(2)} s = ${fmtEps(stats.eps)} (producing took ${produced.seconds.toFixed(2)} s of it)`)
  return { ...stats, tenant, produce_s: produced.seconds }
}

/** A quiet kafkajs client of the bench's broker (the raw baseline's, and the live phase's admin). */
const kafkaClient = (infra: Infra, clientId: string) => new Kafka({ brokers: infra.brokers.split(',').map((b) => b.trim()).filter(Boolean), clientId, logLevel: kafkaLogLevel.NOTHING })

/** Commits the orders topic's end offsets for `group`, which then starts there. */
async function commitEnds(infra: Infra, group: string): Promise<void> {
  const kafka = kafkaClient(infra, group)
  const admin = kafka.admin()
  await admin.connect()
  try {
    const ends = await admin.fetchTopicOffsets(ORDERS)
    await admin.setOffsets({ groupId: group, topic: ORDERS, partitions: ends.map((e) => ({ partition: e.partition, offset: e.high })) })
  } finally {
    await admin.disconnect()
  }
}

/** Baseline: a bare kafkajs consumer that only decodes; no validation, no ClickHouse, no commits. */
async function rawKafkajs(rt: Runtime, infra: Infra, tenant: number, opts: Options, onlyTenant: boolean) {
  const groupId = `bench-raw-${tenant}-${randomUUID().slice(0, 8)}`
  const kafka = kafkaClient(infra, groupId)
  // Same fetch settings as the KafkaEventLog adapter, so the difference is the pipeline's work.
  const consumer = kafka.consumer({ groupId, ...CONSUMER_SETTINGS })
  const done = onCleanup(`disconnect raw consumer ${groupId}`, () => consumer.disconnect())
  const prefix = Buffer.from(`${tenant}:`)
  let seen = 0
  let scanned = 0
  let errors = 0
  progress(`kafka raw kafkajs: consume + decode only (group ${groupId}) ...`)
  const mark = cpuMark()
  let reached: (() => void) | null = null
  const finished = new Promise<void>((r) => (reached = r))
  await consumer.connect()
  await consumer.subscribe({ topics: [ORDERS], fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    partitionsConsumedConcurrently: 4,
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) {
        scanned++
        try {
          await rt.codec.decode(batch.topic, m.value)
        } catch {
          errors++
        }
        if (!onlyTenant || (m.key && m.key.subarray(0, prefix.length).equals(prefix))) seen++
      }
      if (seen >= opts.events) reached?.()
    },
  })
  await Promise.race([
    finished,
    waitUntil('kafka raw kafkajs', opts.events, opts.stallMs, async () => ({ count: seen, done: seen >= opts.events }), 100),
  ])
  const stats = phaseStats(mark, opts.events)
  await consumer.disconnect()
  done()
  const detail = { ...stats, records_scanned: scanned, decode_errors: errors }
  progress(
    `kafka raw kafkajs: ${fmtInt(opts.events)} records decoded in ${stats.seconds.toFixed(2)} s = ${fmtEps(stats.eps)}` +
      `${scanned !== seen ? ` (${fmtInt(scanned)} scanned in all)` : ''}; cpu node ${stats.node_cpu_s} s` +
      `${stats.broker_cpu_s !== undefined ? `, broker ${stats.broker_cpu_s} s` : ''}`,
  )
  progressThreads('kafka raw kafkajs', stats)
  return detail
}

/** Second reference on the embedded runtime: the log's own consume loop, decode only. */
async function rawEmbedded(rt: Runtime, opts: Options) {
  const groupId = `bench-raw-embedded-${randomUUID().slice(0, 8)}`
  let seen = 0
  let errors = 0
  progress(`embedded raw read+decode: rt.log.consume + decode only (group ${groupId}) ...`)
  const mark = cpuMark()
  const handle = await rt.log.consume({
    groupId,
    topics: [ORDERS],
    fromBeginning: true,
    maxBatch: opts.batch,
    onBatch: async (batch) => {
      for (const r of batch.records) {
        try {
          await rt.codec.decode(batch.topic, r.value)
        } catch {
          errors++
        }
      }
      seen += batch.records.length
    },
  })
  const done = onCleanup(`stop embedded raw consumer`, () => handle.stop())
  await waitUntil('embedded raw read+decode', opts.events, opts.stallMs, async () => ({ count: seen, done: seen >= opts.events }), 50)
  const stats = phaseStats(mark, opts.events)
  await handle.stop()
  done()
  progress(`embedded raw read+decode: ${fmtInt(opts.events)} records in ${stats.seconds.toFixed(2)} s = ${fmtEps(stats.eps)}; cpu node ${stats.node_cpu_s} s`)
  return { ...stats, decode_errors: errors }
}

async function openBenchRuntime(config: Config, logger: Logger, label: string): Promise<{ rt: Runtime; closed: () => void }> {
  const t0 = performance.now()
  const rt = await openRuntime(config, logger)
  const closed = onCleanup(`close ${label} runtime`, () => rt.close())
  progress(`${label} runtime open in ${((performance.now() - t0) / 1000).toFixed(1)} s (data dir ${config.dataDir}, store ${config.clickhouseUrl ? 'ClickHouse server' : 'chdb'})`)
  return { rt, closed }
}

/** Waits (up to `timeoutMs`) until the store runs no merge; how long it waited, and whether one still runs. */
async function mergesSettled(store: Store, timeoutMs: number): Promise<{ seconds: number; merging: boolean }> {
  const t0 = performance.now()
  for (;;) {
    const rs = await store.query({ query: 'SELECT count() AS n FROM system.merges', format: 'JSONEachRow' })
    const n = (await rs.json<{ n: string | number }>())[0]?.n ?? 0
    const seconds = Math.round((performance.now() - t0) / 100) / 10
    if (Number(n) === 0 || performance.now() - t0 > timeoutMs) return { seconds, merging: Number(n) > 0 }
    await sleep(100)
  }
}

function uniqueTenant(): number {
  // Unique per run; well inside JS safe integers and the Avro long / UInt64 columns.
  return 1_000_000 + ((Date.now() % 1_000_000_000) * 10 + Math.floor(Math.random() * 10))
}

async function benchKafka(opts: Options, infra: Infra, logger: Logger): Promise<RuntimeResult> {
  const config = benchConfig('distributed', freshDataDir('kafka', opts.keep), opts, infra)
  const { rt, closed } = await openBenchRuntime(config, logger, 'kafka')
  const tenant = uniqueTenant()
  const fresh = infra.source === 'local'
  const before = { orders: await sumEndOffsets(rt, ORDERS), customers: await sumEndOffsets(rt, TOPICS.customers.name) }
  if (before.orders + before.customers > 0) {
    progress(`kafka: the topics already hold ${fmtInt(before.orders)} order and ${fmtInt(before.customers)} customer records: the pipeline and the baseline read them too; only tenant ${tenant}'s rows count`)
  }
  const a = await produce(rt, tenant, opts, 'kafka')
  const b = await pipelinePhase(rt, logger, tenant, opts, 'kafka')
  const raw = await rawKafkajs(rt, infra, tenant, opts, !fresh || before.orders > 0)
  const limit = await storeLimit(rt, tenant, opts, config.dataDir, 'kafka')
  const c = await livePhase(rt, logger, opts, 'kafka', (group) => commitEnds(infra, group))
  await rt.close()
  closed()
  return runtimeResult(opts, a, b, c, limit, raw.eps, {}, { tenant, broker: fresh ? 'local (fresh)' : 'external', records_already_in_topics: before, partitions: config.partitions, raw_kafkajs: raw })
}

async function benchEmbedded(opts: Options, logger: Logger, rawKafkaEps: number | null): Promise<RuntimeResult> {
  const config = benchConfig('embedded', freshDataDir('embedded', opts.keep), opts, null)
  const { rt, closed } = await openBenchRuntime(config, logger, 'embedded')
  const tenant = uniqueTenant()
  const a = await produce(rt, tenant, opts, 'embedded')
  const b = await pipelinePhase(rt, logger, tenant, opts, 'embedded')
  const raw = await rawEmbedded(rt, opts)
  const limit = await storeLimit(rt, tenant, opts, config.dataDir, 'embedded')
  const c = await livePhase(rt, logger, opts, 'embedded')
  await rt.close()
  closed()
  return runtimeResult(
    opts,
    a,
    b,
    c,
    limit,
    rawKafkaEps,
    { raw_embedded_eps: raw.eps, ratio_to_embedded_raw: r2(b.eps / raw.eps) },
    {
      tenant,
      raw_kafkajs_note: rawKafkaEps ? 'raw_kafkajs_eps is the kafka run’s number (same decode work over a Kafka consumer)' : 'no Kafka run: raw_kafkajs_eps unavailable',
      partitions: config.partitions,
      raw_embedded: raw,
    },
  )
}

// ---------------------------------------------------------------------------------------------
// Report

function table(events: number, opts: Options, results: { kafka?: RuntimeResult; embedded?: RuntimeResult }, machine: Record<string, unknown>): string {
  const cols = (['kafka', 'embedded'] as const).filter((k) => results[k])
  const sec = (r: RuntimeResult, k: 'produce' | 'pipeline') => (r.detail[k] as PhaseStats).seconds
  const rows: [string, ...((r: RuntimeResult) => string)[]][] = [
    ['A  produce (generate+encode+send)', (r) => `${fmtEps(r.produce_eps)}  ${sec(r, 'produce').toFixed(1)} s`],
    ['B  pipeline (consume→rows)', (r) => `${fmtEps(r.pipeline_eps)}  ${sec(r, 'pipeline').toFixed(1)} s`],
    ['A+B back to back', (r) => `${fmtEps(r.end_to_end_eps)}  ${(r.detail.end_to_end_s as number).toFixed(1)} s`],
    [`C  producer → rows, live (target >= ${fmtInt(TARGETS.liveEmbedded)} embedded)`, (r) => `${fmtEps(r.live_eps)}  ${(r.detail.live as PhaseStats).seconds.toFixed(1)} s${r === results.embedded ? ` ${r.live_eps >= TARGETS.liveEmbedded ? 'pass' : 'FAIL'}` : ''}`],
    ['raw kafkajs consume+decode', (r) => (r.raw_kafkajs_eps == null ? '-' : `${fmtEps(r.raw_kafkajs_eps)}${r === results.embedded ? ' (kafka run)' : ''}`)],
    [`B / raw kafkajs (target >= ${TARGETS.raw})`, (r) => (r.ratio_to_raw == null ? '-' : `${r.ratio_to_raw.toFixed(2)} ${r.ratio_to_raw >= TARGETS.raw ? 'pass' : 'FAIL'}`)],
    ['raw embedded read+decode', (r) => fmtEps(r.raw_embedded_eps)],
    [`B / raw embedded (target >= ${TARGETS.raw})`, (r) => (r.ratio_to_embedded_raw == null ? '-' : `${r.ratio_to_embedded_raw.toFixed(2)} ${r.ratio_to_embedded_raw >= TARGETS.raw ? 'pass' : 'FAIL'}`)],
    ['store limit (bulk load, same rows)', (r) => fmtEps(r.store_limit_eps)],
    [`B / store limit (target >= ${TARGETS.storeLimit})`, (r) => `${r.ratio_to_store_limit.toFixed(2)} ${r.ratio_to_store_limit >= TARGETS.storeLimit ? 'pass' : 'FAIL'}`],
  ]
  const w0 = Math.max(...rows.map((r) => r[0].length))
  const cells = rows.map(([, ...fns]) => cols.map((c) => fns[0]!(results[c]!)))
  const w = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)))
  const line = (a: string, bs: string[]) => `${a.padEnd(w0)}  ${bs.map((b, i) => b.padStart(w[i]!)).join('  ')}`
  return [
    `ingest benchmark: ${fmtInt(events)} order events per runtime; maxBatch ${fmtInt(opts.batch)}, publish chunk ${fmtInt(opts.chunk)}; ${machine.cpus} cpus, node ${machine.node}`,
    line('', cols),
    ...rows.map((r, i) => line(r[0], cells[i]!)),
  ].join('\n')
}

// ---------------------------------------------------------------------------------------------

export async function run(argv: string[]): Promise<number> {
  const values = benchFlags(argv, FLAGS, HELP)
  if (!values) return 0
  const runtimeFlag = values.runtime ?? 'both'
  if (!['kafka', 'embedded', 'both'].includes(runtimeFlag)) throw new UsageError(`--runtime must be kafka, embedded or both, got '${runtimeFlag}'`)
  const opts: Options = {
    events: intFlag(values.events, 'events', 1_000_000),
    runtimes: runtimeFlag === 'both' ? ['kafka', 'embedded'] : [runtimeFlag as 'kafka' | 'embedded'],
    batch: intFlag(values.batch, 'batch', PROJECTION_BATCH_SIZE),
    chunk: intFlag(values.chunk, 'chunk', 10_000),
    partitions: values.partitions === undefined ? undefined : intFlag(values.partitions, 'partitions', 4),
    stallMs: intFlag(values['stall-timeout'], 'stall-timeout', 180) * 1000,
    keep: values.keep ?? false,
  }
  if (opts.batch > 100_000) throw new UsageError('--batch must be <= 100000 (CDP_BATCH_SIZE limit)')

  // Warnings and errors only, on stderr: stdout carries the table and the JSON line.
  const logger = createLogger({ level: 'warn', name: 'bench', destination: process.stderr })
  const machine = {
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model?.trim() ?? 'unknown',
    mem_gb: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  }

  let signalled = 0
  const onSignal = (sig: NodeJS.Signals) => {
    signalled++
    aborted = true
    if (signalled > 1) {
      progress(`${sig} again: exiting now`)
      process.exit(130)
    }
    progress(`${sig}: stopping pipelines, closing runtimes and stopping the infra it started ...`)
    void runCleanups().finally(() => process.exit(130))
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)

  // Other work on the machine skews every figure; the load averages go into the JSON to tell.
  const loadAtStart = os.loadavg().map(r2)
  noteLoad(loadAtStart, machine.cpus)
  const results: { kafka?: RuntimeResult; embedded?: RuntimeResult } = {}
  let infraSource: string | null = null
  try {
    progress(`${fmtInt(opts.events)} order events per runtime; runtimes: ${opts.runtimes.join(', ')}; ${machine.cpus} cpus, node ${machine.node}`)
    if (opts.runtimes.includes('kafka')) {
      const infra = await provideInfra()
      infraSource = infra.source
      results.kafka = await benchKafka(opts, infra, logger)
      // The embedded run gets the machine to itself.
      await infra.stop()
    }
    if (opts.runtimes.includes('embedded')) {
      results.embedded = await benchEmbedded(opts, logger, results.kafka?.raw_kafkajs_eps ?? null)
    }
  } catch (err) {
    if (err instanceof AbortedError) return 130
    throw err
  } finally {
    if (!aborted) {
      progress('cleaning up ...')
      await runCleanups()
    }
    if (!aborted) {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
    }
    // The CLI exits by draining the event loop; if a client library leaves a handle behind,
    // don't hang: this unref'd timer only fires if something else keeps the process alive.
    setTimeout(() => {
      process.stderr.write('[bench] a handle kept the process alive after the run; exiting\n')
      process.exit(process.exitCode ?? 0)
    }, 5000).unref()
  }

  const strip = (r: RuntimeResult | undefined) => {
    if (!r) return undefined
    const { detail: _detail, ...main } = r
    return main
  }
  process.stdout.write(`${table(opts.events, opts, results, machine)}\n`)
  if (results.embedded && results.kafka) process.stdout.write('(embedded: the raw kafkajs baseline is the kafka run’s; "raw embedded" is the embedded log’s own consume+decode loop)\n')
  if (infraSource === 'environment') process.stdout.write('(external broker: pipeline and baseline also read records already in the topics; rates count the bench tenant’s N events)\n')
  process.stdout.write(
    `${JSON.stringify({
      events: opts.events,
      ...(results.kafka ? { kafka: strip(results.kafka) } : {}),
      ...(results.embedded ? { embedded: strip(results.embedded) } : {}),
      machine,
      detail: { kafka: results.kafka?.detail, embedded: results.embedded?.detail, batch: opts.batch, chunk: opts.chunk, infra: infraSource, loadavg: { start: loadAtStart, end: os.loadavg().map(r2) } },
    })}\n`,
  )
  return 0
}
