/**
 * Acceptance: publishing 100,000 events, killing the consumer with SIGKILL halfway and restarting
 * it leaves exactly 100,000 distinct orders in ClickHouse: nothing lost, nothing doubled. The
 * profile-change records of two resolutions (merges, then a split and a merge) are published too,
 * shuffled and partly twice: the features equal the batch recompute per profile.
 *
 * The consumer is the real product process (`cdp start --roles features`) in a child process.
 * chdb admits one on-disk path per process at a time, so this process opens the child's chdb
 * directory only after the child has exited.
 */
import { afterEach, describe, expect, inject, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { spawn, type ChildProcess } from 'node:child_process'
import { openEventLog } from '../../common/runtime/context.ts'
import { EventCodec } from '../../common/eventlog/codec.ts'
import { EmbeddedEventLog } from '../../common/eventlog/embedded.ts'
import { TOPICS } from '../../common/topics.ts'
import { openStore, type Store } from '../../common/store/clickhouse.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { generateOrderEvents } from '../../pipelines/ingest/synthetic/generate.ts'
import { PROJECTION_GROUP } from '../../pipelines/projection/pipeline.ts'
import { FEATURES_GROUP } from '../../pipelines/features/engine.ts'
import { aggregate, aggregateEvents } from '../../pipelines/features/order-facts.ts'
import { buildTenantModel, type TenantModel } from '../../pipelines/features/model.ts'
import { computeFeatures } from '../../pipelines/features/features.ts'
import { loadModels, saveModel } from '../../pipelines/features/feature-store.ts'
import { migrate } from '../../common/store/clickhouse.ts'
import type { OrderEvent, ProfileChanged } from '../../common/events.ts'
import { profileEvents } from '../../pipelines/identity/resolve.ts'
import { factsByProfile, resolutions, rng, shuffle } from '../features/histories.ts'
import type { EventLog, PartitionOffset } from '../../common/eventlog/port.ts'
import type { Config } from '../../common/config.ts'
import { kafkaBrokers, registryUrl, silentLogger, testConfig, tmpDir, waitFor } from '../helpers.ts'

const ROOT = path.resolve(import.meta.dirname, '../..')
const TOTAL = 100_000
/**
 * The consumers' feature batches: the kill must land between commits, and the default batches of
 * 20,000 records commit this test's 100,000 in a few steps (the first write takes every batch
 * decoded while the consumer started: 80 % at once).
 */
const KILL_FEATURES_BATCH = '5000'
const CHUNK = 2_000
const ORDERS = TOPICS.orders.name
const PROFILES = TOPICS.profileChanges.name
const TEST_TIMEOUT = 300_000

// ---------------------------------------------------------------------------------------------
// The consumer process

class Consumer {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  private output = ''
  private exit: { code: number | null; signal: NodeJS.Signals | null } | null = null

  constructor(readonly name: string, private readonly child: ChildProcess) {
    const keep = (b: Buffer) => {
      this.output = (this.output + b.toString()).slice(-20_000)
    }
    child.stdout!.on('data', keep)
    child.stderr!.on('data', keep)
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exit = { code, signal }
        resolve(this.exit)
      })
    })
  }

  static start(name: string, env: Record<string, string>): Consumer {
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env }
    // Knobs of the surrounding environment must not leak into the child's config.
    for (const k of ['CDP_ROLES', 'CDP_API_PORT', 'CDP_PARTITIONS', 'CDP_BATCH_SIZE', 'CDP_DEMO', 'KAFKA_CLIENT_ID', 'NODE_OPTIONS']) delete childEnv[k]
    if (!env.CLICKHOUSE_URL) delete childEnv.CLICKHOUSE_URL
    const child = spawn(process.execPath, [path.join(ROOT, 'bin/cdp.mjs'), 'start', '--roles', 'features'], {
      cwd: ROOT,
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const c = new Consumer(name, child)
    running.add(c)
    void c.exited.then(() => running.delete(c))
    return c
  }

  get alive(): boolean {
    return this.exit === null
  }

  /** Fails the wait at once when the consumer died on its own. */
  assertAlive(): void {
    if (this.exit) throw new Error(`${this.name} exited on its own (${JSON.stringify(this.exit)}):\n${this.output}`)
  }

  kill(signal: NodeJS.Signals): void {
    if (this.alive) this.child.kill(signal)
  }

  async waitExit(timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${this.name} did not exit within ${timeoutMs} ms:\n${this.output}`)), timeoutMs)
    })
    try {
      return await Promise.race([this.exited, timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  get log(): string {
    return this.output
  }
}

const running = new Set<Consumer>()
afterEach(async () => {
  // A failed test must not leave a consumer behind (it would hold chdb, the log lock, the group).
  for (const c of [...running]) {
    c.kill('SIGKILL')
    await c.waitExit(10_000).catch(() => {})
  }
})

// ---------------------------------------------------------------------------------------------
// Shared pieces

const ordersOf = (tenant: number) =>
  generateOrderEvents({
    tenantId: tenant,
    count: TOTAL,
    customers: 5_000,
    seed: `kill-restart-${tenant}`,
    start: new Date(Date.UTC(2024, 0, 1)),
    end: new Date(Date.UTC(2025, 0, 1)),
  })

/** Publishes the 100,000 order events of `tenant`, in chunks, without opening chdb. */
async function publishOrders(log: EventLog, codec: EventCodec, tenant: number): Promise<void> {
  let chunk: OrderEvent[] = []
  for (const e of ordersOf(tenant)) {
    chunk.push(e.value as OrderEvent)
    if (chunk.length === CHUNK) {
      await publishEvents(log, codec, 'orders', chunk)
      chunk = []
    }
  }
  await publishEvents(log, codec, 'orders', chunk)
}

/** Two resolutions of the tenant's customers (test/features/histories.ts) and the final memberships. */
function profilesOf(tenant: number) {
  const ids = [...new Set(Array.from(ordersOf(tenant), (e) => (e.value as OrderEvent).customer_id))].sort((a, b) => a - b)
  const { r1, r2 } = resolutions(ids)
  const at = Date.UTC(2025, 0, 10)
  const events = [...profileEvents(tenant, new Map(), r1, at), ...profileEvents(tenant, r1.profileOf, r2, at + 3600_000)]
  const rand = rng(tenant % 1000)
  return { events: shuffle([...events, ...events.filter(() => rand() < 0.3)], rand), profileOf: r2.profileOf }
}

/** Publishes the profile-change records, keyed tenant:profile like the resolver's. */
async function publishProfiles(log: EventLog, codec: EventCodec, events: ProfileChanged[]): Promise<void> {
  for (let i = 0; i < events.length; i += CHUNK) {
    const chunk = events.slice(i, i + CHUNK)
    await log.send(PROFILES, await Promise.all(chunk.map(async (e) => ({ key: `${e.tenant_id}:${e.profile_id}`, value: await codec.encode(PROFILES, e) }))))
  }
}

/** Records of [from, to) per partition that a group has committed (Kafka offsets are per partition). */
function committedWithin(committed: PartitionOffset[], from: PartitionOffset[], to: PartitionOffset[]): number {
  let done = 0
  for (const t of to) {
    const start = Number(from.find((f) => f.partition === t.partition)?.offset ?? 0)
    const c = committed.find((x) => x.partition === t.partition)
    const at = c && c.offset !== '-1' ? Number(c.offset) : 0
    done += Math.min(Math.max(at - start, 0), Number(t.offset) - start)
  }
  return done
}

function span(from: PartitionOffset[], to: PartitionOffset[]): number {
  return committedWithin(to, from, to)
}

async function count(store: Store, sql: string, tenant: number): Promise<number> {
  const rs = await store.query({ query: sql, query_params: { t: tenant }, format: 'JSONEachRow' })
  const [row] = await rs.json<{ n: number | string }>()
  return Number(row?.n ?? 0)
}

/** The acceptance check, on the child's ClickHouse once the child has exited. */
async function assertExactlyOnce(chdbPath: string, tenant: number): Promise<void> {
  const url = inject('clickhouseUrl')
  const store = await openStore(url ? { url, database: 'cdp' } : { database: 'cdp', chdbPath })
  try {
    expect(await count(store, 'SELECT uniqExact(order_id) AS n FROM orders FINAL WHERE tenant_id = {t:UInt64}', tenant)).toBe(TOTAL)
    expect(await count(store, 'SELECT count() AS n FROM orders FINAL WHERE tenant_id = {t:UInt64}', tenant)).toBe(TOTAL)
    expect(await count(store, 'SELECT count() AS n FROM order_events FINAL WHERE tenant_id = {t:UInt64}', tenant)).toBe(TOTAL)
    expect(await count(store, 'SELECT uniqExact(event_id) AS n FROM order_events WHERE tenant_id = {t:UInt64}', tenant)).toBe(TOTAL)
    // When the kill fell between a batch's write to ClickHouse and its commit, that batch was
    // delivered and written again: the raw (un-FINAL) row count shows such duplicates, which
    // FINAL collapses (and background merges may already have removed).
    const raw = await count(store, 'SELECT count() AS n FROM order_events WHERE tenant_id = {t:UInt64}', tenant)
    expect(raw).toBeGreaterThanOrEqual(TOTAL)
    console.info(`[kill-restart] order_events rows for tenant before FINAL: ${raw} (${raw - TOTAL} redelivered duplicates not yet merged)`)
  } finally {
    await store.close()
  }
}

async function openChildStore(chdbPath: string): Promise<Store> {
  const url = inject('clickhouseUrl')
  return openStore(url ? { url, database: 'cdp' } : { database: 'cdp', chdbPath })
}

/**
 * Pins the tenant's model before the consumer starts (a version far in the future, so neither the
 * first batch nor the tick replaces it): every feature row is then scored with known thresholds
 * and CLV parameters, and the batch recompute below can use the very same model.
 */
async function pinModel(chdbPath: string, tenant: number): Promise<TenantModel> {
  const aggs = [...aggregateEvents(Array.from(ordersOf(tenant), (e) => e.value as OrderEvent)).values()]
  const model = { ...buildTenantModel(aggs, Date.UTC(2025, 0, 15), { clvModel: 'mbgnbd', refitClv: true }), version: Date.UTC(2100, 0, 1) }
  const store = await openChildStore(chdbPath)
  try {
    await migrate(store, silentLogger)
    await saveModel(store, tenant, model)
  } finally {
    await store.close()
  }
  return model
}

/** Stream equals batch: each stored feature row equals the pure recompute, per profile, from the generated events. */
async function assertFeaturesEqualBatch(chdbPath: string, tenant: number, pinned: TenantModel): Promise<void> {
  const facts = factsByProfile(Array.from(ordersOf(tenant), (e) => e.value as OrderEvent), profilesOf(tenant).profileOf)
  const aggs = new Map([...facts].map(([p, f]) => [`${tenant}:${p}`, aggregate(f.values())]))
  const store = await openChildStore(chdbPath)
  try {
    expect((await loadModels(store, [tenant])).get(tenant)).toEqual(pinned)
    const rs = await store.query({
      query: `SELECT customer_id, toUnixTimestamp64Milli(processed_at) AS at, frequency, toInt64(monetary * 100) AS cents, purchase_days, repeat_purchases,
                     repeat_span_days, recency_days, rfm_score, segment, predicted_value, churn_probability, churn_risk,
                     length(order_times) AS history_orders, toFloat64(arraySum(order_cents)) AS history_cents, arraySort(order_times) = order_times AS history_sorted
              FROM customer_features FINAL WHERE tenant_id = {t:UInt64} ORDER BY customer_id`,
      query_params: { t: tenant },
      format: 'JSONEachRow',
    })
    const rows = await rs.json<Record<string, number | string | null>>()
    expect(rows.length).toBe(aggs.size)
    for (const row of rows) {
      const agg = aggs.get(`${tenant}:${row.customer_id}`) ?? aggregate([])
      const v = computeFeatures(agg, pinned, Number(row.at))
      expect(row, `customer ${row.customer_id}`).toEqual({
        customer_id: row.customer_id,
        at: row.at,
        frequency: v.frequency,
        cents: agg.monetaryCents,
        purchase_days: agg.purchaseDays,
        repeat_purchases: agg.repeatPurchases,
        repeat_span_days: agg.repeatSpanDays,
        recency_days: v.recency_days,
        rfm_score: v.rfm_score,
        segment: v.segment,
        predicted_value: v.predicted_value,
        churn_probability: v.churn_probability,
        churn_risk: v.churn_risk,
        // The order history the analytics read: every counting order once, ascending.
        history_orders: agg.orderCount,
        history_cents: agg.monetaryCents,
        history_sorted: 1,
      })
    }
    console.info(`[kill-restart] features of ${rows.length} profiles equal the batch recompute`)
  } finally {
    await store.close()
  }
}

/**
 * Starts the consumer, SIGKILLs it once 30% or more of our records are committed, restarts it,
 * waits for all of them to be committed, SIGTERMs it and waits for a clean exit.
 * Returns the share of records committed when the first consumer died.
 */
async function killHalfwayAndRestart(opts: {
  env: Record<string, string>
  /** Records of ours committed by the group, out of `total`. */
  progress: () => Promise<number>
  total: number
  /** Other records the restarted consumer must have committed before it is stopped. */
  settled: () => Promise<boolean>
}): Promise<{ committedAtKill: number }> {
  const first = Consumer.start('first consumer', opts.env)
  let seen = 0
  await waitFor(
    async () => {
      first.assertAlive()
      seen = await opts.progress()
      return seen >= opts.total * 0.3
    },
    { what: `30% of ${opts.total} records committed by the first consumer`, timeoutMs: 180_000, intervalMs: 25 },
  ).catch((e: Error) => {
    throw new Error(`${e.message} (at ${seen}); consumer output:\n${first.log}`)
  })
  // A random moment after the threshold, so the signal lands at varying points of a batch
  // (decoding, writing to ClickHouse, committing) from run to run.
  await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 150)))
  first.kill('SIGKILL')
  const killed = await first.waitExit(30_000)
  expect(killed.signal).toBe('SIGKILL')
  // What the dead consumer left committed: read after it died, so nothing moves any more.
  const committedAtKill = await opts.progress()
  console.info(`[kill-restart] first consumer SIGKILLed with ${committedAtKill}/${opts.total} records committed (${((100 * committedAtKill) / opts.total).toFixed(1)}%; seen ${seen} before the signal)`)
  expect(committedAtKill).toBeGreaterThan(0)
  expect(committedAtKill).toBeLessThan(opts.total)
  expect(committedAtKill).toBeLessThanOrEqual(opts.total * 0.7)

  const second = Consumer.start('restarted consumer', opts.env)
  await waitFor(
    async () => {
      second.assertAlive()
      return (await opts.progress()) === opts.total && (await opts.settled())
    },
    { what: `all ${opts.total} records committed after the restart`, timeoutMs: 200_000, intervalMs: 250 },
  ).catch(async (e: Error) => {
    throw new Error(`${e.message} (at ${await opts.progress().catch(() => '?')}); consumer output:\n${second.log}`)
  })
  second.kill('SIGTERM')
  const stopped = await second.waitExit(60_000)
  expect(stopped, `restarted consumer output:\n${second.log}`).toEqual({ code: 0, signal: null })
  return { committedAtKill }
}

const uniqueTenant = () => 10_000_000 + Math.floor(Math.random() * 1e9)

// ---------------------------------------------------------------------------------------------

describe('SIGKILL halfway and restart: nothing lost, nothing doubled', () => {
  it('distributed runtime (Kafka, schema registry, chdb)', { timeout: TEST_TIMEOUT }, async () => {
    const dataDir = tmpDir('cdp-kill-dist-')
    const config: Config = testConfig('distributed', { dataDir })
    const tenant = uniqueTenant()
    let pinned: TenantModel | null = null

    // This process publishes through the log and the codec only: it never opens chdb here.
    const { log, codec: opened } = await openEventLog(config, silentLogger)
    try {
      const codec = opened
      const before = await log.endOffsets(ORDERS)
      const profilesBefore = await log.endOffsets(PROFILES)
      const t0 = Date.now()
      await publishOrders(log, codec, tenant)
      await publishProfiles(log, codec, profilesOf(tenant).events)
      const after = await log.endOffsets(ORDERS)
      const profilesAfter = await log.endOffsets(PROFILES)
      const total = span(before, after)
      console.info(`[kill-restart] distributed: published ${TOTAL} order events in ${Date.now() - t0} ms (${total} records in our offset range)`)
      // Other test files may write to the shared topic meanwhile: our range holds at least ours.
      expect(total).toBeGreaterThanOrEqual(TOTAL)

      // A group of our own (CDP_CONSUMER_GROUP_PREFIX), so no other consumer joins it. It starts from
      // the beginning of the shared topic (other files' records come first): progress counts our range only.
      const prefix = `kill-${tenant}-`
      // Both consumers of the role (raw projections and features) must have committed our records.
      const profileRecords = span(profilesBefore, profilesAfter)
      const progress = async () =>
        Math.min(
          committedWithin(await log.committedOffsets(prefix + PROJECTION_GROUP, ORDERS), before, after),
          committedWithin(await log.committedOffsets(prefix + FEATURES_GROUP, ORDERS), before, after),
        )
      const settled = async () => committedWithin(await log.committedOffsets(prefix + FEATURES_GROUP, PROFILES), profilesBefore, profilesAfter) === profileRecords
      pinned = await pinModel(path.join(dataDir, 'clickhouse'), tenant)
      const t1 = Date.now()
      await killHalfwayAndRestart({
        env: {
          CDP_RUNTIME: 'distributed',
          CDP_CONSUMER_GROUP_PREFIX: prefix,
          KAFKA_BROKERS: kafkaBrokers().join(','),
          SCHEMA_REGISTRY_URL: registryUrl(),
          CDP_DATA_DIR: dataDir,
          CDP_METRICS_PORT: '0',
          LOG_LEVEL: 'warn',
          CDP_FEATURES_BATCH_SIZE: KILL_FEATURES_BATCH,
          ...(inject('clickhouseUrl') ? { CLICKHOUSE_URL: inject('clickhouseUrl') } : {}),
        },
        progress,
        total,
        settled,
      })
      console.info(`[kill-restart] distributed: consume, kill, restart and drain took ${Date.now() - t1} ms`)
      expect(await progress()).toBe(total)
    } finally {
      await log.close()
    }
    await assertExactlyOnce(path.join(dataDir, 'clickhouse'), tenant)
    await assertFeaturesEqualBatch(path.join(dataDir, 'clickhouse'), tenant, pinned!)
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('embedded runtime (on-disk log, embedded registry, chdb)', { timeout: TEST_TIMEOUT }, async () => {
    const dataDir = tmpDir('cdp-kill-emb-')
    const config: Config = testConfig('embedded', { dataDir })
    const logDir = path.join(dataDir, 'log')
    const tenant = uniqueTenant()

    // The embedded log is locked by one process: publish everything, then hand it to the child.
    const { log, codec: opened } = await openEventLog(config, silentLogger)
    let ends: PartitionOffset[]
    let profileEnds: PartitionOffset[]
    try {
      const codec = opened
      const t0 = Date.now()
      await publishOrders(log, codec, tenant)
      await publishProfiles(log, codec, profilesOf(tenant).events)
      ends = await log.endOffsets(ORDERS)
      profileEnds = await log.endOffsets(PROFILES)
      console.info(`[kill-restart] embedded: published ${TOTAL} order events in ${Date.now() - t0} ms`)
    } finally {
      await log.close()
    }
    const topics = JSON.parse(fs.readFileSync(path.join(logDir, 'topics.json'), 'utf8')) as Record<string, { partitions: number }>
    expect(topics[ORDERS]!.partitions).toBe(config.partitions)
    expect(ends).toHaveLength(config.partitions)
    expect(ends.reduce((s, e) => s + Number(e.offset), 0)).toBe(TOTAL)

    // The child's commits, read from the group's offsets file (atomically replaced on each commit).
    const groupFile = (group: string) => path.join(logDir, 'groups', `${encodeURIComponent(group)}.json`)
    const committed = (group: string, topic: string = ORDERS): PartitionOffset[] => {
      const file = groupFile(group)
      if (!fs.existsSync(file)) return []
      const g = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, Record<string, string>>
      return Object.entries(g[topic] ?? {}).map(([p, offset]) => ({ partition: Number(p), offset }))
    }
    const zero = ends.map((e) => ({ partition: e.partition, offset: '0' }))
    const profileRecords = span(zero, profileEnds!)
    const progress = async () => Math.min(committedWithin(committed(PROJECTION_GROUP), zero, ends), committedWithin(committed(FEATURES_GROUP), zero, ends))
    const settled = async () => committedWithin(committed(FEATURES_GROUP, PROFILES), zero, profileEnds!) === profileRecords
    const pinned = await pinModel(path.join(dataDir, 'clickhouse'), tenant)

    const t1 = Date.now()
    await killHalfwayAndRestart({
      env: {
        CDP_RUNTIME: 'embedded',
        CDP_DATA_DIR: dataDir,
        CDP_METRICS_PORT: '0',
        LOG_LEVEL: 'warn',
        CDP_FEATURES_BATCH_SIZE: KILL_FEATURES_BATCH,
        ...(inject('clickhouseUrl') ? { CLICKHOUSE_URL: inject('clickhouseUrl') } : {}),
      },
      progress,
      total: TOTAL,
      settled,
    })
    console.info(`[kill-restart] embedded: consume, kill, restart and drain took ${Date.now() - t1} ms`)

    // The child is gone and released the lock: this process can open the log again.
    const reopened = await EmbeddedEventLog.open(logDir)
    try {
      expect(await reopened.committedOffsets(PROJECTION_GROUP, ORDERS)).toEqual(ends)
      expect(await reopened.committedOffsets(FEATURES_GROUP, ORDERS)).toEqual(ends)
      expect(await reopened.endOffsets(ORDERS)).toEqual(ends)
    } finally {
      await reopened.close()
    }
    await assertExactlyOnce(path.join(dataDir, 'clickhouse'), tenant)
    await assertFeaturesEqualBatch(path.join(dataDir, 'clickhouse'), tenant, pinned)
    fs.rmSync(dataDir, { recursive: true, force: true })
  })
})
