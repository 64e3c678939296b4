import express, { type Router } from 'express'
import { z } from 'zod'
import type { Logger } from '../../common/logger.ts'
import type { ApiKeyStore } from '../../common/store/api-keys.ts'
import { fieldErrorsFromZod } from '../../pipelines/ingest/validation.ts'
import { failure, sendError } from './errors.ts'
import { json, route, shared, type Operation, type RouteGroup } from './routes.ts'
import { Count, NullableTimestamp, success, Timestamp, withMessage } from './response-schemas.ts'

/**
 * Tenant API keys while the service runs (ours; the spec has none): create, list and revoke,
 * with the admin token only (a tenant key gets 403, as on every route that names no tenant of
 * its own). The same store as `cdp apikey` (common/store/api-keys.ts): only hashes are kept, the
 * plain key is in the creation's answer once. docs/auth.md, "Managing keys over HTTP".
 */
const BASE = '/api/v2/admin/api-keys'

const TenantId = z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER)
export const CreateKeyBody = z.strictObject({
  tenant_id: TenantId.meta({ description: 'The tenant the key reaches' }),
  name: z.string().trim().max(200).optional().meta({ description: 'A label for people (who or what uses the key)' }),
})
const ListQuery = z.strictObject({ tenant_id: TenantId.optional().meta({ description: "Only this tenant's keys" }) })
const KeyParams = z.object({ keyId: z.string().meta({ description: 'The key id (`key_` and 16 hex digits), from the creation or the list' }) })
const KEY_ID = /^key_[0-9a-f]{16}$/

const KeyRecord = z
  .strictObject({
    key_id: z.string(),
    tenant_id: z.int().min(1),
    name: z.string(),
    key_prefix: z.string().meta({ description: 'The first characters of the key, to recognise it' }),
    created_at: Timestamp,
    revoked_at: NullableTimestamp,
  })
  .meta({ id: 'ApiKey' })
const CreatedKey = KeyRecord.extend({ key: z.string().meta({ description: 'The key itself: shown in this answer only, never again' }) }).meta({ id: 'CreatedApiKey' })

const errors = { 403: shared('Forbidden') }

const create: Operation = {
  method: 'post',
  path: BASE,
  operationId: 'createApiKey',
  summary: 'Create an API key for a tenant (admin token)',
  description: 'The answer holds the key itself once: only its SHA-256 is stored. Store it at once.',
  request: { body: { schema: CreateKeyBody, required: true, example: { tenant_id: 1, name: 'reporting job' } } },
  responses: { 201: json('Created: the key in `data.key`', withMessage(CreatedKey)), 400: failure('Invalid body (`details.errors[]`)'), ...errors },
}

const list: Operation = {
  method: 'get',
  path: BASE,
  operationId: 'listApiKeys',
  summary: 'List API keys, newest first (admin token)',
  description: 'Ids, names, prefixes and dates, revoked keys included; never a key or its hash.',
  request: { query: ListQuery },
  responses: { 200: json('`data`: the keys; `count`', success({ data: z.array(KeyRecord), count: Count })), 400: failure('Invalid query (`details.errors[]`)'), ...errors },
}

const revoke: Operation = {
  method: 'delete',
  path: `${BASE}/:keyId`,
  operationId: 'revokeApiKey',
  summary: 'Revoke an API key (admin token)',
  description: 'At once in this process; other API replicas stop accepting it within a minute (their key cache). Revoking a revoked key answers the same record.',
  request: { params: KeyParams },
  responses: { 200: json('Revoked: the record in `data`', withMessage(KeyRecord)), 404: failure('No such key'), ...errors },
}

export const API_KEY_ROUTES: RouteGroup = {
  tag: { name: 'API keys', description: 'Tenant API keys, managed with the admin token while the service runs (ours; also `cdp apikey`).' },
  operations: [create, list, revoke],
}

export interface ApiKeyRoutesDeps {
  keys: ApiKeyStore
  logger: Logger
  /** After a revocation: this process forgets its cached key lookups. */
  onRevoke?: () => void
}

export function apiKeyRouter(deps: ApiKeyRoutesDeps): Router {
  const router = express.Router()

  route(router, create, async (req, res, next) => {
    try {
      const b = CreateKeyBody.safeParse(req.body ?? {})
      if (!b.success) return sendError(res, 400, 'Invalid request', { errors: fieldErrorsFromZod(b.error.issues) })
      const created = await deps.keys.create(b.data.tenant_id, b.data.name ?? '')
      // Never the key itself in a log line.
      deps.logger.info({ key_id: created.key_id, tenant_id: created.tenant_id }, 'api key created')
      res.status(201).json({ success: true, message: 'API key created: store it now, it is not shown again', data: created })
    } catch (err) {
      next(err)
    }
  })

  route(router, list, async (req, res, next) => {
    try {
      const q = ListQuery.safeParse(req.query)
      if (!q.success) return sendError(res, 400, 'Invalid query parameters', { errors: fieldErrorsFromZod(q.error.issues) })
      const data = await deps.keys.list(q.data.tenant_id)
      res.json({ success: true, data, count: data.length })
    } catch (err) {
      next(err)
    }
  })

  route(router, revoke, async (req, res, next) => {
    try {
      const id = String(req.params.keyId)
      const record = KEY_ID.test(id) ? await deps.keys.revoke(id) : null
      if (!record) return sendError(res, 404, 'API key not found', { key_id: id.slice(0, 64) })
      deps.onRevoke?.()
      deps.logger.info({ key_id: record.key_id, tenant_id: record.tenant_id }, 'api key revoked')
      res.json({ success: true, message: 'API key revoked', data: record })
    } catch (err) {
      next(err)
    }
  })

  return router
}
