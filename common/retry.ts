/**
 * Retrying an operation that may succeed when tried again: exponential backoff, stopping after a
 * number of attempts or at a deadline, and which failures are worth another try. The one retry
 * loop of the project; each caller brings its policy and, where it differs from the default, its
 * classification of failures:
 *
 * - `cdp import` and `cdp generate --publish` (through the event sink, where retrying a batch
 *   that did arrive is harmless: event ids are derived from content): the default policy, 60 s;
 * - the ads platform client (pipelines/audience-sync/ads-platform/client.ts): 3 attempts,
 *   4–10 s, only its retriable HTTP answers;
 * - the connectors' HTTP client (pipelines/connectors/sources/http.ts): 3 attempts, 0.5 s
 *   doubling, and a short Retry-After of a 429 waited out as the platform asks.
 *
 * The default classification: a lost connection (HTTP or Kafka), a timeout, or an error that
 * says itself it is retriable (an HTTP 5xx, 429 or 408, as the caller classified it). Everything
 * else (a refused token, a record the receiver rejects, a schema mismatch) fails at once.
 */

/**
 * A failure that says itself whether trying again may help. The classification takes its word
 * and looks no further down its causes.
 */
export class ClassifiedError extends Error {
  override name = 'ClassifiedError'
  constructor(
    message: string,
    readonly retriable: boolean,
  ) {
    super(message)
  }
}

/** Retries ran out of time; `cause` is the last failure. */
export class RetriesExhaustedError extends Error {
  override name = 'RetriesExhaustedError'
  constructor(
    readonly attempts: number,
    readonly elapsedMs: number,
    cause: unknown,
  ) {
    super(`gave up after ${attempts} attempts in ${Math.round(elapsedMs / 1000)} s: ${describeError(cause)}`, { cause })
  }
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN', 'EAI_AGAIN',
  'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT',
])
/** kafkajs: the broker is unreachable or slow (KafkaJSNumberOfRetriesExceeded wraps such a cause after kafkajs's own retries). */
const KAFKA_TRANSIENT = new Set([
  'KafkaJSConnectionError', 'KafkaJSConnectionClosedError', 'KafkaJSRequestTimeoutError', 'KafkaJSNumberOfRetriesExceeded',
  'KafkaJSBrokerNotFound', 'KafkaJSMetadataNotLoaded', 'KafkaJSLockTimeout',
])
const NETWORK_MESSAGES = /socket hang up|other side closed|fetch failed/i

/** Whether a failed operation may succeed when tried again (the error or any of its causes says so). */
export function isRetriableError(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 6; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return true
    if (KAFKA_TRANSIENT.has(e.name) || e.name === 'TimeoutError') return true
    if ((e as { retriable?: unknown }).retriable === true) return true
    if (e instanceof ClassifiedError) return false
    if (NETWORK_MESSAGES.test(e.message)) return true
  }
  return false
}

/** One line for a human: the message with its innermost network code ("fetch failed (ECONNREFUSED)"). */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  let code: string | undefined
  for (let e: unknown = err.cause, depth = 0; e instanceof Error && depth < 6; e = e.cause, depth++) {
    const c = (e as { code?: unknown }).code
    if (typeof c === 'string') code = c
    else if (!code && e.message) code = e.message
  }
  return code && !err.message.includes(code) ? `${err.message} (${code})` : err.message
}

export interface RetryPolicy {
  /** Keep retrying for this long (0: no retries); absent: no deadline, `maxAttempts` decides. */
  retryForMs?: number
  /** Attempts in all, the first one included; absent: as many as the deadline allows. */
  maxAttempts?: number
  /** First wait; it doubles after each failure up to maxDelayMs. */
  initialDelayMs: number
  maxDelayMs: number
  /** No wait is shorter than this (default 0; it wins over maxDelayMs, as tenacity's `min` does). */
  minDelayMs?: number
}

export const DEFAULT_RETRY_POLICY: RetryPolicy & { retryForMs: number } = { retryForMs: 60_000, initialDelayMs: 500, maxDelayMs: 8_000 }

/** Wait before retry number `attempt` (1 = the first retry): 0.5 s, 1 s, 2 s, 4 s, 8 s, 8 s, ... */
export function retryDelayMs(attempt: number, policy: RetryPolicy = DEFAULT_RETRY_POLICY): number {
  const exponential = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.max(0, attempt - 1))
  return Math.max(Math.max(0, policy.minDelayMs ?? 0), exponential)
}

export type Sleep = (ms: number) => Promise<void>

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const t = setTimeout(done, ms)
    function done() {
      clearTimeout(t)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, { once: true })
  })
}

/**
 * What to do with one failure: `false` fails at once (the failure is thrown as is), `true`
 * retries after the policy's backoff, `{ afterMs }` retries after a wait the failure names
 * itself (an HTTP Retry-After).
 */
export type RetryVerdict = boolean | { afterMs: number }

/** What onRetry is told before each wait. */
export interface RetryInfo {
  attempt: number
  delayMs: number
  error: unknown
  /** Until the deadline (Infinity without one). */
  remainingMs: number
}

export interface RetryHooks {
  /** Called before each wait, e.g. to tell the user. */
  onRetry?: (info: RetryInfo) => void
  /** Which failures are retried, and after how long (default: `isRetriableError`, after the backoff). */
  classify?: (err: unknown, attempt: number) => RetryVerdict
  /**
   * When attempts or time run out: `'wrap'` (default) throws RetriesExhaustedError with the last
   * failure as its cause (a message for a person: "gave up after 6 attempts in 10 s: ..."),
   * `'last'` throws the last failure itself (a client whose callers act on its typed errors).
   */
  exhausted?: 'wrap' | 'last'
  sleep?: Sleep
  now?: () => number
}

/** A retry as one line: "fetch failed (ECONNREFUSED); retry 1 in 0.5 s (giving up in 60 s)". */
export function describeRetry({ attempt, delayMs, error, remainingMs }: RetryInfo): string {
  const giveUp = Number.isFinite(remainingMs) ? ` (giving up in ${Math.ceil(remainingMs / 1000)} s)` : ''
  return `${describeError(error)}; retry ${attempt} in ${(delayMs / 1000).toFixed(1)} s${giveUp}`
}

/**
 * Runs `fn(attempt)` (1-based) until it succeeds, a failure is not retried (thrown as is), or
 * `maxAttempts` or the `retryForMs` deadline run out (see `exhausted`). A wait never goes past
 * the deadline: the last one is shortened so the final attempt falls on it rather than after it.
 */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, policy: RetryPolicy = DEFAULT_RETRY_POLICY, hooks: RetryHooks = {}): Promise<T> {
  const now = hooks.now ?? Date.now
  const wait = hooks.sleep ?? sleep
  const classify = hooks.classify ?? isRetriableError
  const start = now()
  const deadline = policy.retryForMs === undefined ? Number.POSITIVE_INFINITY : start + policy.retryForMs
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt)
    } catch (err) {
      const verdict = classify(err, attempt)
      if (verdict === false) throw err
      const remainingMs = deadline - now()
      if (remainingMs <= 0 || (policy.maxAttempts !== undefined && attempt >= policy.maxAttempts)) {
        if (hooks.exhausted === 'last') throw err
        throw new RetriesExhaustedError(attempt, now() - start, err)
      }
      const delayMs = Math.min(verdict === true ? retryDelayMs(attempt, policy) : Math.max(0, verdict.afterMs), remainingMs)
      hooks.onRetry?.({ attempt, delayMs, error: err, remainingMs })
      await wait(delayMs)
    }
  }
}
