import { MemoryRateLimiter, slidingWindow } from '../../../common/rate-limit.ts'

/**
 * A sliding-window request counter per caller (common/rate-limit.ts): `take` says how long to
 * wait (0: go ahead). `limit` and `windowMs` may be changed between calls (the /_sim/ admin
 * endpoints do, then `reset`).
 */
export class SlidingWindow {
  private readonly limiter = new MemoryRateLimiter({ algorithm: slidingWindow, maxKeys: 10_000 })
  constructor(public limit: number, public windowMs: number) {}

  take(key: string, now: number): number {
    const d = this.limiter.take(key, { limit: this.limit, windowMs: this.windowMs }, now)
    return d.allowed ? 0 : d.retryAt! - now
  }

  reset(): void {
    this.limiter.clear()
  }
}
