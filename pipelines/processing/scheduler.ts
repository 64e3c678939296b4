import type { Logger } from '../../common/logger.ts'
import { DEFAULT_BATCH_SIZE } from './validation.ts'
import type { ProcessingDeps } from './deps.ts'
import { nextOccurrenceAfter } from '../../common/jobs/schedule.ts'
import { isFinal, isLive } from './jobs-table.ts'
import type { ScheduleRow } from './schedules-table.ts'
import { ProcessingService } from './service.ts'

export interface SchedulerOptions extends ProcessingDeps {
  /** How often due schedules are looked for. Default 15 s. */
  pollMs?: number
}

export interface ProcessingScheduler {
  /** Stops polling, interrupts this scheduler's jobs and waits for their final rows. */
  stop(): Promise<void>
  /** One poll now; resolves when the due schedules found have been handed to jobs (not when they finish). */
  pollOnce(): Promise<void>
  /** Resolves when the jobs started so far have finished. */
  idle(): Promise<void>
}

export const DEFAULT_SCHEDULER_POLL_MS = 15_000

/**
 * Runs due schedules (processing_schedules), on any number of replicas:
 * - an occurrence (schedule_id, next_run) runs as a queued job through the tenant lock, so it waits
 *   behind a running job of the tenant rather than failing;
 * - replicas polling the same occurrence both may queue a job; under the lock a job first checks
 *   that no other job of the occurrence started or finished, so it runs once;
 * - next_run advances (recurring) or the schedule is disabled (one-shot) after the job ends, so a
 *   replica that dies mid-occurrence leaves it due, and another replica runs it after the lease.
 * Schedules live in ClickHouse, so a restarted scheduler picks up where the last one stopped.
 */
export function startProcessingScheduler(opts: SchedulerOptions): ProcessingScheduler {
  const service = new ProcessingService(opts)
  const { deps, jobs, schedules, runner } = service
  const log: Logger = deps.logger
  const pollMs = opts.pollMs ?? DEFAULT_SCHEDULER_POLL_MS
  const inFlight = new Map<string, Promise<void>>()
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let polling: Promise<void> = Promise.resolve()

  async function handle(s: ScheduleRow, occurrence: number): Promise<void> {
    const now = deps.now()
    const existing = await jobs.forOccurrence(s.tenant_id, s.schedule_id, occurrence)
    if (existing.some((j) => isFinal(j.status))) return advance(s, occurrence)
    if (existing.some((j) => isLive(j.status) && j.heartbeat_at >= now - deps.leaseMs)) return // another replica has it
    const outcome = await runner.runQueued(
      { tenantId: s.tenant_id, analyses: s.analyses, batchSize: DEFAULT_BATCH_SIZE, force: false, kind: 'scheduled', scheduleId: s.schedule_id, occurrenceAt: occurrence },
      async (job) => {
        const others = await jobs.forOccurrence(s.tenant_id, s.schedule_id, occurrence)
        const served = others.find((j) => j.job_id !== job.job_id && (isFinal(j.status) || j.started_at !== null))
        return served ? `occurrence already served by job ${served.job_id}` : undefined
      },
    )
    if (outcome.kind === 'interrupted') return // still due: the next scheduler runs it
    await advance(s, occurrence)
  }

  async function advance(s: ScheduleRow, occurrence: number): Promise<void> {
    const now = deps.now()
    if (s.recurring && s.frequency) {
      const next = nextOccurrenceAfter(s.schedule_at, s.frequency, Math.max(occurrence, now))
      await schedules.write({ ...s, next_run: next, last_run_at: occurrence, updated_at: now })
      log.info({ tenant_id: s.tenant_id, schedule_id: s.schedule_id, next_run: new Date(next).toISOString() }, 'processing schedule advanced')
    } else {
      await schedules.write({ ...s, active: false, next_run: null, last_run_at: occurrence, updated_at: now })
      log.info({ tenant_id: s.tenant_id, schedule_id: s.schedule_id }, 'one-shot processing schedule done')
    }
  }

  async function poll(): Promise<void> {
    if (stopped) return
    try {
      for (const s of await schedules.due(deps.now())) {
        if (stopped || inFlight.has(s.schedule_id) || s.next_run === null) continue
        const p = handle(s, s.next_run)
          .catch((err: unknown) => log.error({ err, tenant_id: s.tenant_id, schedule_id: s.schedule_id }, 'scheduled processing failed'))
          .finally(() => inFlight.delete(s.schedule_id))
        inFlight.set(s.schedule_id, p)
      }
    } catch (err) {
      log.warn({ err }, 'processing scheduler poll failed')
    }
  }

  function loop(): void {
    if (stopped) return
    timer = setTimeout(() => {
      polling = poll().finally(loop)
    }, pollMs)
  }

  polling = poll().finally(loop)
  log.info({ replica_id: deps.replicaId, poll_ms: pollMs }, 'processing scheduler started')

  return {
    async pollOnce() {
      await polling
      polling = poll()
      await polling
    },
    async idle() {
      await Promise.allSettled([...inFlight.values()])
    },
    async stop() {
      if (stopped) return
      stopped = true
      clearTimeout(timer)
      await polling
      await runner.stop()
      await Promise.allSettled([...inFlight.values()])
      service.close()
      log.info({ replica_id: deps.replicaId }, 'processing scheduler stopped')
    },
  }
}
