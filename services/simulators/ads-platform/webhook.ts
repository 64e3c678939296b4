/**
 * Delivery-status events sent to the consumer's webhook (spec "Events": `entry[].changes[]`),
 * signed the platform's usual way: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body
 * with the app secret>`. Also the subscription handshake the platform performs on a callback URL
 * (GET with hub.mode, hub.verify_token, hub.challenge; the receiver echoes the challenge).
 */
import crypto from 'node:crypto'
import type { DeliveryStatus, WebhookDelivery } from './model.ts'

export function signBody(rawBody: string, appSecret: string): string {
  return `sha256=${crypto.createHmac('sha256', appSecret).update(rawBody, 'utf8').digest('hex')}`
}

export function deliveryStatusEvent(audienceId: string, status: DeliveryStatus, timeMs: number): { entry: unknown[] } {
  return {
    entry: [{ id: audienceId, time: Math.floor(timeMs / 1000), changes: [{ field: 'delivery_status', value: { code: status.code, description: status.description } }] }],
  }
}

export async function postEvent(
  url: string,
  audienceId: string,
  status: DeliveryStatus,
  opts: { appSecret: string; now: number; timeoutMs?: number },
): Promise<WebhookDelivery> {
  const body = JSON.stringify(deliveryStatusEvent(audienceId, status, opts.now))
  const signature = signBody(body, opts.appSecret)
  const delivery: WebhookDelivery = { time: opts.now, url, audienceId, body, signature, status: null, error: null }
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
      body,
      signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
    })
    delivery.status = res.status
    await res.arrayBuffer()
  } catch (err) {
    delivery.error = (err as Error).message
  }
  return delivery
}

/** The platform's verification GET: true when the receiver echoes the challenge with HTTP 200. */
export async function verifySubscription(url: string, verifyToken: string): Promise<{ ok: boolean; status: number | null; challenge: string; answer: string | null }> {
  const challenge = String(crypto.randomInt(1_000_000_000, 2_000_000_000))
  const u = new URL(url)
  u.searchParams.set('hub.mode', 'subscribe')
  u.searchParams.set('hub.verify_token', verifyToken)
  u.searchParams.set('hub.challenge', challenge)
  try {
    const res = await fetch(u, { signal: AbortSignal.timeout(10_000) })
    const answer = await res.text()
    return { ok: res.status === 200 && answer.trim() === challenge, status: res.status, challenge, answer }
  } catch {
    return { ok: false, status: null, challenge, answer: null }
  }
}
