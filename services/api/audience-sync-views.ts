/** Answers of the audience-sync endpoints (docs/audience-sync.md "Managing syncs"). Pure; the token is never shown. */
import type { AudienceSyncState } from '../../pipelines/audience-sync/service.ts'
import { iso } from '../../common/time.ts'

export function audienceSyncView({ config: c, status: s, alerts, batches: b }: AudienceSyncState) {
  return {
    id: c.config_id,
    tenant_id: c.tenant_id,
    name: c.name,
    segment: c.segment,
    ad_account_id: c.ad_account_id,
    access_token: '********',
    status: c.status,
    paused_reason: c.paused_reason,
    blocked_until: iso(c.blocked_until),
    audience: {
      id: c.audience_id,
      approximate_count: s?.approximate_count ?? null,
      delivery_status: s && s.delivery_code !== null ? { code: s.delivery_code, description: s.delivery_description } : null,
      status_source: s?.source ?? null,
      status_updated_at: iso(s?.updated_at),
    },
    last_sync: iso(b?.last_sync),
    batches_done: b?.batches_done ?? 0,
    batches_dead_lettered: b?.batches_dead_lettered ?? 0,
    rejected_rows: b?.rejected_rows ?? 0,
    rejected_batches: b?.rejected_batches ?? [],
    alerts: alerts.map((a) => ({ code: a.code, message: a.message, at: iso(a.created_at) })),
    created_at: iso(c.created_at),
    updated_at: iso(c.updated_at),
  }
}
