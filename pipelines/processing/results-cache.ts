import type { LRUCache } from 'lru-cache'
import type { Store } from '../../common/store/clickhouse.ts'
import { lruCache } from '../../common/lru.ts'
import { tenantDataVersion } from '../../common/store/data-changes.ts'
import type { Analysis, ProcessingResults } from '../features/index.ts'
import type { ResolvedDeps, ProcessingDeps } from './deps.ts'
import { processingEvents } from './events.ts'
import type { JobRow, JobsTable } from './jobs-table.ts'

export interface CachedRun {
  jobId: string
  analyses: Analysis[]
  results: ProcessingResults
  /** Seconds, of the run that computed the results. */
  totalTime: number
  /** Epoch ms. */
  finishedAt: number
}

/** Only the requested analyses, in canonical order. */
export function pickResults(results: ProcessingResults, analyses: readonly Analysis[]): ProcessingResults {
  const out: ProcessingResults = results.metadata ? { metadata: results.metadata } : {}
  for (const a of analyses) if (results[a]) Object.assign(out, { [a]: results[a] })
  return out
}

/** Tenants whose last results this process keeps parsed; the least recently used is dropped first. */
const FRONT_TENANTS = 1_000

/**
 * Results of a tenant's last run, served for `cacheTtlMs` (1 h) to POSTs without `force`.
 * The truth is processing_jobs: a hit needs the tenant's latest started run to be a processed one,
 * younger than the TTL, started after the last explicit invalidation, covering the requested
 * analyses and computed from the tenant's current data version (no order, customer or settings
 * change since it started), so a run started on any replica invalidates the entry everywhere. The in-memory LRUCache
 * in front (FRONT_TENANTS tenants, each entry for the TTL) only saves re-reading and parsing the
 * results of the same job.
 */
export class ResultsCache {
  readonly #front: LRUCache<number, CachedRun>
  readonly #unsubscribe: () => void

  constructor(
    private readonly deps: ResolvedDeps,
    private readonly jobs: JobsTable,
  ) {
    this.#front = lruCache({ max: FRONT_TENANTS, ttlMs: deps.cacheTtlMs, now: deps.now })
    this.#unsubscribe = deps.events.onCacheInvalidated((e) => this.#front.delete(e.tenantId))
  }

  async lookup(tenantId: number, analyses: readonly Analysis[]): Promise<CachedRun | undefined> {
    const latest = await this.jobs.latestStarted(tenantId)
    if (!latest || latest.status !== 'processed' || latest.finished_at === null) return undefined
    if (this.deps.now() - latest.finished_at >= this.deps.cacheTtlMs) return undefined
    if (!analyses.every((a) => latest.analyses.includes(a))) return undefined
    // The tenant's orders, customers or settings changed since the run read them.
    if (latest.data_version !== (await tenantDataVersion(this.deps.store, tenantId))) return undefined
    const invalidatedAt = await readInvalidation(this.deps.store, tenantId)
    // A run that started after the invalidation has seen whatever caused it.
    if (invalidatedAt !== undefined && invalidatedAt >= (latest.started_at ?? latest.finished_at)) return undefined
    let entry = this.#front.get(tenantId)
    if (entry?.jobId !== latest.job_id) {
      const full = await this.jobs.get(tenantId, latest.job_id)
      if (!full?.results) return undefined
      entry = cachedRun(full, JSON.parse(full.results) as ProcessingResults)
      this.#front.set(tenantId, entry)
    }
    return { ...entry, results: pickResults(entry.results, analyses) }
  }

  remember(job: JobRow, results: ProcessingResults): void {
    this.#front.set(job.tenant_id, cachedRun(job, results))
  }

  /** A new run of the tenant started: drop its entry here and in every cache of this process. */
  dropLocal(tenantId: number): void {
    this.#front.delete(tenantId)
    this.deps.events.emitCacheInvalidated({ tenantId, at: this.deps.now() })
  }

  close(): void {
    this.#unsubscribe()
  }
}

function cachedRun(job: JobRow, results: ProcessingResults): CachedRun {
  return { jobId: job.job_id, analyses: job.analyses, results, totalTime: job.total_time, finishedAt: job.finished_at ?? 0 }
}

async function readInvalidation(store: Store, tenantId: number): Promise<number | undefined> {
  const rs = await store.query({
    query: `SELECT toUnixTimestamp64Milli(max(invalidated_at)) AS at_ms, count() AS n FROM processing_cache_invalidations WHERE tenant_id = {tenant:UInt64}`,
    query_params: { tenant: tenantId },
    format: 'JSONEachRow',
  })
  const [row] = await rs.json<{ at_ms: number; n: number }>()
  return row && Number(row.n) > 0 ? Number(row.at_ms) : undefined
}

/**
 * Drops a tenant's cached processing results on every replica (recorded in ClickHouse) and tells
 * this process's subscribers. For callers that changed a tenant's data outside a processing run.
 */
export async function invalidateProcessingResults(deps: Pick<ProcessingDeps, 'store' | 'now' | 'events'>, tenantId: number): Promise<void> {
  const at = (deps.now ?? Date.now)()
  await deps.store.insert({
    table: 'processing_cache_invalidations',
    format: 'JSONEachRow',
    values: [{ tenant_id: tenantId, invalidated_at: new Date(at).toISOString() }],
  })
  ;(deps.events ?? processingEvents).emitCacheInvalidated({ tenantId, at })
}
