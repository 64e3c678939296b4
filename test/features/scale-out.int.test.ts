/**
 * Scale-out on real Kafka: three feature instances (projection + feature consumer) in one consumer
 * group on the suite's six partitions; one of them freezes mid-batch, as a crashed process looks to
 * the broker (nothing more is written, committed or drained; its heartbeats stop), a fourth joins
 * later; two audience-sync instances share their group, two API instances answer beside them. At
 * the end: the feature rows equal the batch recompute, every customer's last published segment
 * change names its stored segment, the audience equals the segment, one model refresh happened for
 * the interval in which all instances ticked, and both API instances give the same answer.
 *
 * chdb admits one process per data directory and no ClickHouse server can be installed here, so
 * the instances share this process and one store. Each has its own Kafka client, group membership,
 * memory and timers, as separate processes would. The process level (SIGKILL, restart) is covered
 * by test/common/kill-restart.int.test.ts and test/audience-sync/audience-sync-kill.int.test.ts.
 */
import { afterAll, describe, expect, it } from 'vitest'
import path from 'node:path'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Kafka, logLevel } from 'kafkajs'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { runPipeline, type RunningPipeline } from '../../common/runtime/pipeline.ts'
import { openStore, type Store } from '../../common/store/clickhouse.ts'
import type { ConsumeOptions, EventLog, PartitionOffset } from '../../common/eventlog/port.ts'
import { TOPICS } from '../../common/topics.ts'
import { parseKeyring } from '../../common/secrets.ts'
import type { SegmentChanged } from '../../common/events.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { projectionPipeline, PROJECTION_GROUP } from '../../pipelines/projection/pipeline.ts'
import { runFeatures, type RunningFeatures } from '../../pipelines/features/run.ts'
import { FEATURES_GROUP } from '../../pipelines/features/engine.ts'
import { loadModels } from '../../pipelines/features/feature-store.ts'
import { runAudienceSync, type RunningAudienceSync } from '../../pipelines/audience-sync/run.ts'
import { AUDIENCE_SYNC_GROUP } from '../../pipelines/audience-sync/consumer.ts'
import { AudienceSyncStore } from '../../pipelines/audience-sync/store.ts'
import { hashValue } from '../../pipelines/audience-sync/ads-platform/index.ts'
import { start as startSimulator } from '../../services/simulators/ads-platform/index.ts'
import { createApp } from '../../services/api/app.ts'
import { kafkaBrokers, readTopic, silentLogger, testConfig, tmpDir, waitFor } from '../helpers.ts'
import { KAFKA_TEST_PARTITIONS } from '../infra/global-setup.ts'
import { history, NOW } from './histories.ts'
import { expectedFeatureRows, featureRows } from './batch-expectation.ts'

const TOKEN = 'EAAB-scale-out-token'
const ACCOUNT = 'act_1000000002'
const KEYS = `k1:${'5'.repeat(64)}`
const SEGMENT = 'Champions'
const INPUTS = [TOPICS.orders.name, TOPICS.customers.name, TOPICS.profileChanges.name]
const say = (msg: string) => console.info(`[scale-out] ${msg}`)

// ---------------------------------------------------------------------------------------------
// A frozen process, as the broker and the store see it

/**
 * Wraps an instance's log and store. Once frozen, every call of theirs (a write, a read, the end of
 * a batch handler, hence its commit) waits forever: the instance stops mid-batch and its consumer
 * stops heartbeating, so the broker gives its partitions to the others after the session timeout.
 */
class Freezer {
  frozen = false
  /**
   * @param oneAtATime hand each consumer of the instance one batch of a partition at a time. kafkajs
   *   heartbeats while no handler blocks its fetch loop; with batches in flight (the projection's
   *   inFlight) a frozen handler blocks it only once that many batches of one partition hang, so a
   *   frozen instance reading a quiet partition would keep heartbeating and hold it for good, which
   *   a crashed process does not. The instance that freezes hands one batch at a time: its first
   *   frozen batch stops its heartbeats. The others keep the projection's batches in flight, across
   *   the takeover and the fourth's join.
   */
  constructor(private readonly oneAtATime = false) {}

  private readonly hung: ((err: Error) => void)[] = []
  /** The latest assignment of each of the instance's groups, partitions of the orders topic. */
  readonly assigned = new Map<string, number[]>()
  /** Set by the test: called at the start of each batch of the feature group. */
  onFeatureBatch: (() => void) | null = null

  private hang<T>(): Promise<T> {
    return new Promise<T>((_, reject) => this.hung.push(reject))
  }

  private gate<T>(fn: () => Promise<T>): Promise<T> {
    return this.frozen ? this.hang<T>() : fn()
  }

  freeze(): void {
    this.frozen = true
  }

  /** Lets the hung calls fail, so the instance's clients can be closed at the end of the test. */
  release(): void {
    for (const reject of this.hung.splice(0)) reject(new Error('frozen instance released'))
  }

  log(log: EventLog): EventLog {
    return {
      kind: log.kind,
      createTopics: (t) => this.gate(() => log.createTopics(t)),
      send: (t, r) => this.gate(() => log.send(t, r)),
      endOffsets: (t) => this.gate(() => log.endOffsets(t)),
      committedOffsets: (g, t) => this.gate(() => log.committedOffsets(g, t)),
      resetGroup: (g, t) => this.gate(() => log.resetGroup(g, t)),
      close: () => log.close(),
      consume: (o: ConsumeOptions) =>
        log.consume({
          ...o,
          inFlight: this.oneAtATime ? 1 : o.inFlight,
          onAssign: (a) => {
            this.assigned.set(o.groupId, a.filter((x) => x.topic === TOPICS.orders.name).map((x) => x.partition).sort((x, y) => x - y))
            o.onAssign?.(a)
          },
          onBatch: async (b) => {
            if (this.frozen) return this.hang()
            if (o.groupId.endsWith(FEATURES_GROUP) && b.records.length) this.onFeatureBatch?.()
            // Frozen during the batch: its writes hang; frozen after it: its commit never comes.
            await o.onBatch(b)
            if (this.frozen) await this.hang()
          },
        }),
    }
  }

  store(store: Store): Store {
    return new Proxy(store, {
      get: (target, prop, receiver) => {
        const v = Reflect.get(target, prop, receiver)
        if (typeof v !== 'function' || prop === 'close') return typeof v === 'function' ? v.bind(target) : v
        return (...args: unknown[]) => this.gate(() => v.apply(target, args))
      },
    })
  }
}

// ---------------------------------------------------------------------------------------------
// Instances

interface FeatureInstance {
  name: string
  freezer: Freezer
  rt: Runtime
  projection: RunningPipeline
  features: RunningFeatures
}

const opened: { rt: Runtime; freezer: Freezer; stop: () => Promise<void> }[] = []
afterAll(async () => {
  for (const o of opened.reverse()) {
    o.freezer.release()
    const timeout = new Promise((r) => setTimeout(r, 15_000))
    await Promise.race([o.stop().catch(() => {}), timeout])
    await Promise.race([o.rt.close().catch(() => {}), timeout])
  }
})

/** Sets a group's committed offsets to the topics' ends: it skips what other test files published. */
async function startAtEnd(groups: string[], topics: string[]): Promise<void> {
  const admin = new Kafka({ brokers: kafkaBrokers(), clientId: 'scale-out-setup', logLevel: logLevel.NOTHING }).admin()
  await admin.connect()
  try {
    for (const topic of topics) {
      const ends = await admin.fetchTopicOffsets(topic)
      for (const groupId of groups) await admin.setOffsets({ groupId, topic, partitions: ends.map((o) => ({ partition: o.partition, offset: o.high })) })
    }
  } finally {
    await admin.disconnect()
  }
}

/** Every partition of `ends` committed by the group up to its end. */
async function reached(log: EventLog, group: string, topic: string, ends: PartitionOffset[]): Promise<boolean> {
  const committed = await log.committedOffsets(group, topic)
  return ends.every((e) => Number(committed.find((c) => c.partition === e.partition)?.offset ?? -1) >= Number(e.offset))
}

describe('scale-out: several instances per role on real Kafka', () => {
  it('3 feature instances on 6 partitions, one frozen mid-batch, a 4th joining: features equal the batch, changes and audience exact', { timeout: 420_000 }, async () => {
    const tenant = 40_000_000 + Math.floor(Math.random() * 1e6)
    const prefix = `scale-${tenant}-`
    const dataDir = tmpDir('cdp-scale-out-')
    const config = testConfig('distributed', { dataDir, consumerGroupPrefix: prefix, kafkaSessionTimeoutMs: 10_000, batchSize: 500 })
    const store = await openStore({ database: 'cdp', chdbPath: path.join(dataDir, 'clickhouse') })
    // Closed last, after every instance (afterAll closes in reverse).
    opened.push({ rt: { close: () => store.close() } as Runtime, freezer: new Freezer(), stop: async () => {} })
    const secrets = parseKeyring(KEYS)
    const sim = await startSimulator({ tokens: [TOKEN], adAccounts: [ACCOUNT], autoWebhook: false })
    let clock = NOW
    const now = () => clock

    const VICTIM = 'features-2'
    const open = async (name: string) => {
      const freezer = new Freezer(name === VICTIM)
      const base = await openRuntime({ ...config, kafkaClientId: name }, silentLogger, { store })
      const rt: Runtime = { ...base, log: freezer.log(base.log), store: freezer.store(store) }
      return { freezer, rt }
    }
    const startFeatures = async (name: string): Promise<FeatureInstance> => {
      const { freezer, rt } = await open(name)
      const projection = await runPipeline(projectionPipeline(rt.store, { name: prefix + PROJECTION_GROUP }), { log: rt.log, codec: rt.codec, logger: silentLogger, maxBatch: config.batchSize })
      const features = await runFeatures(rt, { now, tickMs: 3_600_000 })
      const instance = { name, freezer, rt, projection, features }
      opened.push({ rt, freezer, stop: async () => { await projection.stop(); await features.stop() } })
      return instance
    }
    const startAudience = async (name: string): Promise<RunningAudienceSync> => {
      const { freezer, rt } = await open(name)
      const sync = await runAudienceSync(rt, secrets, { baseUrl: sim.url, version: sim.version, appAccessToken: sim.appAccessToken, settleMs: 0, pacingMs: 200, statusIntervalMs: 3_600_000 })
      opened.push({ rt, freezer, stop: () => sync.stop() })
      return sync
    }

    try {
      const { orders, profiles, delivery } = history(tenant, 7, 1_500)
      const { rt: setup } = await open('scale-setup')
      opened.push({ rt: setup, freezer: new Freezer(), stop: async () => {} })
      expect(setup.config.partitions).toBe(KAFKA_TEST_PARTITIONS)
      await new AudienceSyncStore(store, secrets).createConfig({ tenant_id: tenant, name: `${SEGMENT} (scale-out)`, segment: SEGMENT, ad_account_id: ACCOUNT, token: TOKEN })
      await startAtEnd([prefix + PROJECTION_GROUP, prefix + FEATURES_GROUP], INPUTS)
      await startAtEnd([prefix + AUDIENCE_SYNC_GROUP], [TOPICS.segmentChanges.name])

      const instances = [await startFeatures('features-1'), await startFeatures(VICTIM), await startFeatures('features-3')]
      const audience = [await startAudience('audience-1'), await startAudience('audience-2')]
      const live = () => instances.filter((i) => !i.freezer.frozen)
      const coverage = (xs: FeatureInstance[]) => new Set(xs.flatMap((i) => i.freezer.assigned.get(prefix + FEATURES_GROUP) ?? []))
      await waitFor(async () => coverage(instances).size === KAFKA_TEST_PARTITIONS && instances.every((i) => (i.freezer.assigned.get(prefix + FEATURES_GROUP) ?? []).length > 0), {
        what: 'six partitions spread over three feature instances',
        timeoutMs: 90_000,
        intervalMs: 200,
      })
      say(`assignment: ${instances.map((i) => `${i.name} ${JSON.stringify(i.freezer.assigned.get(prefix + FEATURES_GROUP))}`).join(', ')}`)

      // Customers first, so the audience finds each customer's e-mail once it enters the segment.
      await publishEvents(setup.log, setup.codec, 'customers', delivery.profiles)
      const customerEnds = await setup.log.endOffsets(TOPICS.customers.name)
      await waitFor(async () => reached(setup.log, prefix + PROJECTION_GROUP, TOPICS.customers.name, customerEnds), { what: 'customers projected', timeoutMs: 120_000, intervalMs: 250 })

      // The orders in ten chunks; the second instance freezes in its first feature batch after the fourth.
      const chunks = 10
      const per = Math.ceil(delivery.orders.length / chunks)
      const victim = instances[1]!
      let frozeAt = -1
      for (let k = 0; k < chunks; k++) {
        if (k === 4) {
          victim.freezer.onFeatureBatch = () => {
            if (victim.freezer.frozen) return
            victim.freezer.freeze()
            frozeAt = Date.now()
          }
        }
        await publishEvents(setup.log, setup.codec, 'orders', delivery.orders.slice(k * per, (k + 1) * per))
        if (k === 6) {
          await waitFor(async () => frozeAt > 0, { what: `${victim.name} frozen mid-batch`, timeoutMs: 60_000, intervalMs: 50 })
          say(`${victim.name} frozen mid-batch (its partitions ${JSON.stringify(victim.freezer.assigned.get(prefix + FEATURES_GROUP))})`)
          // The broker notices the silence after the session timeout and moves its partitions to the two others.
          await waitFor(async () => coverage(live()).size === KAFKA_TEST_PARTITIONS, { what: 'the frozen instance\'s partitions taken over', timeoutMs: 120_000, intervalMs: 250 })
          say(`taken over after ${Date.now() - frozeAt} ms: ${live().map((i) => `${i.name} ${JSON.stringify(i.freezer.assigned.get(prefix + FEATURES_GROUP))}`).join(', ')}`)
          const fourth = await startFeatures('features-4')
          instances.push(fourth)
          await waitFor(async () => (fourth.freezer.assigned.get(prefix + FEATURES_GROUP) ?? []).length > 0 && coverage(live()).size === KAFKA_TEST_PARTITIONS, {
            what: 'the fourth instance joined',
            timeoutMs: 120_000,
            intervalMs: 250,
          })
          say(`joined: ${live().map((i) => `${i.name} ${JSON.stringify(i.freezer.assigned.get(prefix + FEATURES_GROUP))}`).join(', ')}`)
        }
      }

      const orderEnds = await setup.log.endOffsets(TOPICS.orders.name)
      for (const group of [PROJECTION_GROUP, FEATURES_GROUP]) {
        await waitFor(async () => reached(setup.log, prefix + group, TOPICS.orders.name, orderEnds), { what: `${group} committed every order`, timeoutMs: 180_000, intervalMs: 250 })
      }
      expect(victim.freezer.frozen).toBe(true)

      // An hour later every live instance ticks at once: one of them refreshes the model for the interval.
      clock += 3_600_000
      await Promise.all(live().map((i) => i.features.tick()))
      const refreshed = await store.query({ query: 'SELECT count() AS n FROM tenant_models WHERE tenant_id = {t:UInt64} AND version = {v:UInt64}', query_params: { t: tenant, v: clock }, format: 'JSONEachRow' })
      expect((await refreshed.json<{ n: number | string }>()).map((r) => Number(r.n))).toEqual([1])
      const claims = await store.query({ query: 'SELECT count() AS n FROM model_refresh_claims WHERE tenant_id = {t:UInt64} AND slot = {s:UInt64}', query_params: { t: tenant, s: Math.floor(clock / 3_600_000) }, format: 'JSONEachRow' })
      say(`one model refresh for the interval (${(await claims.json<{ n: string }>())[0]!.n} claims among ${live().length} instances ticking at once)`)
      // Their next tick scores everyone with it.
      for (const i of live()) await i.features.tick()
      for (const i of live()) {
        await i.projection.stop()
        await i.features.stop()
      }

      // 1. The feature rows equal the batch recompute under the one model.
      const model = (await loadModels(store, [tenant])).get(tenant)!
      expect(model.version).toBe(clock)
      const expected = expectedFeatureRows(orders, profiles, tenant, model, clock)
      const rows = await featureRows(store, tenant)
      expect(rows.map((r) => r.customer_id)).toEqual([...expected.rows.keys()])
      for (const row of rows) expect(row, `customer ${row.customer_id}`).toEqual(expected.rows.get(row.customer_id as number))
      say(`features of ${rows.length} customers equal the batch recompute`)

      // 2. Every customer's last published segment change names its stored segment.
      const changes = (await readTopic<SegmentChanged>(setup.log, setup.codec, TOPICS.segmentChanges.name)).map((r) => r.value).filter((e) => e.tenant_id === tenant)
      const last = new Map<number, string | null>()
      for (const c of changes) last.set(c.customer_id, c.segment)
      for (const row of rows) expect(last.get(row.customer_id as number) ?? null, `customer ${row.customer_id}`).toBe(row.segment)
      say(`${changes.length} segment changes published; the last of each customer equals its stored segment`)

      // 3. The audience converges to the segment's e-mails exactly, each added once.
      // Uploaded identifiers come from the customers projection (docs/audience-sync.md), as of now.
      const projected = new Map((await (await store.query({ query: 'SELECT customer_id, email FROM customers FINAL WHERE tenant_id = {t:UInt64}', query_params: { t: tenant }, format: 'JSONEachRow' })).json<{ customer_id: string | number; email: string | null }>()).map((r) => [Number(r.customer_id), r.email]))
      const members = rows.filter((r) => r.segment === SEGMENT && projected.get(r.customer_id as number)).map((r) => hashValue('EMAIL', projected.get(r.customer_id as number)!)).sort()
      expect(members.length).toBeGreaterThan(10)
      const audienceId = () => sim.state.listAudiences()[0]?.id
      const held = () => (audienceId() ? sim.state.members(audienceId()!).flatMap((m) => (m.EMAIL ? [m.EMAIL] : [])).sort() : [])
      await waitFor(async () => JSON.stringify(held()) === JSON.stringify(members), { what: `the audience equal to the ${members.length} ${SEGMENT}`, timeoutMs: 120_000, intervalMs: 250 }).catch(async (e: Error) => {
        const calls = sim.requestLog.map((r) => `${r.method} ${r.path} ${r.errorCode ?? 'ok'} rows=${r.rows ?? '-'} applied=${r.applied}`)
        const configs = await new AudienceSyncStore(store, secrets).listConfigs(tenant)
        throw new Error(`${e.message} (held ${held().length}); configs ${JSON.stringify(configs)}; calls:\n${calls.join('\n')}`)
      })
      const applied = sim.requestLog.filter((r) => r.applied && r.path.endsWith('/users'))
      expect(new Set(applied.map((r) => r.bodyDigest)).size).toBe(applied.length)
      say(`audience of ${members.length} members equals the segment after ${applied.length} applied requests, none twice`)
      for (const a of audience) await a.stop()

      // 4. Two API instances over the store answer alike, with the batch's segment counts.
      const apis = await Promise.all([1, 2].map(async () => {
        const server = http.createServer(createApp({ logger: silentLogger, log: setup.log, codec: setup.codec, readiness: [], store, analytics: { store, logger: silentLogger } }))
        await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
        return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
      }))
      try {
        const counts = new Map<string, number>()
        for (const r of expected.rows.values()) if (r.segment) counts.set(r.segment as string, (counts.get(r.segment as string) ?? 0) + 1)
        for (const api of apis) {
          const res = await fetch(`${api.base}/api/v2/cdp/analytics/rfm?tenant_id=${tenant}`)
          expect(res.status).toBe(200)
          const body = (await res.json()) as { data: { distribution: { segment: string; customer_count: number }[] } }
          expect(new Map(body.data.distribution.filter((d) => d.customer_count > 0).map((d) => [d.segment, d.customer_count]))).toEqual(counts)
        }
      } finally {
        for (const api of apis) await new Promise<void>((r) => api.server.close(() => r()))
      }
    } finally {
      await sim.close()
    }
  })
})
