/**
 * The delivery-status event (spec "Events") and its signature. The spec shows no signature; we
 * use the platform's usual one: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body,
 * keyed with the app secret>`. Pure helpers for the receiving side (and for tests).
 */
import crypto from 'node:crypto'
import { z } from 'zod'

export const SIGNATURE_HEADER = 'x-hub-signature-256'

/** `sha256=<hex>` of the raw body bytes. */
export function signHubSignature(rawBody: string | Uint8Array, appSecret: string): string {
  return `sha256=${crypto.createHmac('sha256', appSecret).update(rawBody).digest('hex')}`
}

/** Constant-time check of a header value against the raw body; false for a missing or malformed header. */
export function verifyHubSignature(rawBody: string | Uint8Array, header: string | null | undefined, appSecret: string): boolean {
  if (!header || !/^sha256=[0-9a-fA-F]{64}$/.test(header)) return false
  const expected = Buffer.from(signHubSignature(rawBody, appSecret).slice(7), 'hex')
  const given = Buffer.from(header.slice(7), 'hex')
  return given.length === expected.length && crypto.timingSafeEqual(given, expected)
}

export const deliveryStatusEventSchema = z.object({
  entry: z.array(
    z.object({
      id: z.string().min(1),
      time: z.number().int(),
      changes: z.array(
        z.object({
          field: z.string(),
          value: z.looseObject({ code: z.number().int(), description: z.string() }),
        }),
      ),
    }),
  ),
})

export type DeliveryStatusEvent = z.infer<typeof deliveryStatusEventSchema>
