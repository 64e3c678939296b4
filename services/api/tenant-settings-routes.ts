import express, { type Router } from 'express'
import { z } from 'zod'
import type { Store } from '../../common/store/clickhouse.ts'
import type { Logger } from '../../common/logger.ts'
import { listTenants, tenantExists } from '../../common/store/tenants.ts'
import { callerTenant } from './auth.ts'
import { TenantSettingsStore, type TenantSettings } from '../../common/store/tenant-settings.ts'
import { referenceDate, ReferenceSettingSchema } from '../../common/reference-date.ts'
import { fieldErrorsFromZod } from '../../pipelines/ingest/validation.ts'
import { failure, sendError } from './errors.ts'
import { parseTenantId } from '../../pipelines/processing/validation.ts'
import { json, shared, route, type Operation, type RouteGroup } from './routes.ts'
import { describeProperties, TenantIdParams } from './request-schemas.ts'
import { Count, DateOnly, NullableTimestamp, success } from './response-schemas.ts'

export const TENANT_SETTINGS_PATH = '/api/v2/cdp/tenants/:tenantId/settings'

/** PUT body: any of the settings; absent fields keep their value, null clears a name. */
export const TenantSettingsBody = z.strictObject({
  tenant_name: z.string().trim().min(1).max(255).nullable().optional(),
  currency: z
    .string()
    .trim()
    .transform((s) => s.toUpperCase())
    .pipe(z.string().regex(/^[A-Z]{3}$/, 'expected a 3-letter ISO 4217 code, e.g. ARS'))
    .optional(),
  reference_date: ReferenceSettingSchema.optional(),
})

const Settings = z
  .strictObject({
    tenant_id: z.int().min(1),
    tenant_name: z.string().nullable().meta({ description: 'null: shown as `Tenant {id}`' }),
    currency: z.string().regex(/^[A-Z]{3}$/).nullable().meta({ description: 'null until the first order' }),
    reference_date: z.string().meta({ description: '`now`, `data_end` or a date YYYY-MM-DD' }),
    updated_at: NullableTimestamp.meta({ description: 'The last change; null for a tenant that never had one' }),
    effective_reference_date: DateOnly.meta({ description: 'The date the reference date resolves to now' }),
  })
  .meta({ id: 'TenantSettings' })
const SettingsAnswer = json(
  'Settings in `data`: tenant_id, tenant_name (null: shown as `Tenant {id}`), currency (null until the first order), reference_date, updated_at, effective_reference_date (the date it resolves to now)',
  success({ data: Settings }),
)

const getSettings: Operation = {
  method: 'get',
  path: TENANT_SETTINGS_PATH,
  operationId: 'getTenantSettings',
  summary: "A tenant's settings: name, currency and reference date",
  request: { params: TenantIdParams },
  responses: { 200: SettingsAnswer, 400: failure('Invalid tenant id'), 403: shared('Forbidden'), 404: failure('Neither data nor settings for this tenant') },
}

const putSettings: Operation = {
  method: 'put',
  path: TENANT_SETTINGS_PATH,
  operationId: 'putTenantSettings',
  summary: "Change a tenant's settings (absent fields keep their value)",
  description: "The admin token or the tenant's key. A new reference date applies to the tenant's analytics at once and to its stored features at the feature role's next tick (or a processing run).",
  request: {
    params: TenantIdParams,
    body: {
      schema: TenantSettingsBody,
      required: true,
      example: { tenant_name: 'Tienda Demo', currency: 'ARS', reference_date: 'data_end' },
      document: (body) =>
        describeProperties(body, {
          reference_date: '`now` (default: the wall clock), `data_end` (the latest order of the tenant) or a fixed YYYY-MM-DD (the end of that UTC day; later orders do not count). What "today" is for recency, churn, CLV and the analytics periods (docs/tenant-settings.md).',
          currency: "ISO 4217; set by the tenant's first order when unset. Cannot change once the tenant has orders (409 currency_locked).",
        }),
    },
  },
  responses: { 200: SettingsAnswer, 400: failure('Invalid tenant id or settings: `details.errors` by field'), 403: shared('Forbidden'), 409: failure('The currency of a tenant with orders cannot change') },
}

export const TENANTS_PATH = '/api/v2/cdp/tenants'

const TenantItem = z
  .strictObject({
    tenant_id: z.int().min(1),
    tenant_name: z.string().nullable().meta({ description: 'null: no name set (shown as `Tenant {id}`)' }),
    customers: Count.meta({ description: 'Its customers (profiles) with features, as the analytics count them' }),
  })
  .meta({ id: 'TenantListItem' })

const listTenantsOp: Operation = {
  method: 'get',
  path: TENANTS_PATH,
  operationId: 'listTenants',
  summary: 'The tenants the caller reaches (ours)',
  description: 'The admin token: every tenant with data or settings, ascending; a tenant key: its own tenant (or none before its first data). Each with its name and customers. The console\'s tenant switcher reads it.',
  responses: { 200: json('`data`: the tenants; `count`', success({ data: z.array(TenantItem), count: Count })) },
}

export const TENANT_ROUTES: RouteGroup = {
  tag: { name: 'Tenants', description: "The tenants, and a tenant's name, currency and reference date (docs/tenant-settings.md)." },
  operations: [listTenantsOp, getSettings, putSettings],
}

export interface TenantSettingsDeps {
  store: Store
  logger: Logger
  now?: () => number
  /** Called after a change: caches drop the tenant, the feature consumer rescores it as of the new reference. */
  onChange?: (tenantId: number, settings: TenantSettings, previous: TenantSettings) => void
}

/**
 * GET and PUT /api/v2/cdp/tenants/{tenantId}/settings: the tenant's name, currency and reference
 * date (docs/features.md, "Reference date"; docs/auth.md: the admin token or the tenant's key).
 */
export function tenantSettingsRouter(deps: TenantSettingsDeps): Router {
  const router = express.Router()
  const settings = new TenantSettingsStore(deps.store, deps.now)

  const view = async (s: TenantSettings) => {
    const ref = await settings.reference(s.tenant_id)
    return { ...s, effective_reference_date: referenceDate(ref) }
  }

  route(router, listTenantsOp, async (req, res, next) => {
    try {
      const data = await listTenants(deps.store, callerTenant(req))
      res.json({ success: true, data, count: data.length })
    } catch (err) {
      next(err)
    }
  })

  route(router, getSettings, async (req, res, next) => {
    try {
      const t = parseTenantId(req.params.tenantId as string | undefined)
      if (!t.ok) return sendError(res, 400, 'Invalid request', { errors: [t.error] })
      const s = await settings.get(t.value)
      if (s.updated_at === null && !(await tenantExists(deps.store, t.value))) return sendError(res, 404, 'Tenant not found', { tenant_id: t.value })
      res.json({ success: true, data: await view(s) })
    } catch (err) {
      next(err)
    }
  })

  route(router, putSettings, async (req, res, next) => {
    try {
      const t = parseTenantId(req.params.tenantId as string | undefined)
      const body = TenantSettingsBody.safeParse(req.body ?? {})
      const errors = [
        ...(t.ok ? [] : [t.error]),
        ...(body.success ? [] : fieldErrorsFromZod(body.error.issues)),
      ]
      if (errors.length || !t.ok || !body.success) return sendError(res, 400, 'Invalid settings', { errors })
      const current = await settings.get(t.value)
      const b = body.data
      // One currency per tenant: once its orders are in one, another would be summed with them.
      const inUse = b.currency ? await settings.storedCurrency(t.value) : null
      if (b.currency && inUse && b.currency !== (current.currency ?? inUse)) {
        return sendError(res, 409, 'Currency cannot change', {
          errors: [{ path: 'currency', code: 'currency_locked', message: `the tenant's orders are in ${current.currency ?? inUse}; a tenant has one currency and amounts are never converted` }],
        })
      }
      const next = await settings.put({
        tenant_id: t.value,
        tenant_name: b.tenant_name === undefined ? current.tenant_name : b.tenant_name,
        currency: b.currency ?? current.currency,
        reference_date: b.reference_date ?? current.reference_date,
      })
      deps.logger.info({ tenant_id: t.value, reference_date: next.reference_date, currency: next.currency }, 'tenant settings changed')
      deps.onChange?.(t.value, next, current)
      res.json({ success: true, data: await view(next) })
    } catch (err) {
      next(err)
    }
  })
  return router
}
