/**
 * Secrets of an integration leave the lane only masked: "****" and at most their last four
 * characters. The credentials an answer shows, and the `changes` of an update (which also decide
 * whether anything is written), are masked here. Pure.
 */
import type { IntegrationConfiguration } from './schemas.ts'
import { CREDENTIAL_FIELDS, SECRET_FIELDS, type Credentials, type IntegrationType } from './sources/types.ts'

/** `****` plus the last four characters of a long secret (enough to tell two tokens apart), else `****`. */
export function maskSecret(v: string): string {
  return v.length >= 16 ? `****${v.slice(-4)}` : '****'
}

export function maskCredentials(type: IntegrationType, creds: Credentials): Record<string, string> {
  const out: Record<string, string> = {}
  for (const f of CREDENTIAL_FIELDS[type]) if (creds[f] !== undefined) out[f] = SECRET_FIELDS.has(f) ? maskSecret(creds[f]!) : creds[f]!
  return out
}

export type Change = { old: unknown; new: unknown }

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null)

/** Field path → {old, new} for what an update changes; secrets masked. */
export function diff(
  before: { is_active: boolean; configuration: IntegrationConfiguration; credentials: Credentials; hasWebhookSecret: boolean },
  after: { is_active: boolean; configuration: IntegrationConfiguration; credentials: Credentials },
  webhookSecret: string | null | undefined,
): Record<string, Change> {
  const out: Record<string, Change> = {}
  if (before.is_active !== after.is_active) out.is_active = { old: before.is_active, new: after.is_active }
  const keys = new Set([...Object.keys(before.configuration), ...Object.keys(after.configuration)])
  for (const k of keys) {
    const o = (before.configuration as unknown as Record<string, unknown>)[k]
    const n = (after.configuration as unknown as Record<string, unknown>)[k]
    if (!same(o, n)) out[`configuration.${k}`] = { old: o ?? null, new: n ?? null }
  }
  if (webhookSecret !== undefined && (webhookSecret !== null || before.hasWebhookSecret)) {
    out['configuration.webhook_secret'] = { old: before.hasWebhookSecret ? '****' : null, new: webhookSecret === null ? null : '[changed]' }
  }
  for (const k of Object.keys(after.credentials)) {
    const o = before.credentials[k]
    const n = after.credentials[k]
    if (o === n) continue
    out[k] = SECRET_FIELDS.has(k) ? { old: o === undefined ? null : maskSecret(o), new: n === undefined ? null : maskSecret(n) } : { old: o ?? null, new: n ?? null }
  }
  return out
}
