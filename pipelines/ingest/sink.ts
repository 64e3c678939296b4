import fs from 'node:fs'
import path from 'node:path'
import type { Config } from '../../common/config.ts'
import type { Logger } from '../../common/logger.ts'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { ClassifiedError } from '../../common/retry.ts'
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
// Failures. Which ones are worth retrying is decided in common/retry.ts; the sink classifies its
// HTTP answers (5xx, 429 and 408 retriable; a refused token or batch not) through SinkError.

/** A failed publish that says whether trying again may help. */
export class SinkError extends ClassifiedError {
  override name = 'SinkError'
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

const retriableStatus = (status: number) => status >= 500 || status === 429 || status === 408
