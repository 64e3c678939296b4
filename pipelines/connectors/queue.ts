/**
 * The sync queue and its records in ClickHouse (schemas/clickhouse/007_integrations.sql): jobs
 * with their checkpoint, one run per attempt, watermarks for incremental syncs, and the customers
 * a connector has published. The API enqueues and reads statistics from here; the runner claims,
 * checkpoints and finishes jobs. Every value is a bound parameter.
 */
import { randomUUID } from 'node:crypto'
import type { Store } from '../../common/store/clickhouse.ts'
import type { Entity, IntegrationType } from './sources/types.ts'
import type { SyncFailure } from './errors.ts'
import type { EmailNotification } from './notify-email.ts'
import { iso } from '../../common/time.ts'
import { nextSeq } from '../../common/store/versions.ts'
import { JobTable, type JobTableSpec } from '../../common/jobs/table.ts'

export type JobKind = 'manual' | 'initial' | 'scheduled'
export type JobStatus = 'queued' | 'running' | 'success' | 'failed' | 'cancelled'
export type RunStatus = 'running' | 'success' | 'failed' | 'interrupted'
export const FINAL_JOB_STATUSES: readonly JobStatus[] = ['success', 'failed', 'cancelled']

export interface EntityStats {
  pages: number
  received: number
  /** The platform's own count of the listing (first page), null when it gives none. */
  expected: number | null
  /** Records published (orders: orders, not events). */
  published: number
}

export interface JobStats {
  entities: Partial<Record<Entity, EntityStats>>
  events_published: { customers: number; orders: number }
  integrity: {
    duplicates: number
    total_mismatches: number
    unknown_customers: number
    invalid_records: number
    /** Entities whose received count differs from the platform's count. */
    count_mismatches: Entity[]
    samples: { duplicates: string[]; total_mismatches: string[]; unknown_customers: string[]; invalid_records: { id: string | null; reason: string }[] }
  }
  analysis_triggered: boolean | null
  analysis_error?: string
}

export interface Checkpoint {
  /** The window's end, fixed when the job first starts (epoch ms, exclusive). */
  window_to: number
  /** Each entity's window start (null: from the beginning). */
  window_from: Partial<Record<Entity, number | null>>
  /** Index in the job's entities of the one in progress; entities.length when all are done. */
  entity_index: number
  /** Cursor of the next page of that entity; null: its first page. */
  cursor: string | null
  stats: JobStats
}

/** The webhook delivery of a finished sync, with the e-mail's beside it (notify-email.ts). */
export interface Notification {
  status: 'delivered' | 'failed' | 'skipped'
  url: string | null
  http_status: number | null
  attempts: number
  signed: boolean
  at: string
  error?: string
  email?: EmailNotification
}

export interface SyncJob {
  integration_id: number
  sync_id: string
  tenant_id: number
  kind: JobKind
  sync_type: 'full' | 'incremental'
  entities: Entity[]
  date_from: number | null
  date_to: number | null
  scheduled_for: number | null
  status: JobStatus
  attempt: number
  failures: number
  max_attempts: number
  not_before: number
  runner_id: string
  queued_at: number
  started_at: number | null
  heartbeat_at: number | null
  finished_at: number | null
  checkpoint: Checkpoint | null
  stats: JobStats | null
  error_code: string
  error: Omit<SyncFailure, 'retriable'> | null
  notification: Notification | null
}

export interface SyncRun {
  integration_id: number
  sync_id: string
  attempt: number
  tenant_id: number
  integration_type: IntegrationType
  status: RunStatus
  started_at: number
  finished_at: number | null
  duration_ms: number
  error: Omit<SyncFailure, 'retriable'> | null
  stats: JobStats | null
}

export function emptyStats(): JobStats {
  return {
    entities: {},
    events_published: { customers: 0, orders: 0 },
    integrity: { duplicates: 0, total_mismatches: 0, unknown_customers: 0, invalid_records: 0, count_mismatches: [], samples: { duplicates: [], total_mismatches: [], unknown_customers: [], invalid_records: [] } },
    analysis_triggered: null,
  }
}

/** Per integration, from its runs. */
export interface IntegrationStats {
  total_syncs: number
  successful_syncs: number
  failed_syncs: number
  avg_sync_ms: number | null
  last_status: 'success' | 'failed' | null
  last_finished_at: number | null
  last_error: (Omit<SyncFailure, 'retriable'> & { occurred_at: string; sync_id: string }) | null
  last_24h_syncs: number
  last_24h_successes: number
  running: number
}

/** Final states outrank live ones whatever the clocks of the writers say. */
const finalRank = (final: boolean) => (final ? 3 : 1)

const JOBS: JobTableSpec<SyncJob> = {
  table: 'integration_sync_jobs',
  columns: [
    'integration_id', 'sync_id', 'tenant_id', 'kind', 'sync_type', 'entities', 'date_from', 'date_to', 'scheduled_for', 'status', 'attempt', 'failures',
    'max_attempts', 'not_before', 'runner_id', 'queued_at', 'started_at', 'heartbeat_at', 'finished_at', 'checkpoint', 'stats', 'error_code', 'error', 'notification',
  ],
  timeColumns: ['date_from', 'date_to', 'scheduled_for', 'not_before', 'queued_at', 'started_at', 'heartbeat_at', 'finished_at'],
  jsonColumns: ['checkpoint', 'stats', 'error', 'notification'],
  numberColumns: ['integration_id', 'tenant_id', 'attempt', 'failures', 'max_attempts'],
  rank: (job) => finalRank(FINAL_JOB_STATUSES.includes(job.status)),
}

const RUNS: JobTableSpec<SyncRun> = {
  table: 'integration_sync_runs',
  columns: ['integration_id', 'sync_id', 'attempt', 'tenant_id', 'integration_type', 'status', 'started_at', 'finished_at', 'duration_ms', 'error', 'stats'],
  timeColumns: ['started_at', 'finished_at'],
  jsonColumns: ['error', 'stats'],
  numberColumns: ['integration_id', 'attempt', 'tenant_id', 'duration_ms'],
  rank: (run) => finalRank(run.status !== 'running'),
  derived: (run) => ({ error_code: run.error?.error ?? '' }),
}

const json = <T>(s: string): T | null => (s ? (JSON.parse(s) as T) : null)

export type NewJob = Pick<SyncJob, 'integration_id' | 'tenant_id' | 'kind' | 'sync_type' | 'entities' | 'date_from' | 'date_to' | 'scheduled_for' | 'max_attempts'> & { sync_id?: string }

export class SyncQueue {
  readonly #jobs: JobTable<SyncJob>
  readonly #runs: JobTable<SyncRun>

  constructor(private readonly store: Store, private readonly now: () => number = Date.now) {
    this.#jobs = new JobTable(store, JOBS)
    this.#runs = new JobTable(store, RUNS)
  }

  // ---- jobs ----------------------------------------------------------------------------------

  async enqueue(input: NewJob): Promise<SyncJob> {
    const now = this.now()
    const job: SyncJob = {
      ...input,
      sync_id: input.sync_id ?? `sync_${randomUUID().replaceAll('-', '').slice(0, 20)}`,
      status: 'queued',
      attempt: 0,
      failures: 0,
      not_before: now,
      runner_id: '',
      queued_at: now,
      started_at: null,
      heartbeat_at: null,
      finished_at: null,
      checkpoint: null,
      stats: null,
      error_code: '',
      error: null,
      notification: null,
    }
    await this.write(job)
    return job
  }

  write(job: SyncJob): Promise<void> {
    return this.#jobs.write(job)
  }

  async get(integrationId: number, syncId: string): Promise<SyncJob | null> {
    const [j] = await this.#jobs.select({ key: 'integration_id = {i:UInt64} AND sync_id = {s:String}', params: { i: integrationId, s: syncId } })
    return j ?? null
  }

  /** Queued and running jobs, oldest first (one integration, or all). */
  live(integrationId?: number): Promise<SyncJob[]> {
    return this.#jobs.select({
      key: integrationId === undefined ? undefined : 'integration_id = {i:UInt64}',
      where: `status IN ('queued', 'running')`,
      tail: 'ORDER BY queued_at, sync_id',
      params: integrationId === undefined ? {} : { i: integrationId },
    })
  }

  /** The most recent jobs of an integration. */
  recent(integrationId: number, limit = 20): Promise<SyncJob[]> {
    return this.#jobs.select({ key: 'integration_id = {i:UInt64}', tail: 'ORDER BY queued_at DESC, sync_id DESC LIMIT {n:UInt32}', params: { i: integrationId, n: limit } })
  }

  /** The latest occurrence each integration's recurring syncs were scheduled for (initial sync included). */
  async lastScheduled(integrationIds: number[]): Promise<Map<number, number>> {
    if (!integrationIds.length) return new Map()
    const rs = await this.store.query({
      query: `SELECT integration_id, toUnixTimestamp64Milli(max(assumeNotNull(scheduled_for))) AS at FROM integration_sync_jobs FINAL
              WHERE integration_id IN {ids:Array(UInt64)} AND scheduled_for IS NOT NULL GROUP BY integration_id`,
      query_params: { ids: integrationIds },
      format: 'JSONEachRow',
    })
    return new Map((await rs.json<{ integration_id: number; at: number }>()).map((r) => [Number(r.integration_id), Number(r.at)]))
  }

  // ---- runs ----------------------------------------------------------------------------------

  writeRun(run: SyncRun): Promise<void> {
    return this.#runs.write(run)
  }

  runs(integrationId: number, syncId?: string): Promise<SyncRun[]> {
    return this.#runs.select({
      key: `integration_id = {i:UInt64} ${syncId ? 'AND sync_id = {s:String}' : ''}`,
      tail: 'ORDER BY started_at, attempt',
      params: { i: integrationId, s: syncId ?? '' },
    })
  }

  /** A page of an integration's runs, newest first (by start, then attempt), and how many it has. */
  async runsPage(integrationId: number, page: { limit: number; offset: number }): Promise<{ runs: SyncRun[]; total: number }> {
    const [runs, count] = await Promise.all([
      this.#runs.select({
        key: 'integration_id = {i:UInt64}',
        tail: 'ORDER BY started_at DESC, attempt DESC, sync_id DESC LIMIT {l:UInt32} OFFSET {o:UInt32}',
        params: { i: integrationId, l: page.limit, o: page.offset },
      }),
      this.store
        .query({ query: 'SELECT count() AS n FROM (SELECT 1 FROM integration_sync_runs FINAL WHERE integration_id = {i:UInt64})', query_params: { i: integrationId }, format: 'JSONEachRow' })
        .then((r) => r.json<{ n: string | number }>()),
    ])
    return { runs, total: Number(count[0]?.n ?? 0) }
  }

  /** Statistics per integration from its runs; `since` bounds the last-24-hours counts. */
  async stats(integrationIds: number[], since: number): Promise<Map<number, IntegrationStats>> {
    if (!integrationIds.length) return new Map()
    const rs = await this.store.query({
      // (t, version): runs that end in the same millisecond (a coarse or injected clock) still order by write.
      query: `SELECT integration_id,
                     countIf(status IN ('success', 'failed')) AS total,
                     countIf(status = 'success') AS ok,
                     countIf(status = 'failed') AS failed,
                     avgIf(duration_ms, status = 'success') AS avg_ms,
                     argMaxIf(status, (t, version), status IN ('success', 'failed')) AS last_status,
                     maxIf(t, status IN ('success', 'failed')) AS last_t,
                     argMaxIf(error, (t, version), status = 'failed') AS last_error,
                     argMaxIf(sync_id, (t, version), status = 'failed') AS last_error_sync,
                     maxIf(t, status = 'failed') AS last_error_t,
                     countIf(status IN ('success', 'failed') AND t >= {since:Int64}) AS n24,
                     countIf(status = 'success' AND t >= {since:Int64}) AS ok24,
                     countIf(status = 'running') AS running
              FROM (SELECT integration_id, sync_id, status, duration_ms, error, version, toUnixTimestamp64Milli(coalesce(finished_at, started_at)) AS t
                    FROM integration_sync_runs FINAL WHERE integration_id IN {ids:Array(UInt64)})
              GROUP BY integration_id`,
      query_params: { ids: integrationIds, since },
      format: 'JSONEachRow',
    })
    const out = new Map<number, IntegrationStats>()
    for (const r of await rs.json<Record<string, unknown>>()) {
      const total = Number(r.total)
      const failed = Number(r.failed)
      const ok = Number(r.ok)
      const err = failed > 0 ? json<Omit<SyncFailure, 'retriable'>>(String(r.last_error)) : null
      out.set(Number(r.integration_id), {
        total_syncs: total,
        successful_syncs: ok,
        failed_syncs: failed,
        avg_sync_ms: ok > 0 && Number.isFinite(Number(r.avg_ms)) ? Number(r.avg_ms) : null,
        last_status: total > 0 ? (r.last_status as 'success' | 'failed') : null,
        last_finished_at: total > 0 ? Number(r.last_t) : null,
        last_error: err ? { ...err, occurred_at: new Date(Number(r.last_error_t)).toISOString(), sync_id: String(r.last_error_sync) } : null,
        last_24h_syncs: Number(r.n24),
        last_24h_successes: Number(r.ok24),
        running: Number(r.running),
      })
    }
    return out
  }

  /** For integrations whose last finished run failed: when the current run of failures began. */
  async failingSince(integrationIds: number[]): Promise<Map<number, number>> {
    if (!integrationIds.length) return new Map()
    const rs = await this.store.query({
      query: `SELECT integration_id, status, version, toUnixTimestamp64Milli(coalesce(finished_at, started_at)) AS t
              FROM integration_sync_runs FINAL WHERE integration_id IN {ids:Array(UInt64)} AND status IN ('success', 'failed')
              ORDER BY integration_id, t DESC, version DESC LIMIT 200 BY integration_id`,
      query_params: { ids: integrationIds },
      format: 'JSONEachRow',
    })
    const out = new Map<number, number>()
    const done = new Set<number>()
    for (const r of await rs.json<{ integration_id: number; status: string; t: number }>()) {
      const id = Number(r.integration_id)
      if (done.has(id)) continue
      if (r.status === 'success') done.add(id)
      else out.set(id, Number(r.t))
    }
    return out
  }

  // ---- watermarks and known customers ----------------------------------------------------------

  async watermarks(integrationId: number): Promise<Map<Entity, number>> {
    const rs = await this.store.query({
      query: 'SELECT entity, toUnixTimestamp64Milli(watermark) AS w FROM integration_watermarks FINAL WHERE integration_id = {i:UInt64}',
      query_params: { i: integrationId },
      format: 'JSONEachRow',
    })
    return new Map((await rs.json<{ entity: Entity; w: number }>()).map((r) => [r.entity, Number(r.w)]))
  }

  async setWatermarks(integrationId: number, syncId: string, marks: Partial<Record<Entity, number>>): Promise<void> {
    const values = Object.entries(marks).map(([entity, w]) => ({ integration_id: integrationId, entity, watermark: iso(w!), sync_id: syncId, version: nextSeq() }))
    if (values.length) await this.store.insert({ table: 'integration_watermarks', format: 'JSONEachRow', values })
  }

  /** Which of these external customer ids the integration has published before. */
  async knownCustomers(integrationId: number, externalIds: string[]): Promise<Set<string>> {
    if (!externalIds.length) return new Set()
    const rs = await this.store.query({
      query: 'SELECT external_id FROM connector_customers WHERE integration_id = {i:UInt64} AND external_id IN {ids:Array(String)}',
      query_params: { i: integrationId, ids: externalIds },
      format: 'JSONEachRow',
    })
    return new Set((await rs.json<{ external_id: string }>()).map((r) => r.external_id))
  }

  async rememberCustomers(integrationId: number, tenantId: number, rows: { external_id: string; customer_id: number }[]): Promise<void> {
    if (!rows.length) return
    const at = iso(this.now())
    await this.store.insert({ table: 'connector_customers', format: 'JSONEachRow', values: rows.map((r) => ({ integration_id: integrationId, tenant_id: tenantId, ...r, first_seen_at: at })) })
  }
}
