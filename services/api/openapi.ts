import { readFileSync } from 'node:fs'
import { z } from 'zod'
import { ANALYTICS_ENDPOINTS } from './analytics/endpoints.ts'
import { EXPORT_ROW_LIMIT } from './analytics/exports.ts'
import { ProcessBodySchema, ScheduleBodySchema } from '../../pipelines/processing/validation.ts'
import { TenantSettingsBody } from './tenant-settings-routes.ts'
import { IngestBatchSchema, MAX_BATCH_EVENTS } from '../../pipelines/ingest/validation.ts'
import { ORDER_EVENT_TYPES } from '../../common/events.ts'
import { ConfigurationInput, CreateIntegrationBody, DEFAULT_API_VERSION, defaultConfiguration, SyncBody, UPDATABLE_CREDENTIALS, UpdateIntegrationBody, ValidateCommerceBody } from '../../pipelines/connectors/schemas.ts'
import { INTEGRATION_TYPES, SYNCABLE_ENTITIES } from '../../pipelines/connectors/sources/types.ts'
import { CreateBody as AudienceSyncCreateBody, tenantQuery as audienceSyncQuery, UpdateBody as AudienceSyncUpdateBody } from './audience-sync-routes.ts'
import { deliveryStatusEventSchema } from '../../pipelines/audience-sync/ads-platform/webhook.ts'
import { defaultRateLimits, isOperationsPath, jobKind } from './rate-limit.ts'

/**
 * The OpenAPI 3.1 document of the query service (served at GET /openapi.json, rendered at
 * GET /docs). Request schemas come from the zod schemas the routes validate with
 * (`z.toJSONSchema(…, { io: 'input' })`, i.e. what a client sends), so the document cannot drift
 * from validation; response bodies are described by hand and loosely (`success` + `data`).
 *
 * Query parameters: one parameter per property of the endpoint's query schema. Lists
 * (`segments`, `customer_ids`, …) are arrays with `style: form, explode: true` (repeat the name);
 * the `segments[]=A` and `segments=A,B` forms are said in the description. Coerced numbers are
 * `integer`/`number`; string-or-boolean flags are `boolean`; `null` alternatives are dropped
 * (a query string cannot carry null).
 */

export type JsonSchema = Record<string, unknown>

export interface OpenApiParameter {
  name: string
  in: 'query' | 'path' | 'header'
  required: boolean
  description?: string
  schema: JsonSchema
  style?: string
  explode?: boolean
}

export interface OpenApiOperation {
  operationId: string
  summary: string
  description?: string
  tags: string[]
  parameters?: OpenApiParameter[]
  requestBody?: { required: boolean; content: Record<string, { schema: JsonSchema }> }
  responses: Record<string, unknown>
  security?: Record<string, string[]>[]
}

export interface OpenApiDocument {
  openapi: '3.1.0'
  info: { title: string; version: string; description: string }
  servers: { url: string }[]
  security: Record<string, string[]>[]
  tags: { name: string; description: string }[]
  paths: Record<string, Record<string, OpenApiOperation>>
  components: { schemas: Record<string, JsonSchema>; responses: Record<string, unknown>; securitySchemes: Record<string, unknown> }
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })
const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: ref('ErrorBody') } } })
const okJson = (description: string, schema: JsonSchema = ref('SuccessBody')) => ({ description, content: { 'application/json': { schema } } })

/** zod → JSON Schema (2020-12, which OpenAPI 3.1 uses as is), without the `$schema` key. */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output' = 'input'): JsonSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', override: spellOutFlags }) as JsonSchema
  return rest
}

/** A JSON Schema pattern has no flags, so a case-insensitive zod regex is emitted with both cases spelled out. */
function spellOutFlags(ctx: { zodSchema: z.core.$ZodTypes; jsonSchema: object }): void {
  const json = ctx.jsonSchema as JsonSchema
  for (const check of (ctx.zodSchema._zod.def as { checks?: z.core.$ZodCheck[] }).checks ?? []) {
    const re = (check._zod.def as { pattern?: RegExp }).pattern
    if (!re?.flags.includes('i')) continue
    for (const s of [json, ...((json.allOf as JsonSchema[] | undefined) ?? [])]) if (s.pattern === re.source) s.pattern = caseless(re.source)
  }
}

const otherCase = (s: string) => (s === s.toLowerCase() ? s.toUpperCase() : s.toLowerCase())

/** `^[a-z0-9]x$` → `^[a-zA-Z0-9][xX]$`: the same language without the `i` flag. */
export function caseless(source: string): string {
  let out = ''
  let inClass = false
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!
    if (c === '\\') {
      out += c + (source[i + 1] ?? '')
      i++
    } else if (inClass) {
      const range = /^[A-Za-z]-[A-Za-z]/.exec(source.slice(i))?.[0]
      if (range) {
        out += range + otherCase(range)
        i += 2
      } else {
        if (c === ']') inClass = false
        out += /[A-Za-z]/.test(c) ? c + otherCase(c) : c
      }
    } else {
      if (c === '[') inClass = true
      out += /[A-Za-z]/.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c
    }
  }
  return out
}

const props = (s: JsonSchema) => (s.properties ?? {}) as Record<string, JsonSchema>

/** The schema of one query parameter, simplified for query strings (see the module comment). */
function queryParamSchema(input: JsonSchema, output: JsonSchema | undefined): { schema: JsonSchema; list: boolean } {
  let s = { ...input }
  const alts = Array.isArray(s.anyOf) ? (s.anyOf as JsonSchema[]) : undefined
  if (alts) {
    const nonNull = alts.filter((a) => a.type !== 'null')
    const arr = nonNull.find((a) => a.type === 'array')
    const bool = nonNull.find((a) => a.type === 'boolean')
    if (arr) {
      // string | string[] on input (the list helper): the item constraints live on the output side.
      const outArr = output?.type === 'array' ? output : Array.isArray(output?.anyOf) ? (output.anyOf as JsonSchema[]).find((a) => a.type === 'array') : undefined
      const { anyOf: _a, ...rest } = s
      const merged: JsonSchema = { ...rest, ...(outArr ?? arr), type: 'array' }
      if (merged.items && typeof merged.items === 'object') merged.items = queryParamSchema(merged.items as JsonSchema, undefined).schema
      return { schema: merged, list: true }
    }
    if (bool) {
      const { anyOf: _a, ...rest } = s
      s = { ...rest, type: 'boolean' }
    } else if (nonNull.length === 1) {
      const { anyOf: _a, ...rest } = s
      s = { ...rest, ...nonNull[0] }
    } else {
      s = { ...s, anyOf: nonNull }
    }
  }
  // The exact-date regex zod emits is unreadable and says no more than format: date.
  if (s.format === 'date' && typeof s.pattern === 'string') delete s.pattern
  if (s.maximum === Number.MAX_SAFE_INTEGER) delete s.maximum
  return { schema: s, list: false }
}

const LIST_NOTE = 'A list: repeat the parameter (`x=A&x=B`), or send `x[]=A&x[]=B` or `x=A,B`.'

/** Query parameters of a zod query schema. */
export function queryParameters(schema: z.ZodType): OpenApiParameter[] {
  const input = jsonSchema(schema, 'input')
  let output: JsonSchema = {}
  try {
    output = jsonSchema(schema, 'output')
  } catch {
    // some output types cannot be represented; the input side is enough then
  }
  const required = new Set((input.required as string[] | undefined) ?? [])
  return Object.entries(props(input)).map(([name, s]) => {
    const { schema, list } = queryParamSchema(s, props(output)[name])
    const { description, ...rest } = schema
    const note = list ? LIST_NOTE.replaceAll('x', name) : undefined
    const text = [description, note].filter(Boolean).join(' ')
    return {
      name,
      in: 'query' as const,
      required: required.has(name) && rest.default === undefined,
      ...(text ? { description: text } : {}),
      schema: rest,
      ...(list ? { style: 'form', explode: true } : {}),
    }
  })
}

const ANALYTICS_ROW = 'rows of the endpoint, one object per row keyed by column header'

function analyticsPaths(): Record<string, Record<string, OpenApiOperation>> {
  const paths: Record<string, Record<string, OpenApiOperation>> = {}
  for (const ep of ANALYTICS_ENDPOINTS) {
    const parts: string[] = []
    if (ep.overview) parts.push('Overview response: sent with `Cache-Control: private, max-age=300`.')
    if (ep.export) {
      parts.push(
        `\`format=csv|excel|json\` downloads the endpoint's rows as a file (CSV: RFC 4180, UTF-8 with BOM; excel: xlsx; json: an array of objects) instead of the JSON body; at most ${EXPORT_ROW_LIMIT.toLocaleString('en')} rows, more is a 400 asking to narrow the filters.`,
      )
    } else {
      parts.push('This endpoint has no row-level export: `format` is answered with 400.')
    }
    if (ep.ignores?.length) parts.push(`Options that do not apply here: ${ep.ignores.join(', ')}.`)
    const slug = ep.path.replace(/^\/api\/(v2\/cdp|cdp\/v2)\//, '').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c?: string) => (c ? c.toUpperCase() : ''))
    const content: Record<string, unknown> = { 'application/json': { schema: ref('SuccessBody') } }
    if (ep.export) {
      content['text/csv'] = { schema: { type: 'string', description: 'CSV export (format=csv)' } }
      content['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'] = { schema: { type: 'string', contentEncoding: 'binary', description: 'xlsx export (format=excel)' } }
    }
    const responses: Record<string, unknown> = {
      '200': {
        description: ep.export ? `The analytics body, or with \`format\` a download of the ${ANALYTICS_ROW}` : 'The analytics body',
        content,
      },
      '400': errorResponse('Invalid query parameters (`details.errors[]` lists each), export not available or too large'),
      '401': { $ref: '#/components/responses/Unauthorized' },
      '403': { $ref: '#/components/responses/Forbidden' },
      '404': errorResponse('Tenant not found'),
      '429': { $ref: '#/components/responses/TooManyRequests' },
    }
    if (ep.unknownTenantStatus === 400) {
      delete responses['404']
      responses['400'] = errorResponse('Invalid query parameters (`details.errors[]` lists each), or tenant not found')
      responses['204'] = { description: 'No customer of the tenant has demographic data (no body)' }
    }
    if (ep.filterErrorStatus) responses[String(ep.filterErrorStatus.status)] = errorResponse(`A value of ${ep.filterErrorStatus.fields.join(', ')} outside the allowed set`)
    for (const path of [ep.path, ...(ep.aliases ?? [])]) {
      paths[path] = {
        get: {
          operationId: `get${slug.charAt(0).toUpperCase()}${slug.slice(1)}${path === ep.path ? '' : 'Alias'}`,
          summary: ep.summary || `GET ${ep.path}`,
          description: path === ep.path ? parts.join('\n\n') : `Alias of \`${ep.path}\`.\n\n${parts.join('\n\n')}`,
          tags: ['Analytics'],
          parameters: queryParameters(ep.query),
          responses: responses as OpenApiOperation['responses'],
        },
      }
    }
  }
  return paths
}

const tenantIdParam: OpenApiParameter = {
  name: 'tenantId',
  in: 'path',
  required: true,
  description: 'Tenant identifier (positive integer)',
  schema: { type: 'integer', minimum: 1 },
}

const processingErrors = {
  '400': errorResponse('Invalid tenant id or body; `details.errors[]` lists every problem at once'),
  '401': { $ref: '#/components/responses/Unauthorized' },
  '403': { $ref: '#/components/responses/Forbidden' },
  '404': errorResponse('No tenant with the given identifier'),
}

/**
 * Processing, integration and audience-sync operations answer 429 over our per-key limits
 * (rate-limit.ts; the spec shows none): each gets the response and says which budget it spends.
 */
function withOperationLimits(paths: Record<string, Record<string, OpenApiOperation>>): Record<string, Record<string, OpenApiOperation>> {
  const d = defaultRateLimits('production')
  for (const [path, ops] of Object.entries(paths)) {
    if (!isOperationsPath(path)) continue
    const concrete = path.replace(/\{[^}]+\}/g, 'x')
    for (const [method, op] of Object.entries(ops)) {
      const kind = jobKind(method.toUpperCase(), concrete)
      const operation = `an operation: at most ${d.operationsPerMinute} a minute per API key (\`CDP_RATE_LIMIT_OPERATIONS_PER_MINUTE\`)`
      const job = `a job: at most ${d.jobsPerMinute} a minute per API key (\`CDP_RATE_LIMIT_JOBS_PER_MINUTE\`), within the ${d.operationsPerMinute} operations`
      const budget = kind === 'always' ? job : kind === 'with-credentials' ? `${operation}; with new credentials, ${job}` : operation
      op.description = `${op.description ? `${op.description}\n\n` : ''}Rate limit: ${budget}; the admin token counts per IP.`
      op.responses['429'] = { $ref: '#/components/responses/TooManyRequests' }
    }
  }
  return paths
}

/** Sets the description of some properties of a generated schema (those it has); returns the schema. */
function describeProps(schema: JsonSchema, descriptions: Record<string, string>): JsonSchema {
  for (const [k, d] of Object.entries(descriptions)) {
    const p = props(schema)[k]
    if (p) p.description = d
  }
  return schema
}

function processingPaths(): Record<string, Record<string, OpenApiOperation>> {
  const base = '/api/v2/cdp/process'
  const schedule = describeProps(jsonSchema(ScheduleBodySchema), {
    schedule_at: 'ISO 8601 date or date-time (without a zone it is UTC), before the year 2500; default: now',
    frequency: 'Required when recurring is true',
  })
  return {
    [`${base}/{tenantId}`]: {
      post: {
        operationId: 'processTenant',
        summary: 'Recompute RFM, CLV and churn for a tenant now',
        description: 'Runs the requested analyses (deduplicated, computed in the order rfm, clv, churn) and answers when they are done, as of the tenant\'s reference date (`metadata.reference_date`). Results of the last hour come from the cache unless `force` is true. One run per tenant at a time. With `as_of` (query or body), a read-only run as of the end of that day: no job, no cache, the tenant\'s features untouched.',
        tags: ['Processing'],
        parameters: [tenantIdParam, { name: 'as_of', in: 'query', required: false, schema: { type: 'string', format: 'date' }, description: 'Compute as of the end of this UTC day instead of the reference date' }],
        requestBody: { required: false, content: { 'application/json': { schema: jsonSchema(ProcessBodySchema) } } },
        responses: {
          '200': okJson('Processed (or from the results cache): `message`, `tenant_id`, `results` per analysis, `total_time` in seconds'),
          ...processingErrors,
          '409': errorResponse('A job is already running for the tenant, or the run was cancelled'),
          '500': errorResponse('The run failed'),
        },
      },
    },
    [`${base}/{tenantId}/schedule`]: {
      post: {
        operationId: 'scheduleProcessing',
        summary: 'Schedule processing for a tenant (once or recurring)',
        description: 'Replaces any active schedule of the tenant.',
        tags: ['Processing'],
        parameters: [tenantIdParam],
        requestBody: { required: false, content: { 'application/json': { schema: schedule } } },
        responses: { '201': okJson('Scheduled: `data` has schedule_id, tenant_id, schedule_at, recurring, frequency, analyses, next_run'), ...processingErrors },
      },
      delete: {
        operationId: 'unscheduleProcessing',
        summary: "Remove a tenant's processing schedule",
        tags: ['Processing'],
        parameters: [tenantIdParam],
        responses: { '200': okJson('Removed: `data` has tenant_id and schedule_ids'), ...processingErrors },
      },
    },
    [`${base}/status/{tenantId}`]: {
      get: {
        operationId: 'processingStatus',
        summary: 'Processing status of a tenant',
        description: 'Current or last job, its progress and the schedule.',
        tags: ['Processing'],
        parameters: [tenantIdParam],
        responses: { '200': okJson('Status object in `data`'), ...processingErrors },
      },
    },
    [`${base}/{tenantId}/cancel`]: {
      delete: {
        operationId: 'cancelProcessing',
        summary: "Cancel a tenant's running or queued job",
        tags: ['Processing'],
        parameters: [tenantIdParam],
        responses: {
          '200': okJson('Cancelled, or cancel requested from the replica running it: `data` has tenant_id, job_id, status'),
          ...processingErrors,
          '409': errorResponse('The job finished before it could be cancelled'),
        },
      },
    },
  }
}

function tenantsPaths(): Record<string, Record<string, OpenApiOperation>> {
  const path = '/api/v2/cdp/tenants/{tenantId}/settings'
  const body = describeProps(jsonSchema(TenantSettingsBody), {
    reference_date: '`now` (default: the wall clock), `data_end` (the latest order of the tenant) or a fixed YYYY-MM-DD (the end of that UTC day; later orders do not count). What "today" is for recency, churn, CLV and the analytics periods (docs/tenant-settings.md).',
    currency: "ISO 4217; set by the tenant's first order when unset. Cannot change once the tenant has orders (409 currency_locked).",
  })
  const settings = 'Settings in `data`: tenant_id, tenant_name (null: shown as `Tenant {id}`), currency (null until the first order), reference_date, updated_at, effective_reference_date (the date it resolves to now)'
  return {
    [path]: {
      get: {
        operationId: 'getTenantSettings',
        summary: "A tenant's settings: name, currency and reference date",
        tags: ['Tenants'],
        parameters: [tenantIdParam],
        responses: { '200': okJson(settings), '400': errorResponse('Invalid tenant id'), '404': errorResponse('Neither data nor settings for this tenant') },
      },
      put: {
        operationId: 'putTenantSettings',
        summary: "Change a tenant's settings (absent fields keep their value)",
        description: 'The admin token or the tenant\'s key. A new reference date applies to the tenant\'s analytics at once and to its stored features at the feature role\'s next tick (or a processing run).',
        tags: ['Tenants'],
        parameters: [tenantIdParam],
        requestBody: { required: true, content: { 'application/json': { schema: body } } },
        responses: { '200': okJson(settings), '400': errorResponse('Invalid settings: `details.errors` by field'), '409': errorResponse('The currency of a tenant with orders cannot change') },
      },
    },
  }
}

/**
 * What one ingest event holds. The field parsers of pipelines/ingest/validation.ts accept lenient
 * input (digit strings for numbers, ISO 8601 or epoch ms for times), which zod cannot express as
 * JSON Schema, so these item schemas are written out here; the batch envelope comes from
 * IngestBatchSchema.
 */
const TIMESTAMP = { anyOf: [{ type: 'integer', description: 'epoch milliseconds' }, { type: 'string', description: 'ISO 8601; without a zone it is UTC' }] }
const ID = { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'string', pattern: '^\\d+$' }] }
const AMOUNT = { anyOf: [{ type: 'number' }, { type: 'string', pattern: '^-?\\d+(\\.\\d+)?$' }], description: 'decimal amount' }
const TEXT = { type: 'string', maxLength: 1024 }
const COMMON_EVENT = {
  event_id: { ...TEXT, description: 'Derived from the content when absent (idempotent re-sends)' },
  tenant_id: ID,
  occurred_at: TIMESTAMP,
  source: { ...TEXT, description: 'default: http' },
}
const ORDER_EVENT: JsonSchema = {
  type: 'object',
  required: ['tenant_id', 'occurred_at', 'order_id', 'customer_id', 'total'],
  properties: {
    ...COMMON_EVENT,
    event_type: { type: 'string', enum: [...ORDER_EVENT_TYPES], default: 'placed' },
    order_id: TEXT,
    customer_id: ID,
    status: TEXT,
    total: AMOUNT,
    currency: { type: 'string', pattern: '^[A-Za-z]{3}$', default: 'ARS' },
    refunded_amount: AMOUNT,
    items: {
      type: 'array',
      items: { type: 'object', required: ['sku', 'quantity', 'unit_price'], properties: { sku: TEXT, name: TEXT, quantity: { type: 'number' }, unit_price: AMOUNT } },
    },
    placed_at: TIMESTAMP,
  },
}
const CUSTOMER_EVENT: JsonSchema = {
  type: 'object',
  required: ['tenant_id', 'occurred_at', 'customer_id'],
  properties: {
    ...COMMON_EVENT,
    customer_id: ID,
    email: { type: 'string', maxLength: 255 },
    ...Object.fromEntries(['first_name', 'last_name', 'phone', 'national_id', 'street', 'city', 'province', 'postal_code', 'registration_source'].map((k) => [k, TEXT])),
    country: { type: 'string', pattern: '^[A-Za-z]{2}$', description: 'ISO 3166-1 alpha-2' },
    created_at: TIMESTAMP,
    source_ids: { type: 'array', items: { type: 'object', required: ['source', 'id'], properties: { source: TEXT, id: TEXT } } },
  },
}

function ingestPaths(): Record<string, Record<string, OpenApiOperation>> {
  const out: Record<string, Record<string, OpenApiOperation>> = {}
  for (const [kind, item] of [
    ['orders', 'OrderEventInput'],
    ['customers', 'CustomerEventInput'],
  ] as const) {
    const body = jsonSchema(IngestBatchSchema)
    const events = props(body).events
    if (events) events.items = ref(item)
    out[`/api/v2/cdp/ingest/${kind}`] = {
      post: {
        operationId: `ingest${kind.charAt(0).toUpperCase()}${kind.slice(1)}`,
        summary: `Ingest a batch of ${kind === 'orders' ? 'order' : 'customer'} events`,
        description: `1 to ${MAX_BATCH_EVENTS.toLocaleString('en')} events. All or nothing: any invalid event is a 400 listing every field error by index and nothing is written. 202 once every event is durable in the event log.`,
        tags: ['Ingest'],
        requestBody: { required: true, content: { 'application/json': { schema: body } } },
        responses: {
          '202': okJson('Accepted: `data.accepted` (count) and `data.event_ids`'),
          '400': errorResponse('Invalid body or events (`details.errors[]` with index, path, code, message)'),
          '401': { $ref: '#/components/responses/Unauthorized' },
          '403': { $ref: '#/components/responses/Forbidden' },
          '413': errorResponse('Body larger than 20 MB'),
        },
      },
    }
  }
  return out
}

/** Public routes (no bearer token): health, metrics, docs and the platforms' webhooks. */
const open = { security: [] as Record<string, string[]>[] }

const pascal = (snake: string) => snake.replace(/(^|_)([a-z])/g, (_m, _s, c: string) => c.toUpperCase())
const integrationVariant = (type: string) => `Create${pascal(type)}Integration`

const integrationIdParam: OpenApiParameter = {
  name: 'integrationId',
  in: 'path',
  required: true,
  description: 'Integration identifier (positive integer)',
  schema: { type: 'integer', minimum: 1 },
}

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

/** Integration bodies kept in components: the configuration, and one create shape per integration_type. */
function integrationSchemas(): Record<string, JsonSchema> {
  const configuration = jsonSchema(ConfigurationInput)
  const defaults = INTEGRATION_TYPES.map((t) => defaultConfiguration(t) as unknown as Record<string, unknown>)
  for (const [key, s] of Object.entries(props(configuration))) {
    if (CONFIGURATION_NOTES[key]) s.description = CONFIGURATION_NOTES[key]
    // a default shared by every type; per-type ones are in the notes
    if (key in defaults[0]! && defaults.every((d) => JSON.stringify(d[key]) === JSON.stringify(defaults[0]![key]))) s.default = defaults[0]![key]
  }
  configuration.description = 'Partial: keys not sent keep their default (create) or stored value (update); unknown keys are refused'
  const out: Record<string, JsonSchema> = { IntegrationConfiguration: configuration }
  for (const variant of jsonSchema(CreateIntegrationBody).oneOf as JsonSchema[]) {
    const type = (props(variant).integration_type?.const ?? '') as string
    variant.properties = { ...props(variant), tenant_id: BODY_TENANT_ID, configuration: ref('IntegrationConfiguration') }
    out[integrationVariant(type)] = { title: type, ...variant }
  }
  out.CreateIntegration = {
    description: "One shape per `integration_type`, each with that type's credential fields beside `tenant_id`; they may also be grouped in a `credentials` object. Unknown fields are refused.",
    type: 'object',
    required: ['tenant_id', 'integration_type'],
    properties: { tenant_id: BODY_TENANT_ID, integration_type: { type: 'string', enum: [...INTEGRATION_TYPES] }, configuration: ref('IntegrationConfiguration') },
    oneOf: INTEGRATION_TYPES.map((t) => ref(integrationVariant(t))),
    discriminator: { propertyName: 'integration_type', mapping: Object.fromEntries(INTEGRATION_TYPES.map((t) => [t, `#/components/schemas/${integrationVariant(t)}`])) },
  }
  out.CredentialCheckFailure = {
    type: 'object',
    description: 'The refusal of POST /validate/{integrationType} (the spec shape, not the common error body).',
    required: ['success', 'message', 'error'],
    properties: {
      success: { const: false },
      message: { type: 'string', description: '`Invalid credentials` or `Invalid app key`' },
      error: {
        type: 'object',
        required: ['code', 'details'],
        properties: {
          code: { type: 'string', enum: ['INVALID_CREDENTIALS', 'INVALID_APP_KEY'] },
          details: { type: 'string' },
          account_name: { type: ['string', 'null'] },
          environment: { type: 'string', description: 'commerce_platform' },
          integration_type: { type: 'string', description: 'the other types' },
          solution: { type: 'string', description: 'INVALID_APP_KEY' },
        },
      },
    },
  }
  return out
}

const listOf = (xs: readonly string[]) => (xs.length ? xs.join(', ') : 'nothing')

function integrationsPaths(): Record<string, Record<string, OpenApiOperation>> {
  const base = '/api/v2/tenant-integrations'
  const tags = ['Integrations']
  const auth = { '401': { $ref: '#/components/responses/Unauthorized' }, '403': { $ref: '#/components/responses/Forbidden' } }
  const badId = errorResponse('The integration id is not a positive integer')
  const notFound = errorResponse('No such integration, or it is deleted')
  const undecryptable = errorResponse('The stored credentials do not decrypt with the configured keyring (CDP_SECRETS_KEYS)')
  const rejected = '`INVALID_APP_KEY` (with a `solution`) or `Invalid credentials` (`details.validation_error`)'
  const unavailable = errorResponse('The platform did not answer the verification (`Credential validation failed`, `details.retry` true); nothing was stored')
  // GET /{tenantId} and PUT, DELETE /{integrationId} share one path template; OpenAPI forbids two templates of the same shape.
  const idAs = (p: OpenApiParameter): OpenApiParameter => ({ ...p, name: 'id' })
  const update = jsonSchema(UpdateIntegrationBody)
  update.properties = { ...props(update), configuration: ref('IntegrationConfiguration') }
  const sync = jsonSchema(SyncBody)
  const syncNotes: Record<string, string> = { entities: "Default: those the configuration turns on", date_from: 'YYYY-MM-DD, inclusive, UTC', date_to: 'YYYY-MM-DD, inclusive, UTC' }
  for (const [key, s] of Object.entries(props(sync))) if (syncNotes[key]) s.description = syncNotes[key]
  // Each type's credential fields: its create shape without tenant_id, integration_type and configuration.
  const credentialShapes = (jsonSchema(CreateIntegrationBody).oneOf as JsonSchema[]).map((v) => {
    const { tenant_id: _t, integration_type: type, configuration: _c, ...fields } = props(v)
    return { ...v, title: String(type?.const), properties: fields, required: ((v.required as string[]) ?? []).filter((k) => k in fields) }
  })
  return {
    [base]: {
      post: {
        operationId: 'createTenantIntegration',
        summary: 'Connect an integration (credentials verified with the platform first)',
        description: [
          `Required credentials per type: ${credentialShapes.map((c) => `${c.title}: ${c.required.join(', ')}`).join('; ')}.`,
          "Checked in order: the shape (400), the tenant (403), the commerce app key's form `appkey-{account_name}-{hash}` (400 `INVALID_APP_KEY`), the same account already connected for the tenant (409), then the credentials with the platform (400 `Invalid credentials`, 502 when it does not answer). Nothing is stored unless every check passes; credentials are stored encrypted.",
          'Unless `configuration.initial_sync` is false, a full sync `sync_init_{id}` is queued for the types that sync data.',
        ].join('\n\n'),
        tags,
        requestBody: { required: true, content: { 'application/json': { schema: ref('CreateIntegration') } } },
        responses: {
          '201': okJson('Created: `data` has id, tenant_id, integration_type, validation_status "valid", is_active true, initial_sync ({sync_id, status} or null)'),
          '400': errorResponse(`Invalid body (\`details.errors[]\`), ${rejected}`),
          ...auth,
          '409': errorResponse('The account is already connected for the tenant (`details.integration_id`)'),
          '502': unavailable,
        },
      },
    },
    [`${base}/{id}`]: {
      get: {
        operationId: 'listTenantIntegrations',
        summary: 'List the integrations of a tenant',
        description:
          'Here `id` is the tenant id. `data` holds the integrations that are not deleted, each `{id, tenant_id, integration_type, account_name, environment (commerce_platform only), is_active, last_sync, sync_status, created_at, updated_at}`; `count` their number.',
        tags,
        parameters: [idAs(tenantIdParam)],
        responses: { '200': okJson('`data`: the integrations; `count`'), '400': errorResponse('The tenant id is not a positive integer'), ...auth },
      },
      put: {
        operationId: 'updateTenantIntegration',
        summary: 'Update an integration',
        description: [
          `Here \`id\` is the integration id. Any of \`is_active\`, a partial \`configuration\` and the type's changeable credentials (${Object.entries(UPDATABLE_CREDENTIALS)
            .map(([t, f]) => `${t}: ${f.join(', ')}`)
            .join('; ')}). Account identifiers do not change: connect a new integration. New credentials (or a new marketplace site_id) are verified with the platform first; nothing changes when that fails.`,
          '`data.changes` maps each changed field path (`is_active`, `configuration.<key>`, a credential name) to `{old, new}`, secrets masked; nothing changed answers 200 with `changes: {}`.',
        ].join('\n\n'),
        tags,
        parameters: [idAs(integrationIdParam)],
        requestBody: { required: true, content: { 'application/json': { schema: update } } },
        responses: {
          '200': okJson('Updated: `data` has id and changes'),
          '400': errorResponse(`Invalid id, invalid or empty body, a field the type does not take (\`not_applicable\`), ${rejected}`),
          ...auth,
          '404': notFound,
          '500': undecryptable,
          '502': unavailable,
        },
      },
      delete: {
        operationId: 'deleteTenantIntegration',
        summary: 'Delete an integration (soft)',
        description: 'Here `id` is the integration id. The integration is marked deleted and inactive: it leaves the lists, is no longer synced, and its account can be connected again. Its row and sync history are kept.',
        tags,
        parameters: [idAs(integrationIdParam)],
        responses: { '200': okJson('Deleted: `data` has id and deleted_at'), '400': badId, ...auth, '404': notFound },
      },
    },
    [`${base}/integration/{integrationId}`]: {
      get: {
        operationId: 'getTenantIntegration',
        summary: 'One integration in detail',
        description:
          'The list item plus `tenant_name`, `validation_status`, `configuration` (webhook secret as `****`), `credentials` (secrets masked as `****` and their last four characters; null when the stored record does not decrypt), `statistics` (runs: total, successful, failed, `last_error`, `avg_sync_time`), `next_scheduled_sync`, `current_sync` and `deleted_at`.',
        tags,
        parameters: [integrationIdParam],
        responses: { '200': okJson('The integration in `data`'), '400': badId, ...auth, '404': notFound },
      },
    },
    [`${base}/validate/{integrationType}`]: {
      post: {
        operationId: 'validateIntegrationCredentials',
        summary: 'Check credentials with the platform without storing them',
        description:
          "The spec's `POST /validate/commerce_platform` takes `{account_name, environment, app_key, app_token}`; the other types take their create fields without tenant_id and integration_type. 200 with `account_info` (commerce_platform: account_name, account_id, is_active, hosts, apis_available; platform-specific for the others).",
        tags,
        parameters: [{ name: 'integrationType', in: 'path', required: true, schema: { type: 'string', enum: [...INTEGRATION_TYPES] } }],
        requestBody: { required: true, content: { 'application/json': { schema: { oneOf: [{ title: 'commerce_platform', ...jsonSchema(ValidateCommerceBody) }, ...credentialShapes.filter((c) => c.title !== 'commerce_platform')] } } } },
        responses: {
          '200': okJson('Valid: `message` and `account_info`'),
          '400': {
            description: 'Unknown type or invalid body (common error body, `details.errors[]`), or refused by the platform: `error.code` `INVALID_CREDENTIALS` or `INVALID_APP_KEY`',
            content: { 'application/json': { schema: { anyOf: [ref('ErrorBody'), ref('CredentialCheckFailure')] } } },
          },
          '401': auth['401'],
          '502': errorResponse('The platform did not answer (`Credential validation failed`, `details.retry` true)'),
        },
      },
    },
    [`${base}/{integrationId}/test`]: {
      post: {
        operationId: 'testIntegrationConnection',
        summary: 'Test the connection of an integration',
        description:
          'Authenticates with the stored credentials, then calls each API of the type with the smallest page and times it (commerce_platform catalog, orders, masterdata; marketplace orders, customers; search_ads conversions, customer_match; social_ads ad_accounts). `status` is `connected` (all answered) or `degraded` (some failed; still 200).',
        tags,
        parameters: [integrationIdParam],
        responses: {
          '200': okJson('`data` has integration_id, type, status, response_time, endpoints_tested'),
          '400': errorResponse('Invalid id, or the platform rejects the stored credentials (`Invalid credentials`)'),
          ...auth,
          '404': notFound,
          '500': undecryptable,
          '502': errorResponse('`Connection failed`: the platform does not answer (`details.endpoints_tested`)'),
        },
      },
    },
    [`${base}/{integrationId}/sync`]: {
      post: {
        operationId: 'syncTenantIntegration',
        summary: 'Queue a sync of an integration',
        description: `The \`connectors\` role runs it; jobs of one integration run one at a time, in order. Entities per type: ${INTEGRATION_TYPES.map((t) => `${t} ${listOf(SYNCABLE_ENTITIES[t])}`).join('; ')} (an ads sync re-verifies the credentials). \`estimated_time\` is the average successful run (else 30 s per entity) times the jobs ahead.`,
        tags,
        parameters: [integrationIdParam],
        requestBody: { required: false, content: { 'application/json': { schema: sync } } },
        responses: {
          '202': okJson('Queued: `data` has sync_id, status "queued", estimated_time, webhook_url, queue_position'),
          '400': errorResponse('Invalid id or body, or entities the type does not sync (`not_supported`)'),
          ...auth,
          '404': notFound,
          '409': errorResponse('The integration is inactive (activate it with PUT `{"is_active": true}`)'),
        },
      },
    },
    [`${base}/health`]: {
      get: {
        operationId: 'tenantIntegrationsHealth',
        summary: 'Health of the integrations',
        description:
          "Over the caller's integrations (a tenant key: its tenant's; the admin token: all): `total_integrations`, `active_integrations`, `by_type` (every type: total, active, last_24h_syncs, success_rate or null) and `alerts` for active integrations whose last finished run failed.",
        tags,
        responses: { '200': okJson('The summary in `data`'), '401': auth['401'] },
      },
    },
  }
}

function audienceSyncPaths(): Record<string, Record<string, OpenApiOperation>> {
  const base = '/api/v2/cdp/audience-syncs'
  const tags = ['Audience syncs']
  const tenant = queryParameters(audienceSyncQuery)
  const idParam: OpenApiParameter = { name: 'id', in: 'path', required: true, description: 'Audience-sync identifier', schema: { type: 'string' } }
  const errors = {
    '400': errorResponse('tenant_id missing or not a positive integer (`details.errors[]`)'),
    '401': { $ref: '#/components/responses/Unauthorized' },
    '403': { $ref: '#/components/responses/Forbidden' },
  }
  const notFound = errorResponse('No such audience sync for the tenant')
  const tokenRefused = errorResponse('Invalid query or body (`details.errors[]`), or the token fails `/debug_token` (`Invalid credentials`, `details.validation_error`)')
  const tokenCheckFailed = errorResponse('The token check with the ads platform failed unexpectedly')
  return {
    [base]: {
      get: {
        operationId: 'listAudienceSyncs',
        summary: 'List the audience syncs of a tenant',
        description:
          'Each sync: id, tenant_id, name, segment, ad_account_id, access_token (always `********`), status, paused_reason, blocked_until, audience {id, approximate_count, delivery_status, status_source, status_updated_at}, last_sync, batch counters, rejected_batches, alerts, created_at, updated_at.',
        tags,
        parameters: tenant,
        responses: { '200': okJson('`data`: the syncs; `count`'), ...errors },
      },
      post: {
        operationId: 'createAudienceSync',
        summary: "Keep a tenant's RFM segment in a custom audience of an ad account",
        description: 'The access token is checked with `/debug_token` first (valid, unexpired, with the required permissions), then stored encrypted; it is never shown again.',
        tags,
        parameters: tenant.map((p) => ({ ...p, required: false, description: "Optional; when given it must equal the body's tenant_id" })),
        requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(AudienceSyncCreateBody) } } },
        responses: {
          '201': okJson('Created: the sync in `data`'),
          ...errors,
          '400': errorResponse('Invalid body (`details.errors[]`), query and body name different tenants (`tenant_mismatch`), or the token fails `/debug_token` (`Invalid credentials`, `details.validation_error`)'),
          '500': tokenCheckFailed,
        },
      },
    },
    [`${base}/{id}`]: {
      get: {
        operationId: 'getAudienceSync',
        summary: 'One audience sync',
        description: 'The shape of a list item, with the audience status last polled or received by webhook.',
        tags,
        parameters: [idParam, ...tenant],
        responses: { '200': okJson('The sync in `data`'), ...errors, '404': notFound },
      },
      put: {
        operationId: 'updateAudienceSync',
        summary: 'Rename, change the segment, replace the token, pause or resume',
        description: 'A new token (checked with `/debug_token` first) or `status: active` resumes a paused sync and clears a rate-limit wait; `status: paused` pauses it.',
        tags,
        parameters: [idParam, ...tenant],
        requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(AudienceSyncUpdateBody) } } },
        responses: { '200': okJson('Updated: the sync in `data`'), ...errors, '400': tokenRefused, '404': notFound, '500': tokenCheckFailed },
      },
      delete: {
        operationId: 'deleteAudienceSync',
        summary: 'Stop an audience sync',
        description: 'The custom audience stays on the platform.',
        tags,
        parameters: [idParam, ...tenant],
        responses: { '200': okJson('Deleted: `data` has id and deleted_at'), ...errors, '404': notFound },
      },
    },
  }
}

function webhookPaths(): Record<string, Record<string, OpenApiOperation>> {
  const tags = ['Webhooks']
  const mounted = 'Alias: `/webhooks/social_ads`. Mounted only when CDP_ADS_APP_SECRET and CDP_ADS_WEBHOOK_VERIFY_TOKEN are set (404 otherwise).'
  const hub = (name: string, description: string, schema: JsonSchema = { type: 'string' }): OpenApiParameter => ({ name: `hub.${name}`, in: 'query', required: true, description, schema })
  return {
    '/webhooks/social-ads': {
      get: {
        operationId: 'socialAdsWebhookHandshake',
        summary: "The ads platform's subscription handshake",
        description: `Echoes \`hub.challenge\` when \`hub.mode\` is subscribe and \`hub.verify_token\` is CDP_ADS_WEBHOOK_VERIFY_TOKEN. Public: no bearer token. ${mounted}`,
        tags,
        ...open,
        parameters: [hub('mode', 'Must be subscribe', { type: 'string', enum: ['subscribe'] }), hub('verify_token', 'CDP_ADS_WEBHOOK_VERIFY_TOKEN'), hub('challenge', 'Echoed back')],
        responses: {
          '200': { description: 'The challenge, as is', content: { 'text/plain': { schema: { type: 'string' } } } },
          '400': errorResponse('Not a subscription request (`hub.mode` is not subscribe, or no `hub.challenge`)'),
          '403': errorResponse('`hub.verify_token` does not match'),
        },
      },
      post: {
        operationId: 'socialAdsWebhookEvent',
        summary: 'Delivery-status events of custom audiences',
        description: `Stores each entry's last \`delivery_status\` change for the audience sync that owns the audience; entries of unknown audiences are counted and ignored. Public: no bearer token; the \`X-Hub-Signature-256\` header authenticates the raw body. ${mounted}`,
        tags,
        ...open,
        parameters: [
          { name: 'X-Hub-Signature-256', in: 'header', required: true, description: 'sha256=<hex HMAC-SHA256 of the raw body, keyed with CDP_ADS_APP_SECRET>', schema: { type: 'string', pattern: '^sha256=[0-9a-fA-F]{64}$' } },
        ],
        requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(deliveryStatusEventSchema) } } },
        responses: {
          '200': okJson('`data` has updated and unknown_audiences'),
          '400': errorResponse('The body is not JSON, or not the event shape (`details.errors[]`)'),
          '401': errorResponse('Missing or wrong signature'),
          '413': errorResponse('Body larger than 1 MB'),
        },
      },
    },
  }
}

function opsPaths(): Record<string, Record<string, OpenApiOperation>> {
  return {
    '/health': {
      get: {
        operationId: 'health',
        summary: 'Liveness',
        tags: ['Operations'],
        ...open,
        responses: { '200': okJson('Alive: `status` "ok", `uptime_seconds` and build info', { type: 'object', properties: { status: { const: 'ok' }, uptime_seconds: { type: 'integer' } } }) },
      },
    },
    '/ready': {
      get: {
        operationId: 'ready',
        summary: 'Readiness: every dependency check passes',
        tags: ['Operations'],
        ...open,
        responses: {
          '200': okJson('Ready', ref('Readiness')),
          '503': okJson('Not ready: `checks` says which check failed', ref('Readiness')),
        },
      },
    },
    '/metrics': {
      get: {
        operationId: 'metrics',
        summary: 'Prometheus metrics',
        tags: ['Operations'],
        ...open,
        responses: { '200': { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } } },
      },
    },
  }
}

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? '0.0.0'
  } catch {
    return '0.0.0'
  }
}

/** Builds the whole document (pure apart from reading the package version). */
export function buildOpenApi(): OpenApiDocument {
  return {
    openapi: '3.1.0',
    info: {
      title: 'CDP query service',
      version: packageVersion(),
      description:
        'Analytics, processing, ingest, tenant-integration and audience-sync endpoints of the customer data platform. Every error is the common body `{ success: false, error, details }` unless an endpoint says otherwise. Calls need a bearer token (API key) except /health, /ready, /metrics, /openapi.json, /docs and the platforms\' webhooks under /webhooks/ (authenticated by their signature).',
    },
    servers: [{ url: '/' }],
    security: [{ bearerAuth: [] }],
    tags: [
      { name: 'Analytics', description: `Read-only analytics; tenant_id is required; pages hold at most 1,000 results, exports at most ${EXPORT_ROW_LIMIT.toLocaleString('en')} rows.` },
      { name: 'Processing', description: 'Recompute RFM, CLV and churn on demand or on a schedule.' },
      { name: 'Ingest', description: 'Send order and customer events.' },
      {
        name: 'Integrations',
        description:
          "Connect a tenant's commerce platform, marketplace, search-ads and social-ads accounts; the `connectors` role syncs their data. A tenant key reaches its own tenant's integrations only (403 otherwise). docs/integrations.md.",
      },
      { name: 'Audience syncs', description: "Keep a tenant's RFM segment in a custom audience of the ads platform; `tenant_id` is required in the query." },
      { name: 'Webhooks', description: 'Events from the platforms (no token needed: they are verified by signature).' },
      { name: 'Operations', description: 'Health, readiness and metrics (no token needed).' },
    ],
    paths: withOperationLimits({ ...analyticsPaths(), ...processingPaths(), ...tenantsPaths(), ...ingestPaths(), ...integrationsPaths(), ...audienceSyncPaths(), ...webhookPaths(), ...opsPaths() }),
    components: {
      schemas: {
        ErrorBody: {
          type: 'object',
          description: 'The common error body of every endpoint.',
          required: ['success', 'error', 'details'],
          properties: {
            success: { const: false },
            error: { type: 'string', description: 'Short error message' },
            details: {
              description: 'A string, an object (validation errors as `errors[]` of FieldError) or null',
              anyOf: [{ type: 'string' }, { type: 'object', properties: { errors: { type: 'array', items: ref('FieldError') } } }, { type: 'null' }],
            },
          },
        },
        FieldError: {
          type: 'object',
          required: ['path', 'code', 'message'],
          properties: {
            index: { type: 'integer', description: 'Event index (ingest only)' },
            path: { type: 'string', description: 'Dotted path of the field, e.g. items.0.unit_price' },
            code: { type: 'string', description: 'Machine-readable code (invalid_type, too_small, required, …)' },
            message: { type: 'string' },
          },
        },
        SuccessBody: { type: 'object', required: ['success'], properties: { success: { const: true }, message: { type: 'string' }, data: {} }, additionalProperties: true },
        Readiness: { type: 'object', properties: { ready: { type: 'boolean' }, checks: { type: 'object', additionalProperties: { type: 'boolean' } } } },
        OrderEventInput: ORDER_EVENT,
        CustomerEventInput: CUSTOMER_EVENT,
        ...integrationSchemas(),
      },
      responses: {
        Unauthorized: { ...errorResponse('Missing, malformed, unknown or revoked bearer token'), headers: { 'WWW-Authenticate': { schema: { type: 'string' } } } },
        Forbidden: errorResponse("The token's tenant is not the requested tenant"),
        TooManyRequests: { ...errorResponse('Rate limit exceeded; retry after `Retry-After` seconds with backoff'), headers: { 'Retry-After': { schema: { type: 'integer' } } } },
      },
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key of a tenant: `Authorization: Bearer <key>`' },
      },
    },
  }
}
