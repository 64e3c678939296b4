/**
 * Jobs running in this process, by job id, each with its AbortController: a cancel that lands on
 * the process running the job aborts it at once (other processes see the job's cancel mark at
 * their next heartbeat), and a shutdown aborts an owner's jobs and waits for them to end.
 */
import { sleep } from '../retry.ts'

interface LocalJob {
  /** Which replica (process identity in job rows) runs it. */
  replicaId: string
  owner: object
  controller: AbortController
  done: Promise<unknown>
}

export class LocalJobs {
  readonly #jobs = new Map<string, LocalJob>()

  /** Runs `body` as job `id` of `owner`, abortable through this registry until it settles. */
  async track<T>(id: string, replicaId: string, owner: object, body: (controller: AbortController) => Promise<T>): Promise<T> {
    const controller = new AbortController()
    const done = body(controller)
    this.#jobs.set(id, { replicaId, owner, controller, done })
    try {
      return await done
    } finally {
      this.#jobs.delete(id)
    }
  }

  /**
   * Aborts job `id` when replica `replicaId` runs it in this process; resolves when it ended or
   * after `waitMs`. False when the job does not run here.
   */
  async abort(id: string, replicaId: string, reason: Error, waitMs: number): Promise<boolean> {
    const job = this.#jobs.get(id)
    if (!job || job.replicaId !== replicaId) return false
    job.controller.abort(reason)
    await Promise.race([job.done.catch(() => undefined), sleep(waitMs)])
    return true
  }

  /** Aborts every job of `owner` and waits until they all ended. */
  async abortAll(owner: object, reason: Error): Promise<void> {
    const mine = [...this.#jobs.values()].filter((j) => j.owner === owner)
    for (const j of mine) j.controller.abort(reason)
    await Promise.allSettled(mine.map((j) => j.done))
  }
}

/** The process-wide registry. */
export const localJobs = new LocalJobs()
