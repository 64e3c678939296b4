import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { migrate, openStore, type Store } from '../../common/store/clickhouse.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { createApp } from '../../services/api/app.ts'
import type { Analysis, ProcessingEngine, ProcessingResults, RunOptions } from '../../pipelines/features/analyses.ts'
import {
  invalidateProcessingResults,
  onTenantProcessed,
  startProcessingScheduler,
  type ProcessingDeps,
  type ProcessingScheduler,
  type StatusObject,
  type TenantProcessed,
} from '../../pipelines/processing/index.ts'
import { JobsTable } from '../../pipelines/processing/jobs-table.ts'
import { nextOccurrenceAfter, occurrence } from '../../common/jobs/schedule.ts'
import { markTenantsChanged } from '../../common/store/data-changes.ts'
import { TenantSettingsStore } from '../../common/store/tenant-settings.ts'
import { silentLogger, tmpDir, waitFor } from '../helpers.ts'

const UNKNOWN_TENANT = 404_404
const HOUR = 3_600_000
const T0 = Date.UTC(2025, 5, 2, 12, 0, 0)

/** An engine that takes a configurable time per tenant and stops when its AbortSignal fires. */
class SlowEngine implements ProcessingEngine {
  readonly delayMs = new Map<number, number>()
  readonly runs: { tenantId: number; analyses: Analysis[]; batchSize: number; force: boolean }[] = []
  readonly aborted: number[] = []

  async tenantExists(tenantId: number): Promise<boolean> {
    return tenantId !== UNKNOWN_TENANT
  }
  async run(tenantId: number, opts: RunOptions): Promise<ProcessingResults> {
    this.runs.push({ tenantId, analyses: opts.analyses, batchSize: opts.batchSize, force: opts.force })
    const delay = this.delayMs.get(tenantId) ?? 0
    if (delay > 0) {
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, delay)
        opts.signal.addEventListener('abort', () => {
          clearTimeout(t)
          this.aborted.push(tenantId)
          reject(opts.signal.reason)
        }, { once: true })
      })
    }
    opts.onProgress?.(200, 200)
    return resultsFor(opts.analyses)
  }
  runsOf(tenantId: number) {
    return this.runs.filter((r) => r.tenantId === tenantId)
  }
}

/** An engine whose runs always fail. */
class ThrowingEngine extends SlowEngine {
  override async run(): Promise<ProcessingResults> {
    throw new Error('engine exploded')
  }
}

function resultsFor(analyses: Analysis[]): ProcessingResults {
  const all: Required<Omit<ProcessingResults, "metadata">> = {
    rfm: {
      total_processed: 200,
      segments: [
        { segment: 'Champions', count: 50, percentage: 25 },
        { segment: 'Lost', count: 150, percentage: 75 },
      ],
      processing_time: 0.012,
      errors: 0,
    },
    clv: { processed: 180, avg_clv: 12345.67, processing_time: 0.02 },
    churn: { processed: 200, at_risk: 40, churn_rate: 0.2, processing_time: 0.005 },
  }
  return Object.fromEntries(analyses.map((a) => [a, all[a]]))
}

function testClock(start = T0) {
  let t = start
  return { now: () => t, advance: (ms: number) => void (t += ms), at: () => t }
}

let store: Store
const servers: http.Server[] = []
const schedulers: ProcessingScheduler[] = []

beforeAll(async () => {
  // One chdb engine per process: every test shares this store and uses its own tenants.
  store = await openStore({ database: 'processing', chdbPath: tmpDir() })
  await migrate(store, silentLogger)
})
afterAll(async () => {
  for (const s of schedulers) await s.stop()
  for (const s of servers) await new Promise<void>((r) => s.close(() => r()))
  await store?.close()
})

type Deps = Omit<ProcessingDeps, 'store' | 'logger'>

/** An API replica on the shared store. The ingest router's log and codec are unused here. */
async function startApp(deps: Deps): Promise<string> {
  const app = createApp({
    logger: silentLogger,
    log: {} as EventLog,
    codec: {} as EventCodec,
    readiness: [],
    processing: { store, logger: silentLogger, heartbeatMs: 50, ...deps },
  })
  const server = http.createServer(app)
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

function scheduler(deps: Deps): ProcessingScheduler {
  const s = startProcessingScheduler({ store, logger: silentLogger, heartbeatMs: 50, pollMs: 60_000, ...deps })
  schedulers.push(s)
  return s
}

interface Json {
  status: number
  // Response bodies are checked field by field below.
  body: any
}

async function call(method: string, url: string, body?: unknown): Promise<Json> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: await res.json() }
}

const processPost = (base: string, tenant: number | string, body: unknown = {}) => call('POST', `${base}/api/v2/cdp/process/${tenant}`, body)
const status = async (base: string, tenant: number): Promise<StatusObject> => {
  const r = await call('GET', `${base}/api/v2/cdp/process/status/${tenant}`)
  expect(r.status).toBe(200)
  expect(Object.keys(r.body).sort()).toEqual(['data', 'success'])
  return r.body.data as StatusObject
}
const waitForStatus = (base: string, tenant: number, want: StatusObject['status']) =>
  waitFor(async () => (await status(base, tenant)).status === want, { timeoutMs: 10_000, intervalMs: 20, what: `tenant ${tenant} ${want}` })

describe('POST /api/v2/cdp/process/:tenantId', () => {
  it('runs the default analyses (rfm only) and answers exactly the spec 200 shape', async () => {
    const engine = new SlowEngine()
    const base = await startApp({ engine, now: testClock().now })
    const r = await processPost(base, 101)
    expect(r.status).toBe(200)
    expect(Object.keys(r.body).sort()).toEqual(['message', 'results', 'success', 'tenant_id', 'total_time'])
    expect(r.body.success).toBe(true)
    expect(r.body.tenant_id).toBe(101)
    expect(typeof r.body.message).toBe('string')
    expect(typeof r.body.total_time).toBe('number')
    expect(r.body.total_time).toBeGreaterThanOrEqual(0)
    expect(Object.keys(r.body.results)).toEqual(['rfm'])
    const rfm = r.body.results.rfm
    expect(Object.keys(rfm).sort()).toEqual(['errors', 'processing_time', 'segments', 'total_processed'])
    expect(Number.isInteger(rfm.total_processed)).toBe(true)
    expect(Number.isInteger(rfm.errors)).toBe(true)
    expect(typeof rfm.processing_time).toBe('number')
    for (const s of rfm.segments) {
      expect(Object.keys(s).sort()).toEqual(['count', 'percentage', 'segment'])
      expect(typeof s.segment).toBe('string')
      expect(Number.isInteger(s.count)).toBe(true)
      expect(typeof s.percentage).toBe('number')
    }
    expect(engine.runsOf(101)).toEqual([{ tenantId: 101, analyses: ['rfm'], batchSize: 1000, force: false }])
  })

  it('deduplicates the analyses, computes them in canonical order and returns only those requested', async () => {
    const engine = new SlowEngine()
    const base = await startApp({ engine, now: testClock().now })
    const r = await processPost(base, 102, { analyses: ['churn', 'rfm', 'churn', 'clv'], batch_size: 500, force: true })
    expect(r.status).toBe(200)
    expect(Object.keys(r.body.results)).toEqual(['rfm', 'clv', 'churn'])
    expect(r.body.results.clv).toEqual({ processed: 180, avg_clv: 12345.67, processing_time: 0.02 })
    expect(r.body.results.churn).toEqual({ processed: 200, at_risk: 40, churn_rate: 0.2, processing_time: 0.005 })
    expect(engine.runsOf(102)).toEqual([{ tenantId: 102, analyses: ['rfm', 'clv', 'churn'], batchSize: 500, force: true }])
    const clvOnly = await processPost(base, 102, { analyses: ['clv'], force: true })
    expect(Object.keys(clvOnly.body.results)).toEqual(['clv'])
  })

  it('answers 400 with every field error in the common error body, and runs nothing', async () => {
    const engine = new SlowEngine()
    const base = await startApp({ engine, now: testClock().now })
    const bad = await processPost(base, 'abc', { analyses: ['rfm', 'ltv'], batch_size: 0, colour: 'red' })
    expect(bad.status).toBe(400)
    expect(bad.body.success).toBe(false)
    expect(bad.body.error).toBe('Invalid request')
    const paths = (bad.body.details.errors as { path: string; code: string }[]).map((e) => [e.path, e.code])
    expect(paths).toEqual(expect.arrayContaining([['tenantId', 'invalid_tenant_id'], ['analyses.1', 'invalid_value'], ['batch_size', 'too_small'], ['colour', 'unrecognized_key']]))
    expect(paths).toHaveLength(4)

    const cases: [string | number, unknown, string][] = [
      [103, { batch_size: 0 }, 'batch_size'],
      [103, { batch_size: 100_001 }, 'batch_size'],
      [103, { batch_size: 1.5 }, 'batch_size'],
      [103, { analyses: [] }, 'analyses'],
      [103, { analyses: 'rfm' }, 'analyses'],
      [103, { force: 'yes' }, 'force'],
      ['0', {}, 'tenantId'],
      ['-3', {}, 'tenantId'],
      ['1.5', {}, 'tenantId'],
    ]
    for (const [tenant, body, path] of cases) {
      const r = await processPost(base, tenant, body)
      expect(r.status, JSON.stringify(body)).toBe(400)
      expect(r.body.details.errors.map((e: { path: string }) => e.path)).toEqual([path])
    }
    const badTenantStatus = await call('GET', `${base}/api/v2/cdp/process/status/abc`)
    expect(badTenantStatus.status).toBe(400)
    expect(badTenantStatus.body.details.errors[0].path).toBe('tenantId')
    expect(engine.runs).toEqual([])
  })

  it('answers 404 with the common error body for an unknown tenant, on every endpoint', async () => {
    const base = await startApp({ engine: new SlowEngine(), now: testClock().now })
    const expected = { success: false, error: 'Tenant not found', details: { tenant_id: UNKNOWN_TENANT } }
    expect(await processPost(base, UNKNOWN_TENANT)).toEqual({ status: 404, body: expected })
    expect(await call('GET', `${base}/api/v2/cdp/process/status/${UNKNOWN_TENANT}`)).toEqual({ status: 404, body: expected })
    expect(await call('DELETE', `${base}/api/v2/cdp/process/${UNKNOWN_TENANT}/cancel`)).toEqual({ status: 404, body: expected })
    expect(await call('POST', `${base}/api/v2/cdp/process/${UNKNOWN_TENANT}/schedule`, {})).toEqual({ status: 404, body: expected })
  })

  it('answers 409 to a second request while a slow job of the tenant runs, and to one of two concurrent requests', async () => {
    const engine = new SlowEngine()
    engine.delayMs.set(104, 600)
    const base = await startApp({ engine, now: testClock().now })
    const first = processPost(base, 104)
    await waitForStatus(base, 104, 'processing')
    const second = await processPost(base, 104, { force: true })
    expect(second.status).toBe(409)
    expect(second.body).toMatchObject({ success: false, error: 'A processing job is already running for this tenant', details: { tenant_id: 104, status: 'processing' } })
    expect(typeof second.body.details.job_id).toBe('string')
    expect((await first).status).toBe(200)

    const both = await Promise.all([processPost(base, 104, { force: true }), processPost(base, 104, { force: true })])
    expect(both.map((r) => r.status).sort()).toEqual([200, 409])
    expect(engine.runsOf(104)).toHaveLength(2)
  })

  it('holds the lock across replicas sharing the store', async () => {
    const engine = new SlowEngine()
    engine.delayMs.set(105, 600)
    const clock = testClock()
    const a = await startApp({ engine, now: clock.now, replicaId: 'replica-a' })
    const b = await startApp({ engine, now: clock.now, replicaId: 'replica-b' })
    const onA = processPost(a, 105)
    await waitForStatus(b, 105, 'processing') // B sees A's job
    const onB = await processPost(b, 105, { force: true })
    expect(onB.status).toBe(409)
    expect((await onA).status).toBe(200)

    const both = await Promise.all([processPost(a, 105, { force: true }), processPost(b, 105, { force: true })])
    expect(both.map((r) => r.status).sort()).toEqual([200, 409])
    expect(engine.runsOf(105)).toHaveLength(2)
  })

  it('lets a new job run once the claim of a crashed replica is older than the lease', async () => {
    const engine = new SlowEngine()
    const clock = testClock()
    const base = await startApp({ engine, now: clock.now, leaseMs: 30_000 })
    // A replica claimed tenant 106, started, and died: its heartbeat never moves again.
    await new JobsTable(store).write({
      tenant_id: 106, job_id: 'crashed-job', kind: 'manual', schedule_id: '', occurrence_at: null, status: 'processing', replica_id: 'dead-replica',
      analyses: ['rfm'], batch_size: 1000, force: false, claimed_at: clock.at(), heartbeat_at: clock.at(), started_at: clock.at(), finished_at: null,
      records_processed: 0, total_time: 0, results: '', error: '', data_version: '',
    })
    expect((await status(base, 106)).status).toBe('processing')
    const blocked = await processPost(base, 106)
    expect(blocked.status).toBe(409)
    expect(blocked.body.details.job_id).toBe('crashed-job')
    clock.advance(29_000)
    expect((await processPost(base, 106)).status).toBe(409)
    clock.advance(2_000)
    expect((await processPost(base, 106)).status).toBe(200)
    expect((await status(base, 106)).status).toBe('processed')
  })

  it('answers 500 in the common error body when the engine throws, and the status says failed', async () => {
    const base = await startApp({ engine: new ThrowingEngine(), now: testClock().now })
    const r = await processPost(base, 115)
    expect(r.status).toBe(500)
    expect(r.body).toMatchObject({ success: false, error: 'Processing failed', details: { tenant_id: 115 } })
    const s = await status(base, 115)
    expect(s.status).toBe('failed')
    expect(s.last_processed).toBeNull()
  })
})

describe('processing results cache', () => {
  it('serves results for an hour without force, recomputes with force, after a new run, an invalidation or the TTL', async () => {
    const engine = new SlowEngine()
    const clock = testClock()
    const a = await startApp({ engine, now: clock.now, replicaId: 'cache-a' })
    const b = await startApp({ engine, now: clock.now, replicaId: 'cache-b' })
    const seen: TenantProcessed[] = []
    const unsubscribe = onTenantProcessed((e) => e.tenantId === 107 && seen.push(e))
    try {
      const fresh = await processPost(a, 107, { analyses: ['rfm', 'clv'] })
      expect(fresh.status).toBe(200)
      expect(fresh.body.message).not.toMatch(/cache/)
      expect(seen).toHaveLength(1)
      expect(seen[0]).toMatchObject({ tenantId: 107, analyses: ['rfm', 'clv'], finishedAt: clock.at() })

      clock.advance(30 * 60_000)
      const cached = await processPost(a, 107)
      expect(cached.status).toBe(200)
      expect(Object.keys(cached.body).sort()).toEqual(['message', 'results', 'success', 'tenant_id', 'total_time'])
      expect(cached.body.message).toBe(`Processing results from cache (computed at ${new Date(T0).toISOString()}); send force: true to recompute`)
      expect(cached.body.results).toEqual({ rfm: fresh.body.results.rfm }) // only what was asked
      expect(cached.body.total_time).toBe(fresh.body.total_time)
      expect(engine.runsOf(107)).toHaveLength(1)
      // The cache is in ClickHouse: the other replica serves it too.
      expect((await processPost(b, 107, { analyses: ['clv'] })).body.message).toMatch(/from cache/)
      expect(engine.runsOf(107)).toHaveLength(1)

      // Analyses the cached run did not compute: run.
      expect((await processPost(a, 107, { analyses: ['churn'] })).body.message).not.toMatch(/cache/)
      expect(engine.runsOf(107)).toHaveLength(2)
      // force: run. A run on B invalidates A's front cache.
      expect((await processPost(b, 107, { force: true })).body.message).not.toMatch(/cache/)
      expect(engine.runsOf(107)).toHaveLength(3)
      const afterB = await processPost(a, 107, { analyses: ['rfm'] })
      expect(afterB.body.message).toMatch(/from cache/)
      expect((await processPost(a, 107, { analyses: ['churn'] })).body.message).not.toMatch(/cache/) // B's run had rfm only
      expect(engine.runsOf(107)).toHaveLength(4)

      await invalidateProcessingResults({ store, now: clock.now }, 107)
      clock.advance(1000)
      expect((await processPost(a, 107, { analyses: ['churn'] })).body.message).not.toMatch(/cache/)
      expect(engine.runsOf(107)).toHaveLength(5)

      expect((await processPost(a, 107, { analyses: ['churn'] })).body.message).toMatch(/from cache/)
      clock.advance(HOUR)
      expect((await processPost(a, 107, { analyses: ['churn'] })).body.message).not.toMatch(/cache/)
      expect(engine.runsOf(107)).toHaveLength(6)
      expect(seen).toHaveLength(6)
    } finally {
      unsubscribe()
    }
  })
})

describe('results that follow the data', () => {
  it('a change of the tenant\'s orders, customers or settings after a run makes the next run recompute and the status stale', async () => {
    const engine = new SlowEngine()
    const clock = testClock()
    const base = await startApp({ engine, now: clock.now })
    expect((await processPost(base, 118)).status).toBe(200)
    expect((await processPost(base, 118)).body.message).toMatch(/from cache/)
    expect((await status(base, 118)).is_stale).toBe(false)
    // Another tenant's data moving changes nothing here.
    await markTenantsChanged(store, [119])
    expect((await status(base, 118)).is_stale).toBe(false)
    expect((await processPost(base, 118)).body.message).toMatch(/from cache/)
    // The projection marks the tenant after writing a batch of its rows.
    await markTenantsChanged(store, [118])
    expect((await status(base, 118)).is_stale).toBe(true)
    expect((await processPost(base, 118)).body.message).not.toMatch(/cache/)
    expect(engine.runsOf(118)).toHaveLength(2)
    expect((await status(base, 118)).is_stale).toBe(false)
    // A settings change (say a new reference date) too.
    const settings = new TenantSettingsStore(store)
    await settings.put({ ...(await settings.get(118)), reference_date: '2024-01-31' })
    expect((await status(base, 118)).is_stale).toBe(true)
    expect((await processPost(base, 118)).body.message).not.toMatch(/cache/)
    expect(engine.runsOf(118)).toHaveLength(3)
  })
})

describe('GET /api/v2/cdp/process/status/:tenantId', () => {
  it('reports never_processed, then processed with its age and staleness', async () => {
    const clock = testClock()
    const base = await startApp({ engine: new SlowEngine(), now: clock.now })
    expect(await status(base, 114)).toEqual({
      status: 'never_processed',
      last_processed: null,
      hours_since_last_sync: null,
      is_stale: true,
      records_processed: '0',
      next_scheduled: null,
      processing_queue: { position: null, estimated_time: null },
    })
    expect((await processPost(base, 114, { analyses: ['rfm', 'churn'] })).status).toBe(200)
    clock.advance(2 * HOUR + 5 * 60_000)
    expect(await status(base, 114)).toEqual({
      status: 'processed',
      last_processed: new Date(T0).toISOString(),
      hours_since_last_sync: 2,
      is_stale: false,
      records_processed: '200',
      next_scheduled: null,
      processing_queue: { position: null, estimated_time: null },
    })
    clock.advance(23 * HOUR)
    expect(await status(base, 114)).toMatchObject({ status: 'processed', hours_since_last_sync: 25, is_stale: true })
  })
})

describe('schedules', () => {
  it('persists a one-shot schedule that a restarted scheduler runs once when due', async () => {
    const engine = new SlowEngine()
    const clock = testClock()
    const base = await startApp({ engine, now: clock.now })
    const at = new Date(T0 + HOUR).toISOString()
    const r = await call('POST', `${base}/api/v2/cdp/process/108/schedule`, { schedule_at: at, analyses: ['clv', 'rfm'] })
    expect(r.status).toBe(201)
    expect(Object.keys(r.body).sort()).toEqual(['data', 'message', 'success'])
    expect(r.body.data).toEqual({ schedule_id: expect.any(String), tenant_id: 108, schedule_at: at, recurring: false, frequency: null, analyses: ['rfm', 'clv'], next_run: at })
    expect((await status(base, 108)).next_scheduled).toBe(at)

    const first = scheduler({ engine, now: clock.now, replicaId: 'sched-1' })
    await first.pollOnce()
    await first.idle()
    expect(engine.runsOf(108)).toHaveLength(0) // not due yet
    await first.stop()

    clock.advance(HOUR)
    const second = scheduler({ engine, now: clock.now, replicaId: 'sched-1' }) // "after a restart"
    await second.pollOnce()
    await second.idle()
    expect(engine.runsOf(108)).toEqual([{ tenantId: 108, analyses: ['rfm', 'clv'], batchSize: 1000, force: false }])
    const s = await status(base, 108)
    expect(s).toMatchObject({ status: 'processed', last_processed: at, next_scheduled: null })
    await second.pollOnce()
    await second.idle()
    expect(engine.runsOf(108)).toHaveLength(1) // one-shot: disabled after its run
    await second.stop()
  })

  it('advances next_run of a recurring schedule, replaces it on a new POST and deletes it', async () => {
    const engine = new SlowEngine()
    const clock = testClock()
    const base = await startApp({ engine, now: clock.now })
    const missing = await call('POST', `${base}/api/v2/cdp/process/109/schedule`, { recurring: true })
    expect(missing.status).toBe(400)
    expect(missing.body.details.errors).toEqual([{ path: 'frequency', code: 'required', message: 'is required when recurring is true' }])
    const badFrequency = await call('POST', `${base}/api/v2/cdp/process/109/schedule`, { recurring: true, frequency: 'yearly', schedule_at: 'tomorrow' })
    expect(badFrequency.body.details.errors.map((e: { path: string }) => e.path).sort()).toEqual(['frequency', 'schedule_at'])

    const created = await call('POST', `${base}/api/v2/cdp/process/109/schedule`, { recurring: true, frequency: 'hourly' })
    expect(created.status).toBe(201)
    expect(created.body.data).toMatchObject({ recurring: true, frequency: 'hourly', analyses: ['rfm'], schedule_at: new Date(T0).toISOString(), next_run: new Date(T0).toISOString() })

    const sched = scheduler({ engine, now: clock.now })
    await sched.pollOnce()
    await sched.idle()
    expect(engine.runsOf(109)).toHaveLength(1)
    expect((await status(base, 109)).next_scheduled).toBe(new Date(T0 + HOUR).toISOString())

    clock.advance(3 * HOUR + 60_000) // missed runs are skipped, not caught up one by one
    await sched.pollOnce()
    await sched.idle()
    expect(engine.runsOf(109)).toHaveLength(2)
    expect((await status(base, 109)).next_scheduled).toBe(new Date(T0 + 4 * HOUR).toISOString())

    const replaced = await call('POST', `${base}/api/v2/cdp/process/109/schedule`, { recurring: true, frequency: 'daily', schedule_at: '2025-06-10T03:00:00' })
    expect(replaced.body.message).toContain(created.body.data.schedule_id)
    expect((await status(base, 109)).next_scheduled).toBe('2025-06-10T03:00:00.000Z')

    const removed = await call('DELETE', `${base}/api/v2/cdp/process/109/schedule`)
    expect(removed).toEqual({ status: 200, body: { success: true, message: expect.any(String), data: { tenant_id: 109, schedule_ids: [replaced.body.data.schedule_id] } } })
    expect((await status(base, 109)).next_scheduled).toBeNull()
    expect((await call('DELETE', `${base}/api/v2/cdp/process/109/schedule`)).status).toBe(404)
    await sched.stop()
  })

  it('runs a due occurrence once when two replicas poll it at the same time', async () => {
    const engine = new SlowEngine()
    engine.delayMs.set(110, 200)
    const clock = testClock()
    const base = await startApp({ engine, now: clock.now })
    expect((await call('POST', `${base}/api/v2/cdp/process/110/schedule`, {})).status).toBe(201)
    const a = scheduler({ engine, now: clock.now, replicaId: 'sched-a' })
    const b = scheduler({ engine, now: clock.now, replicaId: 'sched-b' })
    await Promise.all([a.pollOnce(), b.pollOnce()])
    await Promise.all([a.idle(), b.idle()])
    await Promise.all([a.pollOnce(), b.pollOnce()])
    await Promise.all([a.idle(), b.idle()])
    expect(engine.runsOf(110)).toHaveLength(1)
    expect((await status(base, 110)).next_scheduled).toBeNull()
    await Promise.all([a.stop(), b.stop()])
  })

  it('queues a scheduled run behind a running job and shows its place in the status', async () => {
    const engine = new SlowEngine()
    const clock = testClock()
    const base = await startApp({ engine, now: clock.now })
    expect((await processPost(base, 111)).status).toBe(200) // a first run gives the time estimate
    engine.delayMs.set(111, 800)
    const running = processPost(base, 111, { force: true })
    await waitForStatus(base, 111, 'processing')
    const during = await status(base, 111)
    expect(during.processing_queue.position).toBeNull()
    expect(during.processing_queue.estimated_time).toMatch(/^\d+s$/)

    expect((await call('POST', `${base}/api/v2/cdp/process/111/schedule`, {})).status).toBe(201)
    const sched = scheduler({ engine, now: clock.now })
    await sched.pollOnce()
    await waitForStatus(base, 111, 'queued')
    const queued = await status(base, 111)
    expect(queued.processing_queue.position).toBe(1)
    expect(queued.processing_queue.estimated_time).toMatch(/^\d+s$/)
    expect(queued.last_processed).toBe(new Date(T0).toISOString())
    // A manual request meanwhile is refused: the tenant's line is not empty.
    expect((await processPost(base, 111, { force: true })).status).toBe(409)

    expect((await running).status).toBe(200)
    await sched.idle()
    expect(engine.runsOf(111)).toHaveLength(3)
    expect((await status(base, 111)).status).toBe('processed')
    await sched.stop()
  })
})

describe('DELETE /api/v2/cdp/process/:tenantId/cancel', () => {
  it('aborts a running job of this replica; the run answers 409 and the status says failed', async () => {
    const engine = new SlowEngine()
    engine.delayMs.set(112, 30_000)
    const base = await startApp({ engine, now: testClock().now })
    const run = processPost(base, 112)
    await waitForStatus(base, 112, 'processing')
    // 'processing' shows from the claim on; the engine starts after the lock is confirmed (a loaded machine can cancel in between).
    await waitFor(async () => engine.runsOf(112).length === 1, { timeoutMs: 10_000, intervalMs: 20, what: 'the engine started' })
    const r = await call('DELETE', `${base}/api/v2/cdp/process/112/cancel`)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ success: true, message: expect.any(String), data: { tenant_id: 112, job_id: expect.any(String), status: 'cancelled' } })
    expect(engine.aborted).toEqual([112])
    const answered = await run
    expect(answered).toEqual({ status: 409, body: { success: false, error: 'Processing cancelled', details: { tenant_id: 112, job_id: r.body.data.job_id } } })
    expect((await status(base, 112)).status).toBe('failed')
    expect(await call('DELETE', `${base}/api/v2/cdp/process/112/cancel`)).toEqual({
      status: 404,
      body: { success: false, error: 'No running or queued job', details: { tenant_id: 112 } },
    })
  })

  it('marks a job of another replica cancelling; that replica aborts it at its next heartbeat', async () => {
    const engine = new SlowEngine()
    engine.delayMs.set(113, 30_000)
    const clock = testClock()
    const a = await startApp({ engine, now: clock.now, replicaId: 'cancel-a' })
    const b = await startApp({ engine, now: clock.now, replicaId: 'cancel-b' })
    const run = processPost(a, 113)
    await waitForStatus(b, 113, 'processing')
    await waitFor(async () => engine.runsOf(113).length === 1, { timeoutMs: 10_000, intervalMs: 20, what: 'the engine started' })
    const r = await call('DELETE', `${b}/api/v2/cdp/process/113/cancel`)
    expect(r.status).toBe(200)
    expect(r.body.data).toMatchObject({ tenant_id: 113, status: 'cancelling' })
    expect((await run).body.error).toBe('Processing cancelled')
    expect(engine.aborted).toEqual([113])
    expect((await status(b, 113)).status).toBe('failed')
  })

  it('cancels the running job first, then the queued scheduled one', async () => {
    const engine = new SlowEngine()
    engine.delayMs.set(116, 30_000)
    const clock = testClock()
    const base = await startApp({ engine, now: clock.now })
    const running = processPost(base, 116)
    await waitForStatus(base, 116, 'processing')
    expect((await call('POST', `${base}/api/v2/cdp/process/116/schedule`, {})).status).toBe(201)
    const sched = scheduler({ engine, now: clock.now })
    await sched.pollOnce()
    await waitForStatus(base, 116, 'queued')
    // The running job is cancelled first, then the queued one.
    expect((await call('DELETE', `${base}/api/v2/cdp/process/116/cancel`)).body.data.status).toBe('cancelled')
    expect((await running).status).toBe(409)
    // Then the scheduled job: still queued, or just promoted by its next poll; either way it stops.
    const second = await call('DELETE', `${base}/api/v2/cdp/process/116/cancel`)
    expect(second.status).toBe(200)
    expect(second.body.data.status).toBe('cancelled')
    await sched.idle()
    expect(await call('DELETE', `${base}/api/v2/cdp/process/116/cancel`)).toMatchObject({ status: 404 })
    expect((await status(base, 116)).status).toBe('failed')
    await sched.stop()
  })
})

describe('schedule recurrence', () => {
  it('steps fixed periods and calendar months from the anchor without drifting', () => {
    const jan31 = Date.UTC(2024, 0, 31, 3)
    expect(new Date(occurrence(jan31, 'monthly', 1)).toISOString()).toBe('2024-02-29T03:00:00.000Z')
    expect(new Date(occurrence(jan31, 'monthly', 2)).toISOString()).toBe('2024-03-31T03:00:00.000Z')
    expect(new Date(nextOccurrenceAfter(jan31, 'monthly', Date.UTC(2024, 3, 30, 3))).toISOString()).toBe('2024-05-31T03:00:00.000Z')
    expect(nextOccurrenceAfter(T0, 'every_6_hours', T0)).toBe(T0 + 6 * HOUR)
    expect(nextOccurrenceAfter(T0, 'weekly', T0 + 8 * 24 * HOUR)).toBe(T0 + 14 * 24 * HOUR)
    expect(nextOccurrenceAfter(T0, 'daily', T0 - 1)).toBe(T0)
  })
})
