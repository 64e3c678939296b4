/**
 * Options the commerce-platform, marketplace and search-ads simulators all take, and how they
 * become a state's clock, fault dice and rate limit. Each simulator documents its defaults.
 */
import type { Faults } from './faults.ts'
import type { PlatformStateOptions } from './platform-state.ts'
import type { RequestLogEntry } from './request-log.ts'

export interface PlatformSimulatorOptions {
  /** How many customers the synthetic generator makes, and its seed. */
  customers?: number
  seed?: string | number
  /** The shop's history: default the year before `end`. */
  start?: Date
  /** Default: the start of the clock's day (UTC). */
  end?: Date
  /** Requests per window per caller (beyond it: 429 with Retry-After); windowMs default 60 s. */
  rateLimit?: { requests?: number; windowMs?: number }
  faults?: Partial<Faults>
  /** The clock (records and status changes after it are not visible yet); default Date.now. */
  now?: () => number
  /** Draws the random faults; default Math.random. */
  random?: () => number
  /** Called with each request-log entry as it is recorded. */
  onRequest?: (entry: RequestLogEntry) => void
}

/** The clock, the fault dice and the rate limit, with the simulator's default requests per window. */
export function trafficOptions(o: PlatformSimulatorOptions, defaultRequests: number): PlatformStateOptions {
  return {
    now: o.now ?? Date.now,
    random: o.random ?? Math.random,
    rateLimit: { requests: o.rateLimit?.requests ?? defaultRequests, windowMs: o.rateLimit?.windowMs ?? 60_000 },
  }
}
