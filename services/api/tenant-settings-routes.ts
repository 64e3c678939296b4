import express, { type Router } from 'express'
import { z } from 'zod'
import type { Store } from '../../common/store/clickhouse.ts'
import type { Logger } from '../../common/logger.ts'
import { tenantExists } from '../../common/store/tenants.ts'
import { TenantSettingsStore, type TenantSettings } from '../../common/store/tenant-settings.ts'
import { referenceDate, ReferenceSettingSchema } from '../../common/reference-date.ts'
import { fieldErrorsFromZod } from '../../pipelines/ingest/validation.ts'
import { sendError } from './errors.ts'
import { parseTenantId } from '../../pipelines/processing/validation.ts'

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

  router.get(TENANT_SETTINGS_PATH, async (req, res, next) => {
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

  router.put(TENANT_SETTINGS_PATH, async (req, res, next) => {
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
