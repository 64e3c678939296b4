/**
 * Retrying an operation while what it talks to cannot be reached: exponential backoff up to a
 * deadline, and which failures are worth another try. The classification is decided here, in one
 * place: a lost connection (HTTP or Kafka), a timeout, or an error that says itself it is
 * retriable (an HTTP 5xx, 429 or 408, as the caller classified it). Everything else (a refused
 * token, a record the receiver rejects, a schema mismatch) fails at once.
 *
 * Used by `cdp import` and `cdp generate --publish` (through the event sink, where retrying a
 * batch that did arrive is harmless: event ids are derived from content).
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
  /** Keep retrying for this long (0: no retries). */
  retryForMs: number
  /** First wait; it doubles after each failure up to maxDelayMs. */
  initialDelayMs: number
  maxDelayMs: number
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { retryForMs: 60_000, initialDelayMs: 500, maxDelayMs: 8_000 }

/** Wait before retry number `attempt` (1 = the first retry): 0.5 s, 1 s, 2 s, 4 s, 8 s, 8 s, ... */
export function retryDelayMs(attempt: number, policy: RetryPolicy = DEFAULT_RETRY_POLICY): number {
  return Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.max(0, attempt - 1))
}

/** What onRetry is told before each wait. */
export interface RetryInfo {
  attempt: number
  delayMs: number
  error: unknown
  remainingMs: number
}

export interface RetryHooks {
  /** Called before each wait, e.g. to tell the user. */
  onRetry?: (info: RetryInfo) => void
  isRetriable?: (err: unknown) => boolean
  sleep?: (ms: number) => Promise<void>
  now?: () => number
}

/** A retry as one line: "fetch failed (ECONNREFUSED); retry 1 in 0.5 s (giving up in 60 s)". */
export function describeRetry({ attempt, delayMs, error, remainingMs }: RetryInfo): string {
  return `${describeError(error)}; retry ${attempt} in ${(delayMs / 1000).toFixed(1)} s (giving up in ${Math.ceil(remainingMs / 1000)} s)`
}

/**
 * Runs `fn` until it succeeds, a failure is not retriable (rethrown as is) or `retryForMs` has
 * passed (RetriesExhaustedError). The last wait is shortened so the final attempt falls on the
 * deadline rather than after it.
 */
export async function withRetry<T>(fn: () => Promise<T>, policy: RetryPolicy = DEFAULT_RETRY_POLICY, hooks: RetryHooks = {}): Promise<T> {
  const now = hooks.now ?? Date.now
  const sleep = hooks.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)))
  const isRetriable = hooks.isRetriable ?? isRetriableError
  const start = now()
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn()
    } catch (err) {
      if (!isRetriable(err)) throw err
      const remainingMs = start + policy.retryForMs - now()
      if (remainingMs <= 0) throw new RetriesExhaustedError(attempt, now() - start, err)
      const delayMs = Math.min(retryDelayMs(attempt, policy), remainingMs)
      hooks.onRetry?.({ attempt, delayMs, error: err, remainingMs })
      await sleep(delayMs)
    }
  }
}
