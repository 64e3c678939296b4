import { randomUUID } from 'node:crypto'
import type { ProcessingResults } from '../features/index.ts'
import { tenantDataVersion } from '../../common/store/data-changes.ts'
import { resolveDeps, type ProcessingDeps, type ResolvedDeps } from './deps.ts'
import { JobsTable } from './jobs-table.ts'
import { JobRunner, type CancelOutcome, type RunOutcome } from './job-runner.ts'
import { ResultsCache, type CachedRun } from './results-cache.ts'
import { SchedulesTable, type ScheduleRow } from './schedules-table.ts'
import { describeStatus, type StatusObject } from './status.ts'
import { parseIsoTimestamp, type ProcessBody, type ScheduleBody } from './validation.ts'

export type ProcessOutcome =
  | RunOutcome
  | { kind: 'cached'; run: CachedRun; results: ProcessingResults }

/**
 * The processing use cases behind the HTTP layer: process now, status, schedules, cancel. One per
 * router; the scheduler builds its own on the same tables.
 */
export class ProcessingService {
  readonly deps: ResolvedDeps
  readonly jobs: JobsTable
  readonly schedules: SchedulesTable
  readonly cache: ResultsCache
  readonly runner: JobRunner

  constructor(deps: ProcessingDeps) {
    this.deps = resolveDeps(deps)
    this.jobs = new JobsTable(this.deps.store)
    this.schedules = new SchedulesTable(this.deps.store)
    this.cache = new ResultsCache(this.deps, this.jobs)
    this.runner = new JobRunner(this.deps, this.jobs, this.cache)
  }

  tenantExists(tenantId: number): Promise<boolean> {
    return this.deps.engine.tenantExists(tenantId)
  }

  /** Spec order: (tenant checked by the caller) 409 if a job holds or waits for the lock, cache unless forced, run. */
  async process(tenantId: number, body: ProcessBody): Promise<ProcessOutcome> {
    const live = await this.jobs.live(tenantId, this.deps.now(), this.deps.leaseMs)
    if (live.length) return { kind: 'conflict', job: live[0]!, blocker: live.find((j) => j.started_at !== null) ?? live[0] }
    if (!body.force) {
      const run = await this.cache.lookup(tenantId, body.analyses)
      if (run) {
        this.deps.logger.debug({ tenant_id: tenantId, job_id: run.jobId }, 'processing results served from cache')
        return { kind: 'cached', run, results: run.results }
      }
    }
    return this.runner.runNow({ tenantId, analyses: body.analyses, batchSize: body.batch_size, force: body.force, kind: 'manual' })
  }

  async status(tenantId: number): Promise<StatusObject> {
    const now = this.deps.now()
    const [live, latestStarted, lastProcessed, schedules, dataVersion] = await Promise.all([
      this.jobs.live(tenantId, now, this.deps.leaseMs),
      this.jobs.latestStarted(tenantId),
      this.jobs.lastProcessed(tenantId),
      this.schedules.active(tenantId),
      tenantDataVersion(this.deps.store, tenantId),
    ])
    const runs = schedules.map((s) => s.next_run).filter((t): t is number => t !== null)
    return describeStatus({ live, latestStarted, lastProcessed, nextScheduled: runs.length ? Math.min(...runs) : null, now, staleAfterMs: this.deps.staleAfterMs, dataVersion })
  }

  /** Creates the tenant's schedule; an active one it had is replaced (deactivated). */
  async schedule(tenantId: number, body: ScheduleBody): Promise<{ schedule: ScheduleRow; replaced: string[] }> {
    const now = this.deps.now()
    const at = body.schedule_at === undefined ? now : parseIsoTimestamp(body.schedule_at)!
    const previous = await this.schedules.active(tenantId)
    const schedule: ScheduleRow = {
      tenant_id: tenantId,
      schedule_id: randomUUID(),
      schedule_at: at,
      recurring: body.recurring,
      frequency: body.recurring ? body.frequency! : null,
      analyses: body.analyses,
      // A time in the past runs at the scheduler's next poll; recurring runs then follow the anchor's grid.
      next_run: at,
      active: true,
      last_run_at: null,
      created_at: now,
      updated_at: now,
    }
    await this.schedules.write(schedule)
    for (const p of previous) await this.schedules.write({ ...p, active: false, next_run: null, updated_at: now })
    this.deps.logger.info({ tenant_id: tenantId, schedule_id: schedule.schedule_id, recurring: schedule.recurring, frequency: schedule.frequency, replaced: previous.map((p) => p.schedule_id) }, 'processing schedule created')
    return { schedule, replaced: previous.map((p) => p.schedule_id) }
  }

  /** Deactivates the tenant's active schedules; returns them. */
  async unschedule(tenantId: number): Promise<ScheduleRow[]> {
    const now = this.deps.now()
    const active = await this.schedules.active(tenantId)
    for (const s of active) await this.schedules.write({ ...s, active: false, next_run: null, updated_at: now })
    if (active.length) this.deps.logger.info({ tenant_id: tenantId, schedule_ids: active.map((s) => s.schedule_id) }, 'processing schedule removed')
    return active
  }

  cancel(tenantId: number): Promise<CancelOutcome> {
    return this.runner.cancel(tenantId)
  }

  close(): void {
    this.cache.close()
  }
}
