/**
 * Answers of the integration endpoints, in the spec's field names. Pure. Credentials arrive
 * masked already (pipelines/connectors/masking.ts).
 */
import type { IntegrationStats, SyncJob, SyncRun } from '../../../pipelines/connectors/queue.ts'
import { seconds } from '../../../pipelines/connectors/errors.ts'
import type { IntegrationConfiguration } from '../../../pipelines/connectors/schemas.ts'
import type { IntegrationRecord } from '../../../pipelines/connectors/store.ts'
import { iso } from '../../../common/time.ts'

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

/** A run of the sync history (SyncRunItem). */
export function syncRunItem(r: SyncRun) {
  const entities: Record<string, { pages: number; received: number; expected: number | null; published: number }> = {}
  for (const [e, v] of Object.entries(r.stats?.entities ?? {})) if (v) entities[e] = { pages: v.pages, received: v.received, expected: v.expected, published: v.published }
  const err = r.error
  return {
    sync_id: r.sync_id,
    attempt: r.attempt,
    status: r.status,
    started_at: iso(r.started_at),
    finished_at: r.finished_at === null ? null : iso(r.finished_at),
    duration_ms: r.duration_ms,
    error: err ? { error: err.error, message: err.message, solution: err.solution, ...(err.retry_after !== undefined ? { retry_after: err.retry_after } : {}), ...(err.duration !== undefined ? { duration: err.duration } : {}) } : null,
    records: { customers: r.stats?.events_published.customers ?? 0, orders: r.stats?.events_published.orders ?? 0 },
    entities,
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
