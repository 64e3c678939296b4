/**
 * The spec's recommended retry: at most 3 attempts, exponential wait with multiplier 1 clamped
 * to [4 s, 10 s] (tenacity's `wait_exponential(multiplier=1, min=4, max=10)`), only on HTTP 429
 * and 5xx, never on other client errors.
 *
 * tenacity computes the wait after failed attempt n as multiplier · 2^(n−1) s, clamped to
 * [min, max]: n = 1, 2, 3 → 1, 2, 4 → 4 s; n = 4 → 8 s; n ≥ 5 → 10 s. With 3 attempts the two
 * waits are 4 s and 4 s; the growth only shows with a longer policy.
 */
import { AdsApiError } from './errors.ts'

export interface RetryPolicy {
  /** Attempts in total, the first one included. */
  maxAttempts: number
  multiplier: number
  minWaitMs: number
  maxWaitMs: number
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({ maxAttempts: 3, multiplier: 1, minWaitMs: 4_000, maxWaitMs: 10_000 })

export type Sleep = (ms: number) => Promise<void>

export const realSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Milliseconds to wait after failed attempt `attempt` (1-based), tenacity's formula. */
export function backoffMs(attempt: number, policy: RetryPolicy = DEFAULT_RETRY_POLICY): number {
  const raw = policy.multiplier * 1000 * 2 ** Math.max(0, attempt - 1)
  return Math.max(Math.max(0, policy.minWaitMs), Math.min(raw, policy.maxWaitMs))
}

/**
 * Whether the retry policy repeats `err`: an answer with HTTP 429 or >= 500 that is not one of
 * the spec's mapped codes (see errors.ts). Network errors, other 4xx and anything that is not an
 * AdsApiError are not repeated.
 */
export function isRetriable(err: unknown): boolean {
  return err instanceof AdsApiError && err.retriable
}

export interface RetryEvent {
  attempt: number
  waitMs: number
  error: unknown
}

export interface RetryOptions {
  policy?: RetryPolicy
  /** Injectable so tests run instantly. */
  sleep?: Sleep
  /** Default isRetriable. */
  shouldRetry?: (err: unknown) => boolean
  /** Called before each wait. */
  onRetry?: (event: RetryEvent) => void
}

/** Runs `fn(attempt)` until it succeeds, throws a non-retriable error, or attempts run out (the last error is thrown). */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const policy = opts.policy ?? DEFAULT_RETRY_POLICY
  const sleep = opts.sleep ?? realSleep
  const shouldRetry = opts.shouldRetry ?? isRetriable
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt)
    } catch (err) {
      if (attempt >= policy.maxAttempts || !shouldRetry(err)) throw err
      const waitMs = backoffMs(attempt, policy)
      opts.onRetry?.({ attempt, waitMs, error: err })
      await sleep(waitMs)
    }
  }
}
