/**
 * Answers of the integration endpoints, in the spec's field names. Pure. Secrets leave only
 * masked ("****" and at most their last four characters); `changes` masks them the same way.
 */
import type { IntegrationStats, SyncJob } from '../../../pipelines/connectors/queue.ts'
import { seconds } from '../../../pipelines/connectors/errors.ts'
import { CREDENTIAL_FIELDS, SECRET_FIELDS, type Credentials, type IntegrationType } from '../../../pipelines/connectors/sources/types.ts'
import type { IntegrationConfiguration } from '../../../pipelines/connectors/schemas.ts'
import type { IntegrationRecord } from '../../../pipelines/connectors/store.ts'
import { iso } from '../../../common/time.ts'


/** `****` plus the last four characters of a long secret (enough to tell two tokens apart), else `****`. */
export function maskSecret(v: string): string {
  return v.length >= 16 ? `****${v.slice(-4)}` : '****'
}

export function maskCredentials(type: IntegrationType, creds: Credentials): Record<string, string> {
  const out: Record<string, string> = {}
  for (const f of CREDENTIAL_FIELDS[type]) if (creds[f] !== undefined) out[f] = SECRET_FIELDS.has(f) ? maskSecret(creds[f]!) : creds[f]!
  return out
}

/** `success` / `failed` from the last finished run, `never_synced` before the first. */
export function syncStatus(s: IntegrationStats | undefined): 'success' | 'failed' | 'never_synced' {
  return s?.last_status ?? 'never_synced'
}

/** A run that failed on the credentials after they were last saved makes them `invalid`. */
export function validationStatus(r: IntegrationRecord, s: IntegrationStats | undefined): string {
  const e = s?.last_error
  if (s?.last_status === 'failed' && e?.error === 'INVALID_CREDENTIALS' && Date.parse(e.occurred_at) >= r.updated_at) return 'invalid'
  return r.validation_status
}

export function listItem(r: IntegrationRecord, s: IntegrationStats | undefined) {
  return {
    id: r.id,
    tenant_id: r.tenant_id,
    integration_type: r.integration_type,
    account_name: r.account_name,
    ...(r.integration_type === 'commerce_platform' ? { environment: r.environment } : {}),
    is_active: r.is_active,
    last_sync: iso(s?.last_finished_at ?? null),
    sync_status: syncStatus(s),
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  }
}

export function statistics(s: IntegrationStats | undefined) {
  return {
    total_syncs: s?.total_syncs ?? 0,
    successful_syncs: s?.successful_syncs ?? 0,
    failed_syncs: s?.failed_syncs ?? 0,
    last_error: s?.last_error ?? null,
    avg_sync_time: seconds(s?.avg_sync_ms ?? 0),
  }
}

export function configurationView(c: IntegrationConfiguration, hasWebhookSecret: boolean) {
  return { ...c, webhook_secret: hasWebhookSecret ? '****' : null }
}

export function currentSync(live: SyncJob[]) {
  const j = live.find((x) => x.status === 'running') ?? live[0]
  if (!j) return null
  return {
    sync_id: j.sync_id,
    status: j.status,
    kind: j.kind,
    queued_at: iso(j.queued_at),
    attempt: j.attempt,
    ...(j.status === 'queued' && j.not_before > j.queued_at ? { retry_at: iso(j.not_before) } : {}),
    ...(j.error ? { last_error: j.error } : {}),
    progress: j.checkpoint ? { entity: j.entities[j.checkpoint.entity_index] ?? null, entities_done: j.checkpoint.entity_index, entities: j.entities } : null,
  }
}

export function detail(
  r: IntegrationRecord,
  s: IntegrationStats | undefined,
  extra: { tenantName: string; credentials: Record<string, string> | null; nextScheduledSync: number | null; live: SyncJob[] },
) {
  return {
    ...listItem(r, s),
    tenant_name: extra.tenantName,
    validation_status: validationStatus(r, s),
    configuration: configurationView(r.configuration, r.has_webhook_secret),
    credentials: extra.credentials,
    statistics: statistics(s),
    next_scheduled_sync: iso(extra.nextScheduledSync),
    current_sync: currentSync(extra.live),
    deleted_at: iso(r.deleted_at),
  }
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
