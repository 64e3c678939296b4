import { readFileSync } from 'node:fs'
import { z } from 'zod'
import { ANALYTICS_ENDPOINTS } from './analytics/endpoints.ts'
import { EXPORT_ROW_LIMIT } from './analytics/exports.ts'
import { ProcessBodySchema, ScheduleBodySchema } from './processing/validation.ts'
import { IngestBatchSchema, MAX_BATCH_EVENTS } from '../../pipelines/ingest/validation.ts'
import { ORDER_EVENT_TYPES } from '../../common/events.ts'

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
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema
  return rest
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

function processingPaths(): Record<string, Record<string, OpenApiOperation>> {
  const base = '/api/v2/cdp/process'
  const schedule = jsonSchema(ScheduleBodySchema)
  const scheduleAt = props(schedule).schedule_at
  if (scheduleAt) scheduleAt.description = 'ISO 8601 date or date-time (without a zone it is UTC), before the year 2500; default: now'
  const frequency = props(schedule).frequency
  if (frequency) frequency.description = 'Required when recurring is true'
  return {
    [`${base}/{tenantId}`]: {
      post: {
        operationId: 'processTenant',
        summary: 'Recompute RFM, CLV and churn for a tenant now',
        description: 'Runs the requested analyses (deduplicated, computed in the order rfm, clv, churn) and answers when they are done. Results of the last hour come from the cache unless `force` is true. One run per tenant at a time.',
        tags: ['Processing'],
        parameters: [tenantIdParam],
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

function opsPaths(): Record<string, Record<string, OpenApiOperation>> {
  const open = { security: [] as Record<string, string[]>[] }
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
        'Analytics, processing and ingest endpoints of the customer data platform. Every error is the common body `{ success: false, error, details }`. Calls need a bearer token (API key) except /health, /ready, /metrics, /openapi.json and /docs.',
    },
    servers: [{ url: '/' }],
    security: [{ bearerAuth: [] }],
    tags: [
      { name: 'Analytics', description: `Read-only analytics; tenant_id is required; pages hold at most 1,000 results, exports at most ${EXPORT_ROW_LIMIT.toLocaleString('en')} rows.` },
      { name: 'Processing', description: 'Recompute RFM, CLV and churn on demand or on a schedule.' },
      { name: 'Ingest', description: 'Send order and customer events.' },
      { name: 'Operations', description: 'Health, readiness and metrics (no token needed).' },
    ],
    paths: { ...analyticsPaths(), ...processingPaths(), ...ingestPaths(), ...opsPaths() },
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
