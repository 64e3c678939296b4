/**
 * The schemas of the integration endpoints' answers (views.ts, health.ts, router.ts build them),
 * in the spec's field names.
 */
import { z } from 'zod'
import { INTEGRATION_TYPES } from '../../../pipelines/connectors/sources/types.ts'
import { ConfigurationInput } from '../../../pipelines/connectors/schemas.ts'
import { Count, Fraction, NullableTimestamp, Timestamp } from '../response-schemas.ts'

const IntegrationId = z.int().min(1)
const TenantId = z.int().min(1)
const Type = z.enum(INTEGRATION_TYPES)
/** `12.3s`: a duration in seconds, one decimal. */
const Duration = z.string().regex(/^\d+(\.\d)?s$/)
/** `123ms`. */
const Millis = z.string().regex(/^\d+ms$/)

const SyncFailure = z.strictObject({
  error: z.string().meta({ description: 'SYNC_TIMEOUT, RATE_LIMIT_EXCEEDED, INVALID_CREDENTIALS, …' }),
  message: z.string(),
  solution: z.string(),
  retry_after: z.number().optional(),
  duration: z.string().optional(),
})

export const IntegrationListItem = z
  .strictObject({
    id: IntegrationId,
    tenant_id: TenantId,
    integration_type: Type,
    account_name: z.string().nullable(),
    environment: z.string().nullable().optional().meta({ description: 'commerce_platform only' }),
    is_active: z.boolean(),
    last_sync: NullableTimestamp.meta({ description: 'End of the last finished sync' }),
    sync_status: z.enum(['success', 'failed', 'never_synced']),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'IntegrationListItem' })

/**
 * The stored configuration as shown: the lane's configuration keys (a key it adds shows up here
 * as optional), those every integration has required, the webhook secret masked.
 */
const Configuration = ConfigurationInput.required({
  api_version: true,
  sync_products: true,
  sync_orders: true,
  sync_customers: true,
  sync_interval: true,
  batch_size: true,
  retry_attempts: true,
  webhook_notifications: true,
  webhook_url: true,
  initial_sync: true,
}).extend({ webhook_secret: z.literal('****').nullable().meta({ description: 'Masked; null when none is set' }) })

export const IntegrationDetail = IntegrationListItem.extend({
  tenant_name: z.string(),
  validation_status: z.string().meta({ description: '`valid`, or `invalid` once a sync failed on the credentials saved last' }),
  configuration: Configuration,
  credentials: z.record(z.string(), z.string()).nullable().meta({ description: 'Secrets masked as `****` and their last four characters; null when the stored record does not decrypt' }),
  statistics: z.strictObject({
    total_syncs: Count,
    successful_syncs: Count,
    failed_syncs: Count,
    last_error: SyncFailure.extend({ occurred_at: Timestamp, sync_id: z.string() }).nullable(),
    avg_sync_time: Duration,
  }),
  next_scheduled_sync: NullableTimestamp,
  current_sync: z
    .strictObject({
      sync_id: z.string(),
      status: z.enum(['queued', 'running']),
      kind: z.enum(['manual', 'initial', 'scheduled']),
      queued_at: Timestamp,
      attempt: Count,
      retry_at: Timestamp.optional(),
      last_error: SyncFailure.optional(),
      progress: z.strictObject({ entity: z.string().nullable(), entities_done: Count, entities: z.array(z.string()) }).nullable(),
    })
    .nullable(),
  deleted_at: NullableTimestamp,
}).meta({ id: 'IntegrationDetail' })

export const IntegrationsHealth = z.strictObject({
  total_integrations: Count,
  active_integrations: Count,
  by_type: z.record(Type, z.strictObject({ total: Count, active: Count, last_24h_syncs: Count, success_rate: Fraction.nullable() })),
  alerts: z.array(
    z.strictObject({
      integration_id: IntegrationId,
      tenant_id: TenantId,
      type: z.literal('sync_failure'),
      message: z.string(),
      since: Timestamp.meta({ description: 'The first failure of the streak' }),
      error: z.string().nullable(),
      solution: z.string().nullable(),
    }),
  ),
})

export const Created = z.strictObject({
  id: IntegrationId,
  tenant_id: TenantId,
  integration_type: Type,
  validation_status: z.string(),
  is_active: z.boolean(),
  initial_sync: z.strictObject({ sync_id: z.string(), status: z.literal('queued') }).nullable(),
})

export const Updated = z.strictObject({
  id: IntegrationId,
  changes: z.record(z.string(), z.strictObject({ old: z.unknown(), new: z.unknown() })).meta({ description: 'Field path → {old, new}, secrets masked; `{}` when nothing changed' }),
})

export const Deleted = z.strictObject({ id: IntegrationId, deleted_at: Timestamp })

const EndpointTested = z.strictObject({ status: z.enum(['ok', 'error']), response_time: Millis, error: z.string().optional() })

export const ConnectionTested = z.strictObject({
  integration_id: IntegrationId,
  type: Type,
  status: z.enum(['connected', 'degraded']),
  response_time: Millis,
  endpoints_tested: z.record(z.string(), EndpointTested).meta({ description: 'Each API called, by name' }),
})

export const SyncQueued = z.strictObject({
  sync_id: z.string(),
  status: z.literal('queued'),
  estimated_time: Duration,
  webhook_url: z.string().meta({ description: "The configured webhook_url, or without one the integration's detail path, where the outcome can be read (docs/integrations.md)" }),
  queue_position: z.int().min(1),
})

/** `account_info` of a successful credential check, per type. */
export const AccountInfo = z.union([
  z
    .strictObject({
      account_name: z.string(),
      account_id: z.string(),
      is_active: z.boolean(),
      hosts: z.array(z.string()),
      apis_available: z.strictObject({ catalog: z.boolean(), orders: z.boolean(), masterdata: z.boolean(), payments: z.boolean() }),
    })
    .meta({ title: 'commerce_platform' }),
  z.strictObject({ user_id: z.union([z.string(), z.number()]), nickname: z.string(), site_id: z.string() }).meta({ title: 'marketplace' }),
  z.strictObject({ customer_id: z.string(), descriptive_name: z.string().nullable(), currency_code: z.string().nullable(), time_zone: z.string().nullable() }).meta({ title: 'search_ads' }),
  z.strictObject({ app_id: z.string(), application: z.string(), scopes: z.array(z.string()), expires_at: NullableTimestamp }).meta({ title: 'social_ads' }),
])

/** The refusal of POST /validate/{integrationType}: the spec's shape, not the common error body. */
export const CredentialCheckFailure = z
  .strictObject({
    success: z.literal(false),
    message: z.string().meta({ description: '`Invalid credentials` or `Invalid app key`' }),
    error: z.strictObject({
      code: z.enum(['INVALID_CREDENTIALS', 'INVALID_APP_KEY']),
      details: z.string(),
      account_name: z.string().nullable().optional(),
      environment: z.string().optional().meta({ description: 'commerce_platform' }),
      integration_type: z.string().optional().meta({ description: 'the other types' }),
      solution: z.string().nullable().optional().meta({ description: 'INVALID_APP_KEY' }),
    }),
  })
  .meta({ id: 'CredentialCheckFailure' })

/** The spec's INVALID_APP_KEY answer of create and update: the code as `error`, with its solution. */
export const InvalidAppKey = z
  .strictObject({
    success: z.literal(false),
    error: z.literal('INVALID_APP_KEY'),
    solution: z.string().nullable(),
    details: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'InvalidAppKey' })

/** One attempt of a sync, as the history lists it (GET …/integration/{id}/syncs). */
export const SyncRunItem = z
  .strictObject({
    sync_id: z.string(),
    attempt: Count.meta({ description: 'The attempt of the sync this run was (1 for the first; a retried sync has several runs)' }),
    status: z.enum(['running', 'success', 'failed', 'interrupted']),
    started_at: Timestamp,
    finished_at: NullableTimestamp,
    duration_ms: Count,
    error: SyncFailure.nullable(),
    records: z.strictObject({ customers: Count, orders: Count }).meta({ description: 'Events the run published' }),
    entities: z.record(z.string(), z.strictObject({ pages: Count, received: Count, expected: Count.nullable(), published: Count })).meta({ description: 'Per entity synced: pages read, records received, the platform\'s own count, records published' }),
  })
  .meta({ id: 'SyncRun' })
