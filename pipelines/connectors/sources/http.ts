/**
 * JSON over HTTP for the connectors, with the failures a sync has to tell apart:
 *
 * | code                | when                                   | retriable |
 * |---------------------|----------------------------------------|-----------|
 * | INVALID_CREDENTIALS | 401 (or the platform's own rejection)  | no        |
 * | FORBIDDEN           | 403: the credentials lack a permission | no        |
 * | RATE_LIMIT_EXCEEDED | 429 beyond the short waits taken here  | later     |
 * | UNAVAILABLE         | 5xx, network error, timeout            | yes       |
 * | NOT_FOUND           | 404                                    | no        |
 * | BAD_RESPONSE        | other 4xx, a body that is not JSON     | no        |
 *
 * 5xx and network errors are retried a few times with backoff (0.5 s, 1 s, ...); a 429 whose
 * Retry-After is short is waited out here, a longer one is thrown so the job can be re-queued for
 * later. The retry loop is common/retry.ts's, the Retry-After reading common/rate-limit.ts's.
 * Messages name the call (`what`), never a URL query or a header, so they are safe to log and to
 * store.
 */
import { withRetry } from '../../../common/retry.ts'
import { parseRetryAfter } from '../../../common/rate-limit.ts'

export type ConnectorErrorCode = 'INVALID_CREDENTIALS' | 'FORBIDDEN' | 'RATE_LIMIT_EXCEEDED' | 'UNAVAILABLE' | 'NOT_FOUND' | 'BAD_RESPONSE'

export class ConnectorError extends Error {
  override name = 'ConnectorError'
  constructor(
    readonly code: ConnectorErrorCode,
    message: string,
    readonly status: number | null = null,
    /** Seconds, for RATE_LIMIT_EXCEEDED. */
    readonly retryAfterSec: number | null = null,
  ) {
    super(message)
  }
  get retriable(): boolean {
    return this.code === 'UNAVAILABLE' || this.code === 'RATE_LIMIT_EXCEEDED'
  }
}

export interface HttpOptions {
  fetch?: typeof fetch
  /** Per attempt; default 30 s. */
  timeoutMs?: number
  sleep?: (ms: number) => Promise<void>
  /** Attempts for 5xx, network errors and short 429s; default 3. */
  maxAttempts?: number
  /** The longest Retry-After waited out in place; default 5 s. */
  maxInlineWaitMs?: number
  /** Aborts the request in flight (a stopping runner). */
  signal?: AbortSignal
}

export interface JsonRequest {
  method?: 'GET' | 'POST'
  url: string
  headers?: Record<string, string>
  /** application/x-www-form-urlencoded body. */
  form?: Record<string, string>
  json?: unknown
  /** Names the call in errors: "orders page 3". */
  what: string
  /** The platform's error message from its error body, for the error's text. */
  errorMessage?: (body: unknown) => string | null
}

export const DEFAULT_RETRY_AFTER_SEC = 60

/** The backoff of 5xx and network errors: 0.5 s, doubling (attempts: HttpOptions.maxAttempts). */
const BACKOFF = { initialDelayMs: 500, maxDelayMs: Number.POSITIVE_INFINITY }

/** Sends the request; resolves with the parsed JSON body of a 2xx answer, else throws a ConnectorError. */
export async function requestJson<T = unknown>(req: JsonRequest, opts: HttpOptions = {}): Promise<T> {
  const maxInlineWaitMs = opts.maxInlineWaitMs ?? 5_000
  const headers: Record<string, string> = { accept: 'application/json', ...req.headers }
  let body: string | undefined
  if (req.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded'
    body = new URLSearchParams(req.form).toString()
  } else if (req.json !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(req.json)
  }
  return withRetry(() => attempt<T>(req, headers, body, opts), { ...BACKOFF, maxAttempts: opts.maxAttempts ?? 3 }, {
    sleep: opts.sleep,
    exhausted: 'last',
    // An aborted request is not a ConnectorError: thrown as is, never retried.
    classify: (err) => {
      if (!(err instanceof ConnectorError)) return false
      if (err.code === 'UNAVAILABLE') return true
      const waitMs = (err.retryAfterSec ?? DEFAULT_RETRY_AFTER_SEC) * 1000
      return err.status === 429 && waitMs <= maxInlineWaitMs ? { afterMs: waitMs } : false
    },
  })
}

/** One request: the parsed JSON of a 2xx answer, else the ConnectorError that describes the failure. */
async function attempt<T>(req: JsonRequest, headers: Record<string, string>, body: string | undefined, opts: HttpOptions): Promise<T> {
  const doFetch = opts.fetch ?? globalThis.fetch
  let res: Response
  let text: string
  try {
    const timeout = AbortSignal.timeout(opts.timeoutMs ?? 30_000)
    res = await doFetch(req.url, { method: req.method ?? 'GET', headers, body, signal: opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout })
    text = await res.text()
  } catch (err) {
    if (opts.signal?.aborted) throw err
    throw new ConnectorError('UNAVAILABLE', `${req.what}: ${(err as Error).name === 'TimeoutError' ? 'timed out' : 'no answer'}`)
  }
  let json: unknown = null
  let parsed = true
  try {
    json = text ? JSON.parse(text) : null
  } catch {
    parsed = false
  }
  if (res.ok) {
    if (!parsed) throw new ConnectorError('BAD_RESPONSE', `${req.what}: HTTP ${res.status} with a body that is not JSON`, res.status)
    return json as T
  }
  const detail = (parsed && req.errorMessage?.(json)) || `HTTP ${res.status}`
  if (res.status === 429) {
    const after = parseRetryAfter(res.headers.get('retry-after')) ?? DEFAULT_RETRY_AFTER_SEC
    throw new ConnectorError('RATE_LIMIT_EXCEEDED', `${req.what}: rate limited (${detail}); retry after ${after}s`, 429, after)
  }
  if (res.status >= 500) throw new ConnectorError('UNAVAILABLE', `${req.what}: ${detail}`, res.status)
  if (res.status === 401) throw new ConnectorError('INVALID_CREDENTIALS', `${req.what}: ${detail}`, 401)
  if (res.status === 403) throw new ConnectorError('FORBIDDEN', `${req.what}: ${detail}`, 403)
  if (res.status === 404) throw new ConnectorError('NOT_FOUND', `${req.what}: ${detail}`, 404)
  throw new ConnectorError('BAD_RESPONSE', `${req.what}: ${detail}`, res.status)
}

/** Milliseconds a call takes, formatted as the spec shows response times ("142ms"). */
export const formatMs = (ms: number) => `${Math.round(ms)}ms`

/** Times an async call. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now()
  const value = await fn()
  return { value, ms: performance.now() - t0 }
}
