/** Faults the simulators inject into their API requests: random 429 and 500 answers, added latency. */

export interface Faults {
  /** Share (0..1) of API requests answered 429. */
  rate429: number
  /** Share (0..1) of API requests answered 500. */
  rate500: number
  /** Added to every API request. */
  latencyMs: number
  /** Retry-After (seconds) of the injected and the rate-limit 429s. */
  retryAfterSec: number
}

export const NO_FAULTS: Faults = { rate429: 0, rate500: 0, latencyMs: 0, retryAfterSec: 1 }

/** Draws a fault for one request: 429, 500 or none. */
export function drawFault(f: Pick<Faults, 'rate429' | 'rate500'>, random: () => number): 429 | 500 | null {
  const r = random()
  if (r < f.rate429) return 429
  if (r < f.rate429 + f.rate500) return 500
  return null
}

/** Waits the configured latency (nothing when it is 0). */
export async function addLatency(f: Pick<Faults, 'latencyMs'>): Promise<void> {
  if (f.latencyMs > 0) await new Promise((r) => setTimeout(r, f.latencyMs))
}
