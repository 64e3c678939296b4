/**
 * The connectors role's loop body: queue the recurring syncs that are due, then claim and run
 * queued jobs one at a time, oldest first, one job per integration at a time. A running job
 * whose heartbeat is older than the lease belongs to a runner that died: it is taken over and
 * resumes from its checkpoint.
 *
 * Claiming writes the job as `running` under this runner's id and reads it back; the runner goes
 * on only when the row it reads is its own (the single-row claim of common/jobs/lock.ts). Two runners racing for one job can, in a narrow
 * window, both start it: each re-checks ownership before every page, and whatever a page
 * publishes twice is identical (deterministic event ids), so consumers count it once.
 */
import type { Logger } from '../../common/logger.ts'
import type { IntegrationStore } from './store.ts'
import { configuredEntities } from './schemas.ts'
import { executeJob, type JobDeps } from './job.ts'
import type { SyncJob, SyncQueue } from './queue.ts'
import { dueOccurrence } from './schedule.ts'
import { leaseHeld } from '../../common/jobs/lease.ts'
import { claimRow } from '../../common/jobs/lock.ts'

export interface RunnerDeps extends JobDeps {
  queue: SyncQueue
  integrations: IntegrationStore
  logger: Logger
  /** A running job without a heartbeat for this long is taken over. */
  leaseMs: number
  /** Most jobs one tick runs (the loop comes back for the rest). */
  maxJobsPerTick: number
}

export class SyncRunner {
  constructor(private readonly deps: RunnerDeps) {}

  /** One pass: schedule, then run what is claimable. Resolves with the number of attempts run. */
  async tick(signal: AbortSignal): Promise<number> {
    await this.scheduleDue()
    let ran = 0
    for (const candidate of await this.claimable()) {
      if (signal.aborted || ran >= this.deps.maxJobsPerTick) break
      const job = await this.claim(candidate)
      if (!job) continue
      ran++
      await executeJob(job, this.deps, signal)
    }
    return ran
  }

  /** Queues the due occurrence of every recurring integration that has no job in flight. */
  private async scheduleDue(): Promise<void> {
    const { queue, integrations, now } = this.deps
    const active = (await integrations.list()).filter((i) => i.is_active && i.configuration.sync_interval !== 'manual')
    if (!active.length) return
    const last = await queue.lastScheduled(active.map((i) => i.id))
    const busy = new Set((await queue.live()).map((j) => j.integration_id))
    for (const i of active) {
      if (busy.has(i.id)) continue
      const occ = dueOccurrence(i, last.get(i.id) ?? null, now())
      if (occ === null) continue
      await queue.enqueue({
        // Derived from the occurrence: two runners scheduling it write the same row.
        sync_id: `sync_sched_${i.id}_${occ}`,
        integration_id: i.id,
        tenant_id: i.tenant_id,
        kind: 'scheduled',
        sync_type: 'incremental',
        entities: configuredEntities(i.integration_type, i.configuration),
        date_from: null,
        date_to: null,
        scheduled_for: occ,
        max_attempts: 1 + i.configuration.retry_attempts,
      })
      this.deps.logger.info({ integration_id: i.id, tenant_id: i.tenant_id, occurrence: new Date(occ).toISOString() }, 'recurring sync queued')
    }
  }

  /** Per integration: its job that may run now (none while another of its jobs runs under a live lease). */
  private async claimable(): Promise<SyncJob[]> {
    const now = this.deps.now()
    const stale = (j: SyncJob) => j.status === 'running' && !leaseHeld(j.heartbeat_at, now, this.deps.leaseMs)
    const byIntegration = new Map<number, SyncJob[]>()
    for (const j of await this.deps.queue.live()) byIntegration.set(j.integration_id, [...(byIntegration.get(j.integration_id) ?? []), j])
    const out: SyncJob[] = []
    for (const jobs of byIntegration.values()) {
      if (jobs.some((j) => j.status === 'running' && !stale(j))) continue
      const next = jobs.find(stale) ?? jobs.find((j) => j.status === 'queued' && j.not_before <= now)
      if (next) out.push(next)
    }
    return out.sort((a, b) => a.queued_at - b.queued_at)
  }

  private async claim(candidate: SyncJob): Promise<SyncJob | null> {
    const { queue, now, runnerId } = this.deps
    const current = await queue.get(candidate.integration_id, candidate.sync_id)
    if (!current || (current.status !== 'queued' && current.status !== 'running')) return null
    if (current.status === 'running') {
      if (leaseHeld(current.heartbeat_at, now(), this.deps.leaseMs)) return null
      // Its runner died mid-attempt: that run ends as interrupted, the job resumes from its checkpoint.
      const [run] = (await queue.runs(current.integration_id, current.sync_id)).filter((r) => r.attempt === current.attempt && r.status === 'running')
      if (run) await queue.writeRun({ ...run, status: 'interrupted', finished_at: now(), duration_ms: Math.max(0, (current.heartbeat_at ?? run.started_at) - run.started_at) })
      this.deps.logger.warn({ integration_id: current.integration_id, sync_id: current.sync_id, runner_id: current.runner_id }, 'taking over a sync whose runner stopped answering')
    }
    const claimed: SyncJob = { ...current, status: 'running', runner_id: runnerId, attempt: current.attempt + 1, started_at: current.started_at ?? now(), heartbeat_at: now() }
    return claimRow(claimed, {
      write: (j) => queue.write(j),
      read: () => queue.get(claimed.integration_id, claimed.sync_id),
      ours: (j) => j.runner_id === runnerId && j.status === 'running' && j.attempt === claimed.attempt,
    })
  }
}
