/**
 * GET /api/cdp/v2/profiles/{profileId}?tenant_id=N — one person: the source customers identity
 * resolution joined, their identifiers and why they were linked; POST …/split — an admin's split
 * (one customer's identifier stops linking; the tenant is resolved again and the profiles follow).
 * The logic is the identity lane's (IdentityService); docs/identity.md.
 */
import express, { type Router } from 'express'
import { z } from 'zod'
import { IDENTIFIER_KINDS, IdentityService, type IdentityServiceDeps } from '../../pipelines/identity/index.ts'
import { failure, parseRequest } from './errors.ts'
import { json, route, shared, type Operation, type RouteGroup } from './routes.ts'
import { Count, success, Timestamp } from './response-schemas.ts'

const PATH = '/api/cdp/v2/profiles/:profileId'
const Id = z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER)
const Params = z.strictObject({ profileId: Id.meta({ description: "The profile id: its oldest member's customer id" }) })
const Query = z.strictObject({ tenant_id: Id })
const SplitBody = z.strictObject({
  customer_id: Id.meta({ description: 'The member whose identifier stops linking' }),
  identifier: z.string().min(3).max(600).meta({ description: 'As the profile shows it, e.g. `email:ana@gmail.com`, `phone:+541141234567`, `national_id:*****123`' }),
})

const Link = z.strictObject({ identifier: z.string(), customers: z.array(z.int().min(1)) })
const ProfileSchema = z
  .strictObject({
    profile_id: z.int().min(1),
    members: z.array(z.strictObject({ customer_id: z.int().min(1), first_seen_at: Timestamp, identifiers: z.array(z.string()) })),
    links: z.array(Link).meta({ description: 'Each identifier that joins members, and which members share it' }),
    not_linking: z.array(
      z.strictObject({ identifier: z.string(), reason: z.enum(['too_many_customers', 'split_by_admin', 'kind_disabled']), customers: Count.optional() }),
    ),
  })
  .meta({ id: 'Profile' })

const getProfile: Operation = {
  method: 'get',
  path: PATH,
  operationId: 'getProfile',
  summary: 'One person: the source customers identity resolution joined, their identifiers and why they were linked',
  description: 'National ids are shown with their last three digits only. A tenant key reaches its own tenant only (403).',
  request: { params: Params, query: Query },
  responses: { 200: json('The profile in `data`', success({ data: ProfileSchema })), 400: failure('Invalid id or tenant_id (`details.errors[]`)'), 403: shared('Forbidden'), 404: failure('The tenant has no such profile (`Profile not found`)') },
}

const splitProfile: Operation = {
  method: 'post',
  path: `${PATH}/split`,
  operationId: 'splitProfile',
  summary: "An admin's split: one member's identifier stops linking, and the tenant's profiles are resolved again",
  description: 'The resolution runs at once: the answer lists the profile changes it made (also published on `cdp.profile-changes.v1`). Undo: not yet (docs/identity.md).',
  request: { params: Params, query: Query, body: { schema: SplitBody, required: true, example: { customer_id: 12, identifier: 'email:familia.gomez@gmail.com' } } },
  responses: {
    200: json(
      'Split: `data.changes` lists the profiles that changed',
      success({ data: z.strictObject({ profiles: Count, changes: z.array(z.strictObject({ profile_id: z.int().min(1), change: z.enum(['created', 'merged', 'split', 'absorbed']), members: z.array(z.int().min(1)) })) }) }),
    ),
    400: failure('Invalid request, or not a member / not one of its identifiers (`details.errors[]`)'),
    403: shared('Forbidden'),
    404: failure('The tenant has no such profile'),
  },
}

const SETTINGS_PATH = '/api/cdp/v2/identity/settings'
const IdentitySettingsSchema = z.strictObject({
  merge_kinds: z.array(z.enum(IDENTIFIER_KINDS)).max(IDENTIFIER_KINDS.length).meta({ description: 'The identifier kinds that link source customers (default all four)' }),
  max_customers_per_identifier: z.int().min(2).max(1000).meta({ description: 'An identifier carried by more source customers than this links none of them (default 4)' }),
})
const SettingsAnswer = json('The tenant\'s identity settings in `data`', success({ data: IdentitySettingsSchema.extend({ tenant_id: z.int().min(1) }) }))

const getSettings: Operation = {
  method: 'get',
  path: SETTINGS_PATH,
  operationId: 'getIdentitySettings',
  summary: "A tenant's identity settings: which identifier kinds link customers, and the guard's limit",
  request: { query: Query },
  responses: { 200: SettingsAnswer, 400: failure('Invalid tenant_id'), 403: shared('Forbidden') },
}

const putSettings: Operation = {
  method: 'put',
  path: SETTINGS_PATH,
  operationId: 'putIdentitySettings',
  summary: "Change a tenant's identity settings; its profiles are resolved again at the resolver's next round",
  request: { query: Query, body: { schema: IdentitySettingsSchema, required: true, example: { merge_kinds: ['email', 'phone', 'source_id'], max_customers_per_identifier: 4 } } },
  responses: { 200: SettingsAnswer, 400: failure('Invalid tenant_id or settings (`details.errors[]`)'), 403: shared('Forbidden') },
}

export const PROFILE_ROUTES: RouteGroup = {
  tag: { name: 'Profiles', description: 'One profile per person across sources: identity resolution (docs/identity.md).' },
  operations: [getProfile, splitProfile, getSettings, putSettings],
}

export function profilesRouter(deps: IdentityServiceDeps & { onChange?: (tenantId: number) => void }): Router {
  const router = express.Router()
  const service = new IdentityService(deps)
  route(router, getProfile, async (req, res, next) => {
    try {
      const p = parseRequest(req, res, { params: Params, query: Query })
      if (p) res.json({ success: true, data: await service.profile(p.query.tenant_id, p.params.profileId) })
    } catch (err) {
      next(err)
    }
  })
  route(router, splitProfile, async (req, res, next) => {
    try {
      const p = parseRequest(req, res, { params: Params, query: Query, body: SplitBody })
      if (!p) return
      const tenantId = p.query.tenant_id
      const r = await service.split(tenantId, p.params.profileId, p.body.customer_id, p.body.identifier)
      if (r.reassigned > 0) deps.onChange?.(tenantId)
      res.json({ success: true, data: { profiles: r.profiles, changes: r.events.map((e) => ({ profile_id: e.profile_id, change: e.change, members: e.members })) } })
    } catch (err) {
      next(err)
    }
  })
  const view = async (tenantId: number) => {
    const s = await service.settings(tenantId)
    return { tenant_id: tenantId, merge_kinds: [...s.mergeKinds], max_customers_per_identifier: s.maxCustomersPerIdentifier }
  }
  route(router, getSettings, async (req, res, next) => {
    try {
      const p = parseRequest(req, res, { query: Query })
      if (p) res.json({ success: true, data: await view(p.query.tenant_id) })
    } catch (err) {
      next(err)
    }
  })
  route(router, putSettings, async (req, res, next) => {
    try {
      const p = parseRequest(req, res, { query: Query, body: IdentitySettingsSchema })
      if (!p) return
      await service.putSettings(p.query.tenant_id, { mergeKinds: [...new Set(p.body.merge_kinds)], maxCustomersPerIdentifier: p.body.max_customers_per_identifier })
      res.json({ success: true, data: await view(p.query.tenant_id) })
    } catch (err) {
      next(err)
    }
  })
  return router
}
