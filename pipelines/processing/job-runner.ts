import { randomUUID } from 'node:crypto'
import type { Analysis, ProcessingResults } from '../features/index.ts'
import type { ResolvedDeps } from './deps.ts'
import { isFinal, isLive, lockClaim, type JobKind, type JobRow, type JobsTable } from './jobs-table.ts'
import { afterClaim, afterStart, blockerOf, RACE_RECHECK_MS, raceWaitMs } from '../../common/jobs/lock.ts'
import { Heartbeat } from '../../common/jobs/lease.ts'
import { tenantDataVersion } from '../../common/store/data-changes.ts'
import { localJobs } from '../../common/jobs/cancel.ts'
import { sleep } from '../../common/retry.ts'
import { pickResults, type ResultsCache } from './results-cache.ts'

/** Abort reason of DELETE .../cancel. */
export class JobCancelledError extends Error {
  override readonly name = 'JobCancelledError'
  constructor() {
    super('processing job cancelled')
  }
}

/** Abort reason when the replica shuts down (ProcessingScheduler.stop). */
export class ShutdownError extends Error {
  override readonly name = 'ShutdownError'
  constructor() {
    super('interrupted: replica shutting down')
  }
}

export interface JobSpec {
  tenantId: number
  analyses: Analysis[]
  batchSize: number
  force: boolean
  kind: JobKind
  scheduleId?: string
  occurrenceAt?: number
}

export type RunOutcome =
  | { kind: 'processed'; job: JobRow; results: ProcessingResults; totalTime: number }
  | { kind: 'failed'; job: JobRow; error: Error }
  | { kind: 'cancelled'; job: JobRow }
  /** The lock was not obtained (manual jobs): `blocker` holds or waits for it. */
  | { kind: 'conflict'; job: JobRow; blocker: JobRow | undefined }
  /** A scheduled job whose occurrence another job already served. */
  | { kind: 'skipped'; job: JobRow }
  /** A queued job dropped by a shutdown before it started: its occurrence is still to be run. */
  | { kind: 'interrupted'; job: JobRow }

export type CancelOutcome =
  | { kind: 'nothing' }
  | { kind: 'cancelled' | 'cancelling'; job: JobRow }
  /** The job ended on its own before the cancel reached it. */
  | { kind: 'finished'; job: JobRow }

/** Called under the lock just before the engine starts; a string is the reason to skip the run. */
export type BeforeRun = (job: JobRow) => Promise<string | undefined>

/**
 * Runs processing jobs under the cross-replica tenant lock (lock.ts): claims, heartbeats, cancel
 * marks, final rows, the results cache and the "tenant processed" event.
 */
export class JobRunner {
  constructor(
    private readonly deps: ResolvedDeps,
    private readonly jobs: JobsTable,
    private readonly cache: ResultsCache,
  ) {}

  /** A manual run: the lock now or a conflict; it only waits (briefly) for racing claims to decide. */
  async runNow(spec: JobSpec): Promise<RunOutcome> {
    const job = this.#newJob(spec, 'processing')
    return this.#tracked(job, async (controller) => {
      await this.jobs.write(job)
      const deadline = performance.now() + raceWaitMs(this.deps.leaseMs)
      for (;;) {
        const live = await this.#live(job.tenant_id)
        const verdict = afterClaim(live, job.job_id)
        if (verdict === 'take') break
        if (verdict === 'blocked' || performance.now() > deadline) return this.#reject(job, blockerOf(live, job.job_id)?.row)
        await sleep(RACE_RECHECK_MS)
      }
      const r = await this.#promote(job, controller, 'reject')
      return r === 'lost' ? this.#reject(job, blockerOf(await this.#live(job.tenant_id), job.job_id)?.row) : r
    })
  }

  /**
   * A scheduled run: queued until it may take the lock (heartbeating meanwhile, so a crashed
   * replica's queue entry expires), then run. `beforeRun` is checked under the lock.
   */
  async runQueued(spec: JobSpec, beforeRun?: BeforeRun): Promise<RunOutcome> {
    const job = this.#newJob(spec, 'queued')
    return this.#tracked(job, async (controller) => {
      await this.jobs.write(job)
      this.deps.logger.info(logFields(job), 'processing job queued')
      for (;;) {
        if (controller.signal.aborted) return this.#endUnstarted(job, controller)
        let take = false
        try {
          const live = await this.#live(job.tenant_id)
          const mine = live.find((j) => j.id === job.job_id)?.row
          if (mine?.status === 'cancelling' || (!mine && (await this.#markedCancelled(job)))) {
            controller.abort(new JobCancelledError())
            return this.#endUnstarted(job, controller)
          }
          take = afterClaim(live, job.job_id) === 'take'
          if (!take) {
            job.heartbeat_at = this.deps.now()
            await this.jobs.write(job)
          }
        } catch (err) {
          // The store is briefly unavailable: keep the place in line and retry at the next poll.
          this.deps.logger.warn({ ...logFields(job), err }, 'processing queue poll failed')
        }
        if (take) {
          const r = await this.#promote(job, controller, 'requeue', beforeRun)
          if (r !== 'lost') return r
        }
        await sleep(this.deps.heartbeatMs, controller.signal)
      }
    })
  }

  /** Cancels the tenant's running job, else its oldest queued one. */
  async cancel(tenantId: number): Promise<CancelOutcome> {
    const live = await this.jobs.live(tenantId, this.deps.now(), this.deps.leaseMs)
    const target = live.find((j) => j.status !== 'queued' && j.started_at !== null) ?? live[0]
    if (!target) return { kind: 'nothing' }
    // The mark works for any replica: the owner sees it at its next heartbeat or queue poll.
    const current = (await this.jobs.get(tenantId, target.job_id)) ?? target
    if (isLive(current.status)) await this.jobs.write({ ...current, status: 'cancelling' })
    await localJobs.abort(target.job_id, this.deps.replicaId, new JobCancelledError(), this.deps.cancelWaitMs)
    const after = (await this.jobs.get(tenantId, target.job_id)) ?? current
    if (after.status === 'cancelled') return { kind: 'cancelled', job: after }
    if (isFinal(after.status)) return { kind: 'finished', job: after }
    this.deps.logger.info(logFields(after), 'processing job cancel requested')
    return { kind: 'cancelling', job: { ...after, status: 'cancelling' } }
  }

  /** Aborts this runner's jobs (as a shutdown) and waits for them to write their final rows. */
  stop(): Promise<void> {
    return localJobs.abortAll(this, new ShutdownError())
  }

  #newJob(spec: JobSpec, status: 'processing' | 'queued'): JobRow {
    const now = this.deps.now()
    return {
      tenant_id: spec.tenantId,
      job_id: randomUUID(),
      kind: spec.kind,
      schedule_id: spec.scheduleId ?? '',
      occurrence_at: spec.occurrenceAt ?? null,
      status,
      replica_id: this.deps.replicaId,
      analyses: spec.analyses,
      batch_size: spec.batchSize,
      force: spec.force,
      claimed_at: now,
      heartbeat_at: now,
      started_at: null,
      finished_at: null,
      records_processed: 0,
      total_time: 0,
      results: '',
      error: '',
      data_version: '',
    }
  }

  #tracked(job: JobRow, body: (controller: AbortController) => Promise<RunOutcome>): Promise<RunOutcome> {
    return localJobs.track(job.job_id, this.deps.replicaId, this, body)
  }

  /** The tenant's live claims in lock order, as the lock sees them. */
  async #live(tenantId: number) {
    return (await this.jobs.live(tenantId, this.deps.now(), this.deps.leaseMs)).map(lockClaim)
  }
  async #markedCancelled(job: JobRow): Promise<boolean> {
    const row = await this.jobs.get(job.tenant_id, job.job_id)
    return row?.status === 'cancelling' || row?.status === 'cancelled'
  }

  /**
   * Took the lock at read 1: write started_at, read again, keep it or give it back ('reject' ends
   * the claim, 'requeue' puts a queued job back in line). Then run.
   */
  async #promote(job: JobRow, controller: AbortController, onLoss: 'reject' | 'requeue', beforeRun?: BeforeRun): Promise<RunOutcome | 'lost'> {
    const now = this.deps.now()
    Object.assign(job, { status: 'processing', started_at: now, heartbeat_at: now })
    await this.jobs.write(job)
    const deadline = performance.now() + raceWaitMs(this.deps.leaseMs)
    let verdict: 'keep' | 'wait' | 'lost'
    for (;;) {
      const live = await this.#live(job.tenant_id)
      const mine = live.find((j) => j.id === job.job_id)?.row
      if (mine?.status === 'cancelling' || controller.signal.aborted) {
        if (!controller.signal.aborted) controller.abort(new JobCancelledError())
        return this.#endUnstarted(job, controller)
      }
      verdict = afterStart(live, job.job_id)
      if (verdict !== 'wait') break
      if (performance.now() > deadline) {
        verdict = 'lost'
        break
      }
      await sleep(RACE_RECHECK_MS)
    }
    if (verdict === 'lost') {
      if (onLoss === 'requeue') {
        Object.assign(job, { status: 'queued', started_at: null, heartbeat_at: this.deps.now() })
        await this.jobs.write(job)
      }
      return 'lost'
    }
    let skip: string | undefined
    try {
      skip = await beforeRun?.(job)
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e))
      await this.#finish(job, 'failed', { error: `before run: ${err.message}` })
      return { kind: 'failed', job, error: err }
    }
    if (skip) {
      await this.#finish(job, 'rejected', { error: skip })
      this.deps.logger.info({ ...logFields(job), reason: skip }, 'processing job skipped')
      return { kind: 'skipped', job }
    }
    // A cancel may land while beforeRun awaits: never hand the engine an already-aborted signal
    // (its abort listener would never fire, and the cancel would wait for a whole run).
    if (controller.signal.aborted) return this.#endUnstarted(job, controller)
    return this.#execute(job, controller)
  }

  async #reject(job: JobRow, blocker: JobRow | undefined): Promise<RunOutcome> {
    await this.#finish(job, 'rejected', { error: blocker ? `tenant locked by job ${blocker.job_id}` : 'lost the race for the tenant lock' })
    return { kind: 'conflict', job, blocker }
  }

  /** Ends a job that never ran the engine: cancelled, or dropped by a shutdown. */
  async #endUnstarted(job: JobRow, controller: AbortController): Promise<RunOutcome> {
    if (controller.signal.reason instanceof ShutdownError) {
      // Rejected, not cancelled: the scheduler of the next start runs the occurrence.
      await this.#finish(job, 'rejected', { error: String(controller.signal.reason.message) })
      return { kind: 'interrupted', job }
    }
    job.started_at = null
    await this.#finish(job, 'cancelled', { error: 'cancelled before it started' })
    this.deps.logger.info(logFields(job), 'processing job cancelled')
    return { kind: 'cancelled', job }
  }

  async #execute(job: JobRow, controller: AbortController): Promise<RunOutcome> {
    const { logger, engine } = this.deps
    this.cache.dropLocal(job.tenant_id)
    logger.info({ ...logFields(job), batch_size: job.batch_size, force: job.force }, 'processing job started')
    const t0 = performance.now()
    const heartbeat = this.#heartbeat(job, controller)
    // Read before the engine reads the data (a change that lands during the run makes the results
    // stale), under the heartbeat: a slow read must not let the lease lapse.
    job.data_version = await tenantDataVersion(this.deps.store, job.tenant_id).catch(() => '')
    let outcome: RunOutcome
    let raw: ProcessingResults | undefined
    let failure: Error | undefined
    try {
      // A cancel that landed during the read: never hand the engine an already-aborted signal.
      if (controller.signal.aborted) throw controller.signal.reason
      raw = await engine.run(job.tenant_id, {
        analyses: job.analyses,
        batchSize: job.batch_size,
        force: job.force,
        signal: controller.signal,
        onProgress: (done) => {
          job.records_processed = done
        },
      })
    } catch (e) {
      failure = e instanceof Error ? e : new Error(String(e))
    }
    const totalTime = round3((performance.now() - t0) / 1000)
    await heartbeat.stop()
    if (raw && !failure) {
      const results = pickResults(raw, job.analyses)
      await this.#finish(job, 'processed', { results: JSON.stringify(results), total_time: totalTime, records_processed: recordsOf(results) })
      this.cache.remember(job, results)
      outcome = { kind: 'processed', job, results, totalTime }
    } else {
      const reason: unknown = controller.signal.aborted ? controller.signal.reason : undefined
      if (reason instanceof JobCancelledError) {
        await this.#finish(job, 'cancelled', { total_time: totalTime, error: reason.message })
        outcome = { kind: 'cancelled', job }
      } else {
        // A shutdown mid-run is a failure: the run started and may have written part of its output.
        const err = reason instanceof ShutdownError ? reason : (failure ?? new Error('the engine returned no results'))
        await this.#finish(job, 'failed', { total_time: totalTime, error: err.message })
        outcome = { kind: 'failed', job, error: err }
      }
    }
    const fields = { ...logFields(job), total_time: job.total_time, records_processed: job.records_processed }
    if (outcome.kind === 'processed') {
      logger.info(fields, 'processing job finished')
      this.deps.events.emitTenantProcessed({
        tenantId: job.tenant_id,
        jobId: job.job_id,
        replicaId: job.replica_id,
        analyses: job.analyses,
        results: outcome.results,
        finishedAt: job.finished_at!,
      })
    } else if (outcome.kind === 'cancelled') logger.info(fields, 'processing job cancelled')
    else logger.error({ ...fields, error: job.error }, 'processing job failed')
    return outcome
  }

  /**
   * While the engine runs: every heartbeatMs, read the job's row (a cancel mark from any replica
   * aborts the engine) and write it back with a fresh heartbeat_at.
   */
  #heartbeat(job: JobRow, controller: AbortController): Heartbeat {
    const beat = async () => {
      const row = await this.jobs.get(job.tenant_id, job.job_id)
      if (heartbeat.stopped) return
      if (row?.status === 'cancelling' || row?.status === 'cancelled') {
        if (!controller.signal.aborted) {
          this.deps.logger.info(logFields(job), 'processing job cancel mark seen; aborting')
          controller.abort(new JobCancelledError())
        }
        job.status = 'cancelling'
      }
      job.heartbeat_at = this.deps.now()
      await this.jobs.write(job)
    }
    const heartbeat = new Heartbeat(this.deps.heartbeatMs, beat, (err) => this.deps.logger.warn({ ...logFields(job), err }, 'processing heartbeat failed'))
    return heartbeat
  }

  async #finish(job: JobRow, status: JobRow['status'], extra: Partial<JobRow>): Promise<void> {
    const now = this.deps.now()
    Object.assign(job, extra, { status, finished_at: now, heartbeat_at: now })
    await this.jobs.write(job)
  }
}

function logFields(job: JobRow): Record<string, unknown> {
  return { tenant_id: job.tenant_id, job_id: job.job_id, kind: job.kind, schedule_id: job.schedule_id || undefined, replica_id: job.replica_id, analyses: job.analyses }
}

/** Customers processed by a run: the largest count any analysis reports. */
export function recordsOf(results: ProcessingResults): number {
  return Math.max(0, results.rfm?.total_processed ?? 0, results.clv?.processed ?? 0, results.churn?.processed ?? 0)
}

const round3 = (x: number) => Math.round(x * 1000) / 1000
