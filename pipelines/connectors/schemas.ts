/**
 * Request bodies of the integration endpoints (zod 4), and the stored configuration with its
 * defaults. Create is a discriminated union on `integration_type` with the spec's required
 * credential fields per type; unknown fields are refused, so a credential sent under the wrong
 * name is never stored in clear (e.g. inside `configuration`).
 */
import { z } from 'zod'
import { FREQUENCIES } from '../../common/jobs/schedule.ts'
import { INTEGRATION_TYPES, SYNCABLE_ENTITIES, type Entity, type IntegrationType } from './sources/types.ts'

export const SYNC_INTERVALS = [...FREQUENCIES, 'manual'] as const
export type SyncInterval = (typeof SYNC_INTERVALS)[number]

export const DEFAULT_API_VERSION: Record<IntegrationType, string> = { commerce_platform: 'v1', marketplace: 'v1', search_ads: 'v17', social_ads: 'v18.0' }

/** Keys only the marketplace takes (spec: "marketplace: site_id, sync_listings, sync_questions"). */
const MARKETPLACE_KEYS = ['site_id', 'sync_listings', 'sync_questions'] as const

export const ConfigurationInput = z.strictObject({
  api_version: z.string().regex(/^[A-Za-z0-9._-]{1,20}$/, 'letters, digits, dot, dash or underscore (e.g. v1)'),
  sync_products: z.boolean(),
  sync_orders: z.boolean(),
  sync_customers: z.boolean(),
  sync_interval: z.enum(SYNC_INTERVALS),
  batch_size: z.number().int().min(1).max(1000),
  retry_attempts: z.number().int().min(0).max(10),
  webhook_notifications: z.boolean(),
  webhook_url: z.url({ protocol: /^https?$/ }).max(2048).nullable(),
  /** Signs the sync notifications (HMAC-SHA256); write-only: answers show it masked. */
  webhook_secret: z.string().min(16).max(256).nullable(),
  /** Who gets an e-mail when a sync completes or fails (at most 10 addresses; the deployment's SMTP server sends it). */
  notification_emails: z.array(z.email().max(254)).max(10),
  /** Queue a full sync right after the integration is created (default true). */
  initial_sync: z.boolean(),
  site_id: z.string().regex(/^[A-Z]{3}$/, 'a site id such as MLA').nullable(),
  sync_listings: z.boolean(),
  sync_questions: z.boolean(),
}).partial()
export type ConfigurationPatch = z.output<typeof ConfigurationInput>

/** The stored configuration (never the webhook secret: that is sealed in its own column). */
export interface IntegrationConfiguration {
  api_version: string
  sync_products: boolean
  sync_orders: boolean
  sync_customers: boolean
  sync_interval: SyncInterval
  batch_size: number
  retry_attempts: number
  webhook_notifications: boolean
  webhook_url: string | null
  /** Absent in integrations stored before e-mail notifications: none. */
  notification_emails?: string[]
  initial_sync: boolean
  site_id?: string | null
  sync_listings?: boolean
  sync_questions?: boolean
}

export function defaultConfiguration(type: IntegrationType): IntegrationConfiguration {
  const syncs = SYNCABLE_ENTITIES[type]
  return {
    api_version: DEFAULT_API_VERSION[type],
    sync_products: syncs.includes('products'),
    sync_orders: syncs.includes('orders'),
    sync_customers: syncs.includes('customers'),
    sync_interval: 'daily',
    batch_size: 100,
    retry_attempts: 3,
    webhook_notifications: true,
    webhook_url: null,
    notification_emails: [],
    initial_sync: true,
    ...(type === 'marketplace' ? { site_id: null, sync_listings: false, sync_questions: false } : {}),
  }
}

/** Applies a patch (create: onto the defaults; update: onto the stored configuration). */
export function applyConfiguration(base: IntegrationConfiguration, patch: ConfigurationPatch | undefined): IntegrationConfiguration {
  const { webhook_secret: _s, ...rest } = patch ?? {}
  const out = { ...base }
  for (const [k, v] of Object.entries(rest)) if (v !== undefined) (out as Record<string, unknown>)[k] = v
  return out
}

/** Entities the configuration turns on, in sync order (products first: their names fill order lines). */
export function configuredEntities(type: IntegrationType, c: IntegrationConfiguration): Entity[] {
  const on: Record<Entity, boolean> = { products: c.sync_products, customers: c.sync_customers, orders: c.sync_orders }
  return SYNCABLE_ENTITIES[type].filter((e) => on[e])
}

/**
 * A credential as the platforms issue them: printable ASCII. It travels in HTTP headers and form
 * fields; a control or non-ASCII character there makes the call fail before any platform sees it
 * (undici refuses the header, or the server drops the connection), which would read as the
 * platform being down (502) instead of a bad value (400).
 */
export const credential = (max: number) =>
  z.string().trim().min(1).max(max).regex(/^[\x20-\x7e]+$/, 'printable ASCII characters only (credentials travel in HTTP headers)')
const text = credential
const tenantId = z.union([z.number(), z.string().regex(/^\d{1,16}$/).transform(Number)]).pipe(z.number().int().positive().max(Number.MAX_SAFE_INTEGER))
const base = { tenant_id: tenantId, configuration: ConfigurationInput.optional() }

export const CreateIntegrationBody = z.discriminatedUnion('integration_type', [
  z.strictObject({
    ...base,
    integration_type: z.literal('commerce_platform'),
    account_name: z.string().trim().regex(/^[a-z0-9][a-z0-9-]{0,62}$/i, 'letters, digits and dashes (the account name at the platform)'),
    environment: z.string().trim().regex(/^[a-z0-9_.-]{1,64}$/i, 'e.g. commerce_stable'),
    app_key: text(256),
    app_token: text(4096),
  }),
  z.strictObject({ ...base, integration_type: z.literal('marketplace'), client_id: text(128), client_secret: text(1024), redirect_uri: z.url({ protocol: /^https?$/ }).max(2048) }),
  z.strictObject({
    ...base,
    integration_type: z.literal('search_ads'),
    customer_id: z.string().trim().regex(/^\d{3}-?\d{3}-?\d{4}$/, 'ten digits, e.g. 123-456-7890'),
    developer_token: text(512),
    refresh_token: text(4096),
  }),
  z.strictObject({ ...base, integration_type: z.literal('social_ads'), app_id: z.string().trim().regex(/^\d{1,32}$/, 'the numeric app id'), app_secret: text(512), access_token: text(4096) }),
])
export type CreateIntegrationInput = z.output<typeof CreateIntegrationBody>

/** PUT: the spec's is_active, app_key, app_token, configuration; other types' credential fields likewise. */
export const UpdateIntegrationBody = z.strictObject({
  is_active: z.boolean().optional(),
  configuration: ConfigurationInput.optional(),
  app_key: text(256).optional(),
  app_token: text(4096).optional(),
  client_secret: text(1024).optional(),
  redirect_uri: z.url({ protocol: /^https?$/ }).max(2048).optional(),
  developer_token: text(512).optional(),
  refresh_token: text(4096).optional(),
  app_secret: text(512).optional(),
  access_token: text(4096).optional(),
})
export type UpdateIntegrationInput = z.output<typeof UpdateIntegrationBody>

/** Credential fields an update may change, per type (identifiers such as client_id stay: create another integration). */
export const UPDATABLE_CREDENTIALS: Record<IntegrationType, readonly (keyof UpdateIntegrationInput)[]> = {
  commerce_platform: ['app_key', 'app_token'],
  marketplace: ['client_secret', 'redirect_uri'],
  search_ads: ['developer_token', 'refresh_token'],
  social_ads: ['app_secret', 'access_token'],
}

/** A calendar date: Date.parse rolls 2024-02-30 over to March 1st, so the date must survive a round trip. */
const isCalendarDate = (s: string) => {
  const t = Date.parse(`${s}T00:00:00Z`)
  return Number.isFinite(t) && new Date(t).toISOString().slice(0, 10) === s
}
const date = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date YYYY-MM-DD').refine(isCalendarDate, 'not a calendar date')

export const SyncBody = z
  .strictObject({
    sync_type: z.enum(['full', 'incremental']).default('full'),
    entities: z.array(z.enum(['products', 'orders', 'customers'])).min(1).optional(),
    date_from: date.optional(),
    date_to: date.optional(),
  })
  .refine((b) => !b.date_from || !b.date_to || b.date_from <= b.date_to, { path: ['date_to'], message: 'must not be before date_from' })
export type SyncInput = z.output<typeof SyncBody>

export const ValidateCommerceBody = z.strictObject({
  account_name: CreateIntegrationBody.options[0].shape.account_name,
  environment: CreateIntegrationBody.options[0].shape.environment,
  app_key: text(256),
  app_token: text(4096),
})

export interface FieldError {
  path: string
  code: string
  message: string
}

/** zod issues → the API's field errors; a missing field is `required`. */
export function fieldErrors(issues: readonly z.core.$ZodIssue[], input: unknown): FieldError[] {
  return issues.map((i) => {
    const path = i.path.map(String).join('.')
    const missing = i.code === 'invalid_type' && valueAt(input, i.path) === undefined
    if (i.code === 'unrecognized_keys') return { path: i.keys.map((k) => (path ? `${path}.${k}` : k)).join(', '), code: 'unknown_field', message: `unknown field(s): ${i.keys.join(', ')}` }
    return { path, code: missing ? 'required' : i.code, message: missing ? 'is required' : i.message }
  })
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined
    v = (v as Record<PropertyKey, unknown>)[k]
  }
  return v
}

/** Create's checks beyond the shape: the type named and known, marketplace-only keys on marketplaces. */
export function preCheckCreate(body: unknown): FieldError[] {
  const b = (body ?? {}) as Record<string, unknown>
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [{ path: '', code: 'invalid_type', message: 'the body must be a JSON object' }]
  if (b.integration_type === undefined) return [{ path: 'integration_type', code: 'required', message: `is required: one of ${INTEGRATION_TYPES.join(', ')}` }]
  if (!INTEGRATION_TYPES.includes(b.integration_type as IntegrationType)) return [{ path: 'integration_type', code: 'invalid_value', message: `must be one of ${INTEGRATION_TYPES.join(', ')}` }]
  return marketplaceKeyErrors(b.integration_type as IntegrationType, b.configuration)
}

export function marketplaceKeyErrors(type: IntegrationType, configuration: unknown): FieldError[] {
  if (type === 'marketplace' || configuration === null || typeof configuration !== 'object') return []
  return MARKETPLACE_KEYS.filter((k) => k in configuration).map((k) => ({ path: `configuration.${k}`, code: 'not_applicable', message: `applies to marketplace integrations only` }))
}

/** The credentials of a create body, by the type's fields (the body's other fields are not credentials). */
export function credentialsOf(input: CreateIntegrationInput): Record<string, string> {
  const { tenant_id: _t, integration_type: _i, configuration: _c, ...creds } = input
  return creds as Record<string, string>
}
