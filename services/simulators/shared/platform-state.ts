/**
 * What the commerce-platform, marketplace and search-ads simulators' states have in common: the
 * request log, injected faults and a sliding rate-limit window per caller.
 */
import { drawFault, NO_FAULTS, type Faults } from './faults.ts'
import { SlidingWindow } from './rate-limit.ts'
import { retryAfterSeconds } from '../../../common/rate-limit.ts'
import type { RequestLogEntry } from './request-log.ts'

export interface PlatformStateOptions {
  now: () => number
  /** Draws the random faults. */
  random: () => number
  rateLimit: { requests: number; windowMs: number }
}

export class PlatformState<O extends PlatformStateOptions = PlatformStateOptions> {
  readonly requestLog: RequestLogEntry[] = []
  faults: Faults = { ...NO_FAULTS }
  readonly window: SlidingWindow

  constructor(readonly opts: O) {
    this.window = new SlidingWindow(opts.rateLimit.requests, opts.rateLimit.windowMs)
  }

  setFaults(f: Partial<Faults>): void {
    this.faults = { ...this.faults, ...f }
  }

  nextFault(): 429 | 500 | null {
    return drawFault(this.faults, this.opts.random)
  }
}

/** Why a request is refused before it is served: the caller's rate limit, or an injected fault. */
export type Refusal = { status: 429; cause: 'rate-limit' | 'fault'; retryAfterSec: number } | { status: 500; cause: 'fault' }

/**
 * Counts the request against `key`'s window, then draws a fault. A rate-limited caller is told to
 * come back when the window's oldest call leaves it (at least 1 s); an injected 429 says the
 * configured `retryAfterSec`.
 */
export function admit(state: PlatformState, key: string): Refusal | null {
  const wait = state.window.take(key, state.opts.now())
  if (wait > 0) return { status: 429, cause: 'rate-limit', retryAfterSec: retryAfterSeconds(wait) }
  const fault = state.nextFault()
  if (fault === 429) return { status: 429, cause: 'fault', retryAfterSec: state.faults.retryAfterSec }
  if (fault === 500) return { status: 500, cause: 'fault' }
  return null
}
