import fs from 'node:fs'
import path from 'node:path'
import type { Config } from '../../common/config.ts'
import type { Logger } from '../../common/logger.ts'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { EmbeddedEventLog } from '../../common/eventlog/embedded.ts'
import { embeddedLogDir, openEventLog } from '../../common/runtime/context.ts'
import { publishEvents, type IngestKind } from './publisher.ts'

/** Where the importer and the generator write: straight into the log, or through a running API. */
export interface EventSink {
  describe: string
  publish(kind: IngestKind, events: (OrderEvent | CustomerUpserted)[]): Promise<void>
  /**
   * The tenant's currency as the receiving side knows it (null: none yet), so records can be
   * validated against it before they are sent; absent when the sink cannot tell.
   */
  tenantCurrency?(tenantId: number): Promise<string | null>
  close(): Promise<void>
}

/**
 * Opens the log for writing. The embedded log belongs to one process: when `cdp start` holds it,
 * events go through that process's ingest endpoint instead (same validation, same durability).
 * A discovered endpoint is looked up again on every request, so a restarted `cdp start` on
 * another port is found by a retry.
 */
export async function openEventSink(config: Config, logger: Logger, opts: { apiUrl?: string } = {}): Promise<EventSink> {
  const holderUrl = () => (config.runtime === 'embedded' ? EmbeddedEventLog.lockHolder(embeddedLogDir(config))?.apiUrl : undefined)
  const apiUrl = opts.apiUrl ?? holderUrl()
  if (apiUrl) {
    let last = apiUrl
    const url = opts.apiUrl ? () => apiUrl : () => (last = holderUrl() ?? last)
    return httpSink(apiUrl, url, () => readAdminToken(config))
  }
  const { log, codec } = await openEventLog(config, logger)
  return {
    describe: `${log.kind} event log`,
    publish: (kind, events) => publishEvents(log, codec, kind, events),
    close: () => log.close(),
  }
}

/** Where `cdp start` keeps the admin token it generated in development (docs/auth.md). */
export function adminTokenFile(config: Config): string {
  return path.resolve(config.dataDir, 'admin-token')
}

/** The admin token: CDP_ADMIN_TOKEN, else the file a development `cdp start` wrote. */
export function readAdminToken(config: Config): string | undefined {
  if (config.adminToken) return config.adminToken
  try {
    return fs.readFileSync(adminTokenFile(config), 'utf8').trim() || undefined
  } catch {
    return undefined
  }
}

/** Longest wait for one ingest request; a server that stopped answering is then retried. */
const REQUEST_TIMEOUT_MS = 120_000
/** Events per ingest request (the endpoint takes up to MAX_BATCH_EVENTS). */
export const HTTP_BATCH = 5000

function httpSink(shownUrl: string, url: () => string, token: () => string | undefined): EventSink {
  return {
    describe: `ingest API at ${shownUrl}`,
    async publish(kind, events) {
      for (let i = 0; i < events.length; i += HTTP_BATCH) {
        const base = url()
        const auth = token()
        const res = await fetch(`${base}/api/v2/cdp/ingest/${kind}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${auth}` } : {}) },
          body: JSON.stringify({ events: events.slice(i, i + HTTP_BATCH) }),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        })
        if (res.status === 202) {
          await res.body?.cancel()
          continue
        }
        const text = await res.text().catch(() => '')
        const rejected = res.status === 400 ? indexedErrors(text) : null
        if (rejected) throw new BatchRejectedError(`ingest API at ${base} refused ${new Set(rejected.map((e) => e.index)).size} events of the batch`, rejected.map((e) => ({ ...e, index: e.index + i })))
        const body = text.slice(0, 500)
        if (res.status === 401) throw new SinkError(`ingest API at ${base} refused the admin token (401): set CDP_ADMIN_TOKEN to the token of that server`, false)
        throw new SinkError(`ingest API at ${base} answered ${res.status}: ${body}`, retriableStatus(res.status))
      }
    },
    async tenantCurrency(tenantId) {
      const auth = token()
      const res = await fetch(`${url()}/api/v2/cdp/tenants/${tenantId}/settings`, {
        headers: auth ? { authorization: `Bearer ${auth}` } : {},
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      })
      if (res.status === 404) return null // a tenant with no data yet
      if (!res.ok) throw new SinkError(`tenant settings answered ${res.status}`, retriableStatus(res.status))
      const currency = ((await res.json()) as { data?: { currency?: unknown } }).data?.currency
      return typeof currency === 'string' ? currency : null
    },
    close: async () => {},
  }
}

// ---------------------------------------------------------------------------------------------
// Retries. What is worth retrying is decided here, in one place: a lost connection to the ingest
// API or to Kafka, a timeout, a 5xx, 429 or 408. Everything else (a refused token, a record the
// server rejects, a schema mismatch) fails at once. Retrying a batch that did arrive is harmless:
// event ids are derived from content, so the projections collapse the twin.

/** A failed publish that says whether trying again may help. */
export class SinkError extends Error {
  override name = 'SinkError'
  constructor(
    message: string,
    readonly retriable: boolean,
  ) {
    super(message)
  }
}

export interface IndexedFieldError {
  /** Position of the event in the batch given to publish(). */
  index: number
  path: string
  code: string
  message: string
}

/**
 * The ingest API refused a batch (all or nothing: nothing was written) because of these events.
 * It checks what only the server knows (the tenant's currency, what was paid for a refunded
 * order), so the importer turns them into rejects and sends the rest again.
 */
export class BatchRejectedError extends SinkError {
  override name = 'BatchRejectedError'
  constructor(
    message: string,
    readonly errors: IndexedFieldError[],
  ) {
    super(message, false)
  }
}

/** The per-event errors of a 400 `Invalid events` body, or null for any other 400. */
function indexedErrors(body: string): IndexedFieldError[] | null {
  try {
    const errors = (JSON.parse(body) as { details?: { errors?: unknown } }).details?.errors
    if (!Array.isArray(errors) || errors.length === 0) return null
    const ok = errors.every((e) => Number.isInteger(e?.index) && typeof e.code === 'string')
    return ok ? errors.map((e) => ({ index: e.index, path: String(e.path ?? ''), code: e.code, message: String(e.message ?? '') })) : null
  } catch {
    return null
  }
}

/** Retries of one batch ran out of time; `cause` is the last failure. */
export class RetriesExhaustedError extends Error {
  override name = 'RetriesExhaustedError'
  constructor(
    readonly attempts: number,
    readonly elapsedMs: number,
    cause: unknown,
  ) {
    super(`gave up after ${attempts} attempts in ${Math.round(elapsedMs / 1000)} s: ${describeSinkError(cause)}`, { cause })
  }
}

const retriableStatus = (status: number) => status >= 500 || status === 429 || status === 408

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

/** Whether a failed publish may succeed when tried again (the error or any of its causes says so). */
export function isRetriableSinkError(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 6; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return true
    if (KAFKA_TRANSIENT.has(e.name) || e.name === 'TimeoutError') return true
    if ((e as { retriable?: unknown }).retriable === true) return true
    if (e instanceof SinkError) return false
    if (NETWORK_MESSAGES.test(e.message)) return true
  }
  return false
}

/** One line for a human: the message with its innermost network code ("fetch failed (ECONNREFUSED)"). */
export function describeSinkError(err: unknown): string {
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
  /** Keep retrying a batch for this long (0: no retries). */
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

export interface RetryHooks {
  /** Called before each wait, e.g. to tell the user. */
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown; remainingMs: number }) => void
  isRetriable?: (err: unknown) => boolean
  sleep?: (ms: number) => Promise<void>
  now?: () => number
}

/**
 * Runs `fn` until it succeeds, a failure is not retriable (rethrown as is) or `retryForMs` has
 * passed (RetriesExhaustedError). The last wait is shortened so the final attempt falls on the
 * deadline rather than after it.
 */
export async function withRetry<T>(fn: () => Promise<T>, policy: RetryPolicy = DEFAULT_RETRY_POLICY, hooks: RetryHooks = {}): Promise<T> {
  const now = hooks.now ?? Date.now
  const sleep = hooks.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)))
  const isRetriable = hooks.isRetriable ?? isRetriableSinkError
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
