/**
 * The nine tenant-integration operations (spec "Endpoints › Tenant integrations"); handlers in
 * router.ts. Request bodies are the connectors lane's zod schemas, shaped for the document
 * (a configuration component, one create shape per integration_type with a discriminator).
 */
import { z } from 'zod'
import { ConfigurationInput, CreateIntegrationBody, DEFAULT_API_VERSION, defaultConfiguration, SyncBody, UPDATABLE_CREDENTIALS, UpdateIntegrationBody, ValidateCommerceBody } from '../../../pipelines/connectors/schemas.ts'
import { INTEGRATION_TYPES, SYNCABLE_ENTITIES } from '../../../pipelines/connectors/sources/types.ts'
import { ErrorBody, failure } from '../errors.ts'
import { describeProperties, jsonSchema, PositiveId, propertiesOf, type JsonSchema } from '../request-schemas.ts'
import { json, shared, type Operation, type ResponseSpec, type RouteGroup } from '../routes.ts'
import { success, withMessage } from '../response-schemas.ts'
import { AccountInfo, ConnectionTested, Created, CredentialCheckFailure, Deleted, IntegrationDetail, IntegrationListItem, IntegrationsHealth, InvalidAppKey, SyncQueued, SyncRunItem, Updated } from './response-schemas.ts'

export const BASE = '/api/v2/tenant-integrations'
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })
const pascal = (snake: string) => snake.replace(/(^|_)([a-z])/g, (_m, _s, c: string) => c.toUpperCase())
const variantName = (type: string) => `Create${pascal(type)}Integration`
const listOf = (xs: readonly string[]) => (xs.length ? xs.join(', ') : 'nothing')

/** The body's tenant_id: a positive integer, or its digits as a string (the union zod parses it from). */
const BODY_TENANT_ID = { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'string', pattern: '^\\d{1,16}$' }], description: 'Tenant identifier' }

const CONFIGURATION_NOTES: Record<string, string> = {
  api_version: `Default: ${Object.entries(DEFAULT_API_VERSION)
    .map(([t, v]) => `${t} ${v}`)
    .join(', ')}`,
  sync_products: 'Default: true where the type syncs products',
  sync_orders: 'Default: true where the type syncs orders',
  sync_customers: 'Default: true where the type syncs customers',
  sync_interval: 'manual: no scheduled syncs',
  batch_size: 'Records per page (capped by the platform)',
  retry_attempts: 'Retries of a failed attempt that may succeed later',
  webhook_url: 'Where the signed completion notification is POSTed; null clears it',
  webhook_secret: 'Write-only: signs the notifications (HMAC-SHA256), shown as `****`; null clears it',
  initial_sync: 'Queue a full sync on create',
  site_id: 'Marketplace only',
  sync_listings: 'Marketplace only (stored, not synced)',
  sync_questions: 'Marketplace only (stored, not synced)',
}

/** Each type's credential fields: its create shape without tenant_id, integration_type and configuration. */
function credentialShapes(): (JsonSchema & { title: string; required: string[] })[] {
  return (jsonSchema(CreateIntegrationBody).oneOf as JsonSchema[]).map((v) => {
    const { tenant_id: _t, integration_type: type, configuration: _c, ...fields } = propertiesOf(v)
    return { ...v, title: String(type?.const), properties: fields, required: ((v.required as string[]) ?? []).filter((k) => k in fields) }
  })
}

/** Integration bodies kept in components: the configuration, and one create shape per integration_type. */
function integrationSchemas(): Record<string, JsonSchema> {
  const configuration = jsonSchema(ConfigurationInput)
  const defaults = INTEGRATION_TYPES.map((t) => defaultConfiguration(t) as unknown as Record<string, unknown>)
  describeProperties(configuration, CONFIGURATION_NOTES)
  for (const [key, s] of Object.entries(propertiesOf(configuration))) {
    // a default shared by every type; per-type ones are in the notes
    if (key in defaults[0]! && defaults.every((d) => JSON.stringify(d[key]) === JSON.stringify(defaults[0]![key]))) s.default = defaults[0]![key]
  }
  configuration.description = 'Partial: keys not sent keep their default (create) or stored value (update); unknown keys are refused'
  const out: Record<string, JsonSchema> = { IntegrationConfiguration: configuration }
  for (const variant of jsonSchema(CreateIntegrationBody).oneOf as JsonSchema[]) {
    const type = (propertiesOf(variant).integration_type?.const ?? '') as string
    variant.properties = { ...propertiesOf(variant), tenant_id: BODY_TENANT_ID, configuration: ref('IntegrationConfiguration') }
    out[variantName(type)] = { title: type, ...variant }
  }
  out.CreateIntegration = {
    description: "One shape per `integration_type`, each with that type's credential fields beside `tenant_id`; they may also be grouped in a `credentials` object. Unknown fields are refused.",
    type: 'object',
    required: ['tenant_id', 'integration_type'],
    properties: { tenant_id: BODY_TENANT_ID, integration_type: { type: 'string', enum: [...INTEGRATION_TYPES] }, configuration: ref('IntegrationConfiguration') },
    oneOf: INTEGRATION_TYPES.map((t) => ref(variantName(t))),
    discriminator: { propertyName: 'integration_type', mapping: Object.fromEntries(INTEGRATION_TYPES.map((t) => [t, `#/components/schemas/${variantName(t)}`])) },
  }
  return out
}

const IntegrationIdParams = z.object({ integrationId: PositiveId.meta({ description: 'Integration identifier (positive integer)' }) })
// GET /{tenantId} and PUT, DELETE /{integrationId} share one path template; OpenAPI forbids two templates of the same shape.
const TenantAsId = z.object({ id: PositiveId.meta({ description: 'Here: the tenant identifier (positive integer)' }) })
const IntegrationAsId = z.object({ id: PositiveId.meta({ description: 'Here: the integration identifier (positive integer)' }) })

const badId = failure('The integration id is not a positive integer')
const notFound = failure('No such integration, or it is deleted')
const undecryptable = failure('The stored credentials do not decrypt with the configured keyring (CDP_SECRETS_KEYS)')
const rejected = '`INVALID_APP_KEY` (with a `solution`) or `Invalid credentials` (`details.validation_error`)'
const unavailable = failure('The platform did not answer the verification (`Credential validation failed`, `details.retry` true); nothing was stored')
/** 400 of create and update: the common error body, or the spec's INVALID_APP_KEY answer. */
const refusedBody = (description: string): ResponseSpec => json(description, z.union([ErrorBody, InvalidAppKey]))
const forbidden = shared('Forbidden')

const health: Operation = {
  method: 'get',
  path: `${BASE}/health`,
  operationId: 'tenantIntegrationsHealth',
  summary: 'Health of the integrations',
  description:
    "Over the caller's integrations (a tenant key: its tenant's; the admin token: all): `total_integrations`, `active_integrations`, `by_type` (every type: total, active, last_24h_syncs, success_rate or null) and `alerts` for active integrations whose last finished run failed.",
  responses: { 200: json('The summary in `data`', success({ data: IntegrationsHealth })) },
}

const list: Operation = {
  method: 'get',
  path: `${BASE}/:id`,
  operationId: 'listTenantIntegrations',
  summary: 'List the integrations of a tenant',
  description:
    'Here `id` is the tenant id. `data` holds the integrations that are not deleted, each `{id, tenant_id, integration_type, account_name, environment (commerce_platform only), is_active, last_sync, sync_status, created_at, updated_at}`; `count` their number.',
  request: { params: TenantAsId },
  responses: { 200: json('`data`: the integrations; `count`', success({ data: z.array(IntegrationListItem), count: z.int().min(0) })), 400: failure('The tenant id is not a positive integer'), 403: forbidden },
}

const describe: Operation = {
  method: 'get',
  path: `${BASE}/integration/:integrationId`,
  operationId: 'getTenantIntegration',
  summary: 'One integration in detail',
  description:
    'The list item plus `tenant_name`, `validation_status`, `configuration` (webhook secret as `****`), `credentials` (secrets masked as `****` and their last four characters; null when the stored record does not decrypt), `statistics` (runs: total, successful, failed, `last_error`, `avg_sync_time`), `next_scheduled_sync`, `current_sync` and `deleted_at`.',
  request: { params: IntegrationIdParams },
  responses: { 200: json('The integration in `data`', success({ data: IntegrationDetail })), 400: badId, 403: forbidden, 404: notFound },
}

const create: Operation = {
  method: 'post',
  path: BASE,
  operationId: 'createTenantIntegration',
  summary: 'Connect an integration (credentials verified with the platform first)',
  description: [
    `Required credentials per type: ${credentialShapes()
      .map((c) => `${c.title}: ${c.required.join(', ')}`)
      .join('; ')}.`,
    "Checked in order: the shape (400), the tenant (403), the commerce app key's form `appkey-{account_name}-{hash}` (400 `INVALID_APP_KEY`), the same account already connected for the tenant (409), then the credentials with the platform (400 `Invalid credentials`, 502 when it does not answer). Nothing is stored unless every check passes; credentials are stored encrypted.",
    'Unless `configuration.initial_sync` is false, a full sync `sync_init_{id}` is queued for the types that sync data.',
  ].join('\n\n'),
  request: {
    body: {
      schema: CreateIntegrationBody,
      required: true,
      document: () => ref('CreateIntegration'),
      example: { tenant_id: 1, integration_type: 'commerce_platform', account_name: 'demoshop', environment: 'commerce_stable', app_key: 'appkey-demoshop-a1b2c3d4', app_token: 'your-app-token', configuration: { sync_interval: 'daily' } },
    },
  },
  responses: {
    201: json('Created: `data` has id, tenant_id, integration_type, validation_status "valid", is_active true, initial_sync ({sync_id, status} or null)', withMessage(Created)),
    400: refusedBody(`Invalid body (\`details.errors[]\`), ${rejected}`),
    403: forbidden,
    409: failure('The account is already connected for the tenant (`details.integration_id`)'),
    502: unavailable,
  },
}

const validate: Operation = {
  method: 'post',
  path: `${BASE}/validate/:integrationType`,
  operationId: 'validateIntegrationCredentials',
  summary: 'Check credentials with the platform without storing them',
  description:
    "The spec's `POST /validate/commerce_platform` takes `{account_name, environment, app_key, app_token}`; the other types take their create fields without tenant_id and integration_type. 200 with `account_info` (commerce_platform: account_name, account_id, is_active, hosts, apis_available; platform-specific for the others).",
  request: {
    params: z.object({ integrationType: z.enum(INTEGRATION_TYPES) }),
    body: {
      schema: z.union([ValidateCommerceBody, ...CreateIntegrationBody.options]),
      required: true,
      document: () => ({ oneOf: [{ title: 'commerce_platform', ...jsonSchema(ValidateCommerceBody) }, ...credentialShapes().filter((c) => c.title !== 'commerce_platform')] }),
    },
  },
  responses: {
    200: json('Valid: `message` and `account_info`', success({ message: z.string(), account_info: AccountInfo })),
    400: json(
      'Unknown type or invalid body (common error body, `details.errors[]`), or refused by the platform: `error.code` `INVALID_CREDENTIALS` or `INVALID_APP_KEY`',
      z.union([ErrorBody, CredentialCheckFailure]),
    ),
    502: failure('The platform did not answer (`Credential validation failed`, `details.retry` true)'),
  },
}

const update: Operation = {
  method: 'put',
  path: `${BASE}/:id`,
  operationId: 'updateTenantIntegration',
  summary: 'Update an integration',
  description: [
    `Here \`id\` is the integration id. Any of \`is_active\`, a partial \`configuration\` and the type's changeable credentials (${Object.entries(UPDATABLE_CREDENTIALS)
      .map(([t, f]) => `${t}: ${f.join(', ')}`)
      .join('; ')}). Account identifiers do not change: connect a new integration. New credentials (or a new marketplace site_id) are verified with the platform first; nothing changes when that fails.`,
    '`data.changes` maps each changed field path (`is_active`, `configuration.<key>`, a credential name) to `{old, new}`, secrets masked; nothing changed answers 200 with `changes: {}`.',
  ].join('\n\n'),
  request: {
    params: IntegrationAsId,
    body: {
      schema: UpdateIntegrationBody,
      required: true,
      document: (body) => ({ ...body, properties: { ...propertiesOf(body), configuration: ref('IntegrationConfiguration') } }),
    },
  },
  responses: {
    200: json('Updated (`Integration updated successfully`, or `Nothing changed`): `data` has id and changes', withMessage(Updated)),
    400: refusedBody(`Invalid id, invalid or empty body, a field the type does not take (\`not_applicable\`), ${rejected}`),
    403: forbidden,
    404: notFound,
    500: undecryptable,
    502: unavailable,
  },
}

const remove: Operation = {
  method: 'delete',
  path: `${BASE}/:id`,
  operationId: 'deleteTenantIntegration',
  summary: 'Delete an integration (soft)',
  description: 'Here `id` is the integration id. The integration is marked deleted and inactive: it leaves the lists, is no longer synced, and its account can be connected again. Its row and sync history are kept.',
  request: { params: IntegrationAsId },
  responses: { 200: json('Deleted: `data` has id and deleted_at', withMessage(Deleted)), 400: badId, 403: forbidden, 404: notFound },
}

const test: Operation = {
  method: 'post',
  path: `${BASE}/:integrationId/test`,
  operationId: 'testIntegrationConnection',
  summary: 'Test the connection of an integration',
  description:
    'Authenticates with the stored credentials, then calls each API of the type with the smallest page and times it (commerce_platform catalog, orders, masterdata; marketplace orders, customers; search_ads conversions, customer_match; social_ads ad_accounts). `status` is `connected` (all answered) or `degraded` (some failed; still 200).',
  request: { params: IntegrationIdParams },
  responses: {
    200: json('`data` has integration_id, type, status, response_time, endpoints_tested', withMessage(ConnectionTested)),
    400: failure('Invalid id, or the platform rejects the stored credentials (`Invalid credentials`)'),
    403: forbidden,
    404: notFound,
    500: undecryptable,
    502: failure('`Connection failed`: the platform does not answer (`details.endpoints_tested`)'),
  },
}

const sync: Operation = {
  method: 'post',
  path: `${BASE}/:integrationId/sync`,
  operationId: 'syncTenantIntegration',
  summary: 'Queue a sync of an integration',
  description: `The \`connectors\` role runs it; jobs of one integration run one at a time, in order. Entities per type: ${INTEGRATION_TYPES.map((t) => `${t} ${listOf(SYNCABLE_ENTITIES[t])}`).join('; ')} (an ads sync re-verifies the credentials). \`estimated_time\` is the average successful run (else 30 s per entity) times the jobs ahead.`,
  request: {
    params: IntegrationIdParams,
    body: {
      schema: SyncBody,
      required: false,
      example: { sync_type: 'full', entities: ['products', 'orders', 'customers'], date_from: '2025-01-01', date_to: '2025-06-30' },
      document: (body) => describeProperties(body, { entities: 'Default: those the configuration turns on', date_from: 'YYYY-MM-DD, inclusive, UTC', date_to: 'YYYY-MM-DD, inclusive, UTC' }),
    },
  },
  responses: {
    202: json('Queued: `data` has sync_id, status "queued", estimated_time, webhook_url, queue_position', withMessage(SyncQueued)),
    400: failure('Invalid id or body, or entities the type does not sync (`not_supported`)'),
    403: forbidden,
    404: notFound,
    409: failure('The integration is inactive (activate it with PUT `{"is_active": true}`)'),
  },
}

/** In mounting order: /health before /{id}, which would take it for a tenant id. */
/** The history's page (ours: the spec shows none). */
export const SyncHistoryQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20).meta({ description: 'Runs per page (1–100, default 20)' }),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0).meta({ description: 'Runs to skip (default 0)' }),
})

const history: Operation = {
  method: 'get',
  path: `${BASE}/integration/:integrationId/syncs`,
  operationId: 'listIntegrationSyncs',
  summary: "An integration's sync history, newest first",
  description:
    "Every run of the integration's syncs (a retried sync has one run per attempt), newest first: status, start, end, duration, the failure if any, the events it published and per entity what it read. Ours: the spec shows only the detail's `statistics`.",
  request: { params: IntegrationIdParams, query: SyncHistoryQuery },
  responses: {
    200: json('`data`: the runs; `pagination`', success({ data: z.array(SyncRunItem), pagination: z.strictObject({ total: z.int().min(0), limit: z.int().min(1), offset: z.int().min(0), has_next: z.boolean() }) })),
    400: failure('The integration id is not a positive integer, or the page is invalid (`details.errors[]`)'),
    403: forbidden,
    404: notFound,
  },
}

export const INTEGRATION_OPERATIONS = { health, list, describe, history, create, validate, update, remove, test, sync }

export const INTEGRATION_ROUTES: RouteGroup = {
  tag: {
    name: 'Integrations',
    description:
      "Connect a tenant's commerce platform, marketplace, search-ads and social-ads accounts; the `connectors` role syncs their data. A tenant key reaches its own tenant's integrations only (403 otherwise). docs/integrations.md.",
  },
  operations: Object.values(INTEGRATION_OPERATIONS),
  schemas: integrationSchemas,
}
