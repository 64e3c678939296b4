/** Answers of the audience-sync endpoints (docs/audience-sync.md "Managing syncs"). Pure; the token is never shown. */
import { z } from 'zod'
import type { AudienceSyncState } from '../../pipelines/audience-sync/service.ts'
import { SEGMENTS } from '../../pipelines/features/segments.ts'
import { iso } from '../../common/time.ts'
import { Count, NullableTimestamp, Timestamp } from './response-schemas.ts'

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

/** The schema of `audienceSyncView`. */
export const AudienceSyncSchema = z
  .strictObject({
    id: z.string(),
    tenant_id: z.int().min(1),
    name: z.string(),
    segment: z.enum(SEGMENTS),
    ad_account_id: z.string(),
    access_token: z.literal('********').meta({ description: 'Write-only: always masked' }),
    status: z.enum(['active', 'paused']),
    paused_reason: z.string().nullable(),
    blocked_until: NullableTimestamp.meta({ description: "Calls wait until then (the platform's rate-limit window)" }),
    audience: z.strictObject({
      id: z.string().nullable().meta({ description: 'The custom audience, once created' }),
      approximate_count: Count.nullable(),
      delivery_status: z.strictObject({ code: z.int(), description: z.string().nullable() }).nullable(),
      status_source: z.enum(['poll', 'webhook']).nullable(),
      status_updated_at: NullableTimestamp,
    }),
    last_sync: NullableTimestamp,
    batches_done: Count,
    batches_dead_lettered: Count,
    rejected_rows: Count,
    rejected_batches: z.array(z.string()).meta({ description: 'Batches with rejected rows (at most 20)' }),
    alerts: z.array(z.strictObject({ code: z.string(), message: z.string(), at: Timestamp })),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'AudienceSync' })
