import os from 'node:os'

/**
 * Leases: a claimed job is alive while its owner writes a heartbeat more often than the lease;
 * a claim whose heartbeat is older than the lease belongs to an owner that died, and another
 * owner may take the job over.
 */

/**
 * Who claims or holds something in the store: `host:pid`, and `:part` to tell apart several
 * claimants of one process (a role's pieces, or instances sharing a process in a test).
 */
export function claimantId(part?: string): string {
  return `${os.hostname()}:${process.pid}${part === undefined ? '' : `:${part}`}`
}

/** A heartbeat at `heartbeatAt` (epoch ms, null: never) still holds the lease at `now`. */
export function leaseHeld(heartbeatAt: number | null, now: number, leaseMs: number): boolean {
  return heartbeatAt !== null && heartbeatAt >= now - leaseMs
}

/** The oldest heartbeat that still holds the lease at `now` (a query's cutoff). */
export function leaseCutoff(now: number, leaseMs: number): number {
  return now - leaseMs
}

/** Two missed heartbeats must not lose a lease. */
export function checkHeartbeat(heartbeatMs: number, leaseMs: number): void {
  if (heartbeatMs * 3 > leaseMs) throw new Error(`heartbeatMs (${heartbeatMs}) must be at most a third of leaseMs (${leaseMs})`)
}

/**
 * Runs `beat` every `periodMs` while a job runs, one beat at a time: a slow store skips a beat
 * rather than piling writes up. A failing beat is reported to `onError` and the next one tries
 * again. stop() waits for the beat in flight, so nothing writes the job after it.
 */
export class Heartbeat {
  readonly #timer: NodeJS.Timeout
  #inFlight: Promise<void> = Promise.resolve()
  #stopped = false
  #busy = false

  constructor(periodMs: number, beat: () => Promise<void>, onError: (err: unknown) => void = () => undefined) {
    this.#timer = setInterval(() => {
      if (this.#busy || this.#stopped) return
      this.#busy = true
      this.#inFlight = (async () => {
        try {
          if (!this.#stopped) await beat()
        } catch (err) {
          onError(err)
        } finally {
          this.#busy = false
        }
      })()
    }, periodMs)
  }

  get stopped(): boolean {
    return this.#stopped
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearInterval(this.#timer)
    await this.#inFlight
  }
}
