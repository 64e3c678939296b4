/**
 * The sync-completion notification: a JSON POST to the integration's webhook_url, signed with
 * HMAC-SHA256 over the raw body, `X-CDP-Signature: sha256=<hex>`, under the integration's
 * webhook_secret (configuration) or else the deployment's. Receivers recompute the HMAC over the
 * bytes they received and compare in constant time; `sent_at` in the body lets them refuse
 * replays. Up to three attempts; the outcome is recorded on the job, a failure never fails the sync.
 * The destination must resolve to public addresses only (webhook-guard.ts) unless
 * `allowPrivate` is set (development: a receiver on localhost).
 */
import { createHmac, randomUUID } from 'node:crypto'
import type { Notification } from './queue.ts'
import { checkWebhookDestination, type LookupAll } from './webhook-guard.ts'
import { sleep as defaultSleep } from '../../common/retry.ts'

export const SIGNATURE_HEADER = 'x-cdp-signature'

export function signBody(secret: string, rawBody: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`
}

export interface NotifyOptions {
  fetch?: typeof fetch
  sleep?: (ms: number) => Promise<void>
  timeoutMs?: number
  attempts?: number
  now?: () => number
  /** Post to loopback, private and link-local destinations too; default false (SSRF guard). */
  allowPrivate?: boolean
  /** Resolves the webhook host (all addresses); default node:dns/promises lookup. */
  lookup?: LookupAll
}

export async function notifyWebhook(url: string, event: string, payload: Record<string, unknown>, secret: string | null, opts: NotifyOptions = {}): Promise<Notification> {
  const doFetch = opts.fetch ?? globalThis.fetch
  const sleep = opts.sleep ?? defaultSleep
  const now = opts.now ?? Date.now
  const body = JSON.stringify({ event, ...payload, sent_at: new Date(now()).toISOString() })
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'cdp-connectors', 'x-cdp-event': event, 'x-cdp-delivery': randomUUID() }
  if (secret) headers[SIGNATURE_HEADER] = signBody(secret, body)
  const attempts = opts.attempts ?? 3
  let last: { status: number | null; error?: string } = { status: null }
  let tried = 0
  for (let i = 1; i <= attempts; i++) {
    tried = i
    if (!opts.allowPrivate) {
      const dest = await checkWebhookDestination(url, opts.lookup)
      if (!dest.ok) {
        // A refused destination is never contacted: nothing was attempted.
        if (dest.final) return { status: 'failed', url, http_status: null, attempts: i - 1, signed: !!secret, at: new Date(now()).toISOString(), error: dest.reason }
        last = { status: null, error: dest.reason }
        if (i < attempts) await sleep(1000 * 2 ** (i - 1))
        continue
      }
    }
    try {
      const res = await doFetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000), redirect: 'manual' })
      await res.arrayBuffer().catch(() => undefined)
      if (res.status >= 200 && res.status < 300) return { status: 'delivered', url, http_status: res.status, attempts: i, signed: !!secret, at: new Date(now()).toISOString() }
      last = { status: res.status, error: `HTTP ${res.status}` }
      if (res.status < 500 && res.status !== 429) break
    } catch (err) {
      last = { status: null, error: (err as Error).name === 'TimeoutError' ? 'timed out' : 'no answer' }
    }
    if (i < attempts) await sleep(1000 * 2 ** (i - 1))
  }
  return { status: 'failed', url, http_status: last.status, attempts: tried, signed: !!secret, at: new Date(now()).toISOString(), error: last.error }
}
