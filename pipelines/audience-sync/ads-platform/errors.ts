/**
 * Typed errors of the ads platform client (spec "Errors"). Every error says whether the retry
 * policy may repeat the call soon (`retriable`) and what the caller should do about it (`action`):
 *
 * | code  | class                   | retriable | action            |
 * |-------|-------------------------|-----------|-------------------|
 * | 190   | InvalidTokenError       | no        | pause_tenant      |
 * | 200   | PermissionDeniedError   | no        | pause_tenant      |
 * | 100   | InvalidParameterError   | no        | dead_letter_batch |
 * | 2650  | AdAccountNotFoundError  | no        | pause_tenant      |
 * | 80004 | RateLimitError          | no        | wait_for_window   |
 * | other, HTTP 429 / 5xx | TransientApiError | yes | retry          |
 * | other, HTTP 4xx       | AdsApiError       | no  | dead_letter_batch |
 *
 * The error body's code decides before the HTTP status: an 80004 is never retried within
 * seconds, whatever status carries it, because its window is an hour.
 */

/** What the caller should do with a failed call. */
export type ErrorAction =
  /** Transient: the client's retry policy already repeated it; try the same call again later. */
  | 'retry'
  /** Stop this tenant's sync (or this sync configuration) and raise an alert; a human must fix the token, the permissions or the ad account. */
  | 'pause_tenant'
  /** The request itself is wrong: record it, dead-letter the batch, go on with the next one. */
  | 'dead_letter_batch'
  /** A rate limit: wait until `retryAt`; not a failure. */
  | 'wait_for_window'

/** The spec's error body: `{ error: { message, type, code, trace_id } }`. */
export interface AdsErrorBody {
  message: string
  type: string
  code: number
  trace_id: string | null
}

export interface RequestContext {
  method: string
  /** Path relative to the version root, without the query (tokens travel in queries). */
  path: string
}

export const ERROR_CODES = {
  INVALID_PARAMETER: 100,
  INVALID_TOKEN: 190,
  PERMISSION_DENIED: 200,
  AD_ACCOUNT_NOT_FOUND: 2650,
  RATE_LIMIT: 80004,
} as const

/** The spec: "Wait 1 hour" after an 80004. */
export const RATE_LIMIT_WAIT_MS = 3_600_000

export class AdsApiError extends Error {
  override name = 'AdsApiError'
  /** HTTP status of the answer; null when there was none (network error, local limit). */
  readonly httpStatus: number | null
  /** `error.code` of the body, null when the body had none. */
  readonly code: number | null
  readonly type: string | null
  readonly traceId: string | null
  readonly method: string
  readonly path: string
  readonly retriable: boolean = false
  readonly action: ErrorAction = 'dead_letter_batch'
  /** False for rate limits: waiting for a window is not a failure of the sync. */
  readonly countsAsFailure: boolean = true

  constructor(message: string, opts: { httpStatus: number | null; body?: AdsErrorBody | null; context: RequestContext; cause?: unknown }) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.httpStatus = opts.httpStatus
    this.code = opts.body?.code ?? null
    this.type = opts.body?.type ?? null
    this.traceId = opts.body?.trace_id ?? null
    this.method = opts.context.method
    this.path = opts.context.path
  }
}

/** 190: the token is invalid or expired. Regenerate it; until then, no more calls for this tenant. */
export class InvalidTokenError extends AdsApiError {
  override name = 'InvalidTokenError'
  override readonly action = 'pause_tenant' as const
}

/** 200: the token lacks a permission; `permission` names it when the message does. */
export class PermissionDeniedError extends AdsApiError {
  override name = 'PermissionDeniedError'
  override readonly action = 'pause_tenant' as const
  readonly permission: string | null

  constructor(message: string, opts: ConstructorParameters<typeof AdsApiError>[1]) {
    super(message, opts)
    this.permission = permissionFromMessage(opts.body?.message ?? message)
  }
}

/** 100: the request is malformed. Record the batch as dead-lettered; repeating it cannot help. */
export class InvalidParameterError extends AdsApiError {
  override name = 'InvalidParameterError'
  override readonly action = 'dead_letter_batch' as const
}

/** 2650: the ad account does not exist (or its id is not of the form act_<number>). */
export class AdAccountNotFoundError extends AdsApiError {
  override name = 'AdAccountNotFoundError'
  override readonly action = 'pause_tenant' as const
}

/** 80004 from the platform, or the client's own hourly budget: wait until `retryAt`. */
export class RateLimitError extends AdsApiError {
  override name = 'RateLimitError'
  override readonly action = 'wait_for_window' as const
  override readonly countsAsFailure = false
  /** Epoch ms after which a call may succeed again. */
  readonly retryAt: number
  /** 'platform' = an 80004 answer; 'client' = the local budget refused before calling. */
  readonly source: 'platform' | 'client'

  constructor(message: string, opts: ConstructorParameters<typeof AdsApiError>[1] & { retryAt: number; source: 'platform' | 'client' }) {
    super(message, opts)
    this.retryAt = opts.retryAt
    this.source = opts.source
  }
}

/** HTTP 429 or 5xx without one of the codes above: the retry policy repeats these. */
export class TransientApiError extends AdsApiError {
  override name = 'TransientApiError'
  override readonly retriable = true
  override readonly action = 'retry' as const
}

/**
 * No HTTP answer (connection refused or reset, timeout). Not repeated by the retry policy (the
 * spec retries HTTP 429 and 5xx only, and an upload may have been applied before the connection
 * dropped); the caller retries the batch later. Audiences are sets, so a repeat is harmless there.
 */
export class AdsNetworkError extends AdsApiError {
  override name = 'AdsNetworkError'
  override readonly action = 'retry' as const
}

/** A 2xx answer whose body is not what the spec says (not JSON, fields missing). */
export class AdsProtocolError extends AdsApiError {
  override name = 'AdsProtocolError'
  override readonly action = 'dead_letter_batch' as const
}

/** Reads the spec's error body; null when `body` is not one. Tolerates Graph's `fbtrace_id`. */
export function parseErrorBody(body: unknown): AdsErrorBody | null {
  if (typeof body !== 'object' || body === null) return null
  const e = (body as { error?: unknown }).error
  if (typeof e !== 'object' || e === null) return null
  const { message, type, code, trace_id, fbtrace_id } = e as Record<string, unknown>
  const numeric = typeof code === 'number' ? code : typeof code === 'string' && /^\d+$/.test(code) ? Number(code) : NaN
  if (!Number.isSafeInteger(numeric)) return null
  const trace = typeof trace_id === 'string' ? trace_id : typeof fbtrace_id === 'string' ? fbtrace_id : null
  return { message: typeof message === 'string' ? message : '', type: typeof type === 'string' ? type : '', code: numeric, trace_id: trace }
}

const KNOWN_PERMISSIONS = ['ads_management', 'ads_read', 'business_management'] as const

/**
 * The permission an error 200 names: one of the spec's three when the message mentions it, else
 * a snake_case word next to "permission" ("Requires pages_read permission", "permission(s)
 * xyz_abc"), else null.
 */
export function permissionFromMessage(message: string): string | null {
  for (const p of KNOWN_PERMISSIONS) if (new RegExp(`\\b${p}\\b`).test(message)) return p
  const m = /\b([a-z]+(?:_[a-z]+)+)\s+permission/i.exec(message) ?? /permissions?(?:\(s\))?[\s:]+([a-z]+(?:_[a-z]+)+)/i.exec(message)
  return m ? m[1]!.toLowerCase() : null
}

/** Maps an error answer to its class (see the table at the top). `now` stamps RateLimitError.retryAt. */
export function errorFromResponse(httpStatus: number, rawBody: unknown, context: RequestContext, now: number = Date.now()): AdsApiError {
  const body = parseErrorBody(rawBody)
  const where = `${context.method} ${context.path}`
  const message = body ? `${where}: HTTP ${httpStatus}, error ${body.code}: ${body.message}` : `${where}: HTTP ${httpStatus}`
  const opts = { httpStatus, body, context }
  switch (body?.code) {
    case ERROR_CODES.INVALID_TOKEN:
      return new InvalidTokenError(message, opts)
    case ERROR_CODES.PERMISSION_DENIED:
      return new PermissionDeniedError(message, opts)
    case ERROR_CODES.INVALID_PARAMETER:
      return new InvalidParameterError(message, opts)
    case ERROR_CODES.AD_ACCOUNT_NOT_FOUND:
      return new AdAccountNotFoundError(message, opts)
    case ERROR_CODES.RATE_LIMIT:
      return new RateLimitError(message, { ...opts, retryAt: now + RATE_LIMIT_WAIT_MS, source: 'platform' })
  }
  if (httpStatus === 429 || httpStatus >= 500) return new TransientApiError(message, opts)
  return new AdsApiError(message, opts)
}
