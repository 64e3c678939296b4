import { z } from 'zod'
import { SEGMENTS } from '../../pipelines/features/segments.ts'
import { failure } from './errors.ts'
import { json, shared, type Operation, type Responses, type RouteGroup } from './routes.ts'
import { Count, success, Timestamp, withMessage } from './response-schemas.ts'
import { AudienceSyncSchema } from './audience-sync-views.ts'

/** The audience-sync operations (ours; the spec has none); handlers in audience-sync-routes.ts. */
const BASE = '/api/v2/cdp/audience-syncs'

export const tenantQuery = z.object({ tenant_id: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER) })
const token = z.string().trim().min(8).max(4096).regex(/^[\x20-\x7e]+$/, 'printable ASCII characters only (the token travels in HTTP headers)')
export const CreateBody = z
  .object({
    tenant_id: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    name: z.string().trim().min(1).max(200).optional(),
    segment: z.enum(SEGMENTS),
    ad_account_id: z.string().regex(/^act_\d{1,30}$/, 'must be act_<number>'),
    access_token: token,
  })
  .strict()
export const UpdateBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    segment: z.enum(SEGMENTS).optional(),
    access_token: token.optional(),
    status: z.enum(['active', 'paused']).optional(),
  })
  .strict()

const IdParams = z.object({ id: z.string().meta({ description: 'Audience-sync identifier' }) })
/** On create the query's tenant_id is optional: when given it must equal the body's. */
const optionalTenantQuery = z.object({ tenant_id: tenantQuery.shape.tenant_id.optional().meta({ description: "Optional; when given it must equal the body's tenant_id" }) })

const errors: Responses = { 400: failure('tenant_id missing or not a positive integer (`details.errors[]`)'), 403: shared('Forbidden') }
const notFound = failure('No such audience sync for the tenant')
const refused = 'or the token fails `/debug_token` (`Invalid credentials`, `details.validation_error`)'
const unavailable = failure('The ads platform could not be asked about the token (`Ads platform unavailable`); nothing changed')
const OneSync = (description: string) => json(description, withMessage(AudienceSyncSchema))

const list: Operation = {
  method: 'get',
  path: BASE,
  operationId: 'listAudienceSyncs',
  summary: 'List the audience syncs of a tenant',
  description:
    'Each sync: id, tenant_id, name, segment, ad_account_id, access_token (always `********`), status, paused_reason, blocked_until, audience {id, approximate_count, delivery_status, status_source, status_updated_at}, last_sync, batch counters, rejected_batches, alerts, created_at, updated_at.',
  request: { query: tenantQuery },
  responses: { 200: json('`data`: the syncs; `count`', success({ data: z.array(AudienceSyncSchema), count: Count })), ...errors },
}

const create: Operation = {
  method: 'post',
  path: BASE,
  operationId: 'createAudienceSync',
  summary: "Keep a tenant's RFM segment in a custom audience of an ad account",
  description: 'The access token is checked with `/debug_token` first (valid, unexpired, with the required permissions), then stored encrypted; it is never shown again.',
  request: { query: optionalTenantQuery, body: { schema: CreateBody, required: true, example: { tenant_id: 1, segment: 'Champions', ad_account_id: 'act_1000000001', access_token: 'EAAB-your-ads-platform-token' } } },
  responses: {
    201: OneSync('Created: the sync in `data`'),
    ...errors,
    400: failure(`Invalid body (\`details.errors[]\`), query and body name different tenants (\`tenant_mismatch\`), ${refused}`),
    502: unavailable,
  },
}

const get: Operation = {
  method: 'get',
  path: `${BASE}/:id`,
  operationId: 'getAudienceSync',
  summary: 'One audience sync',
  description: 'The shape of a list item, with the audience status last polled or received by webhook.',
  request: { params: IdParams, query: tenantQuery },
  responses: { 200: json('The sync in `data`', success({ data: AudienceSyncSchema })), ...errors, 404: notFound },
}

const update: Operation = {
  method: 'put',
  path: `${BASE}/:id`,
  operationId: 'updateAudienceSync',
  summary: 'Rename, change the segment, replace the token, pause or resume',
  description: 'A new token (checked with `/debug_token` first) or `status: active` resumes a paused sync and clears a rate-limit wait; `status: paused` pauses it.',
  request: { params: IdParams, query: tenantQuery, body: { schema: UpdateBody, required: true } },
  responses: { 200: OneSync('Updated: the sync in `data`'), ...errors, 400: failure(`Invalid query or body (\`details.errors[]\`), ${refused}`), 404: notFound, 502: unavailable },
}

const remove: Operation = {
  method: 'delete',
  path: `${BASE}/:id`,
  operationId: 'deleteAudienceSync',
  summary: 'Stop an audience sync',
  description: 'The custom audience stays on the platform.',
  request: { params: IdParams, query: tenantQuery },
  responses: { 200: json('Deleted: `data` has id and deleted_at', withMessage(z.strictObject({ id: z.string(), deleted_at: Timestamp }))), ...errors, 404: notFound },
}

export const AUDIENCE_SYNC_OPERATIONS = { list, create, get, update, remove }

export const AUDIENCE_SYNC_ROUTES: RouteGroup = {
  tag: { name: 'Audience syncs', description: "Keep a tenant's RFM segment in a custom audience of the ads platform; `tenant_id` is required in the query." },
  operations: Object.values(AUDIENCE_SYNC_OPERATIONS),
}
