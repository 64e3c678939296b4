import { createHash, timingSafeEqual } from 'node:crypto'
import type { Request, RequestHandler, Response } from 'express'
import { sendError } from './errors.ts'
import { hashKey, type KeyVerifier } from '../../common/store/api-keys.ts'
import type { RateLimitOptions } from './rate-limit.ts'
import { lruCache } from '../../common/lru.ts'
import { ALL_TENANTS, tenantOnly, type TenantScope } from '../../common/tenant-scope.ts'
import { createSessionSeal, refuseCsrf, SAFE_METHODS, SESSION_ENDED, SESSION_INVALID, type OpenedSession, type SessionSeal } from './session.ts'

/**
 * Bearer authentication and tenant isolation (docs/auth.md).
 *
 * - `Authorization: Bearer <CDP_ADMIN_TOKEN>` reaches every tenant.
 * - `Authorization: Bearer <tenant key>` reaches its own tenant only: the tenant a request names
 *   (per route family, see `requestedTenants`) must be the key's, else 403.
 * - Missing, malformed, unknown or revoked → 401 with `WWW-Authenticate: Bearer`.
 * - Without the header, the console's session cookie stands for the key it was opened with
 *   (session.ts); a write made with it needs its `X-CSRF-Token`, else 403.
 * Verified keys are cached for `cacheTtlMs` (60 s): a revocation takes effect within that time.
 */
export interface AuthDeps {
  /** The admin token; compared in constant time. Required: start.ts refuses to run without one. */
  adminToken: string
  keys: KeyVerifier
  /** How long a key lookup (found or not) is trusted; default 60 s. */
  cacheTtlMs?: number
  now?: () => number
  /** Rate limits; default: the spec's numbers for development. */
  rateLimits?: Partial<RateLimitOptions>
  /** How long a console session lasts (session.ts); default 8 hours. */
  sessionTtlMs?: number
  /** The cookie's Secure attribute: always (true), never (false), or as the request came (default). */
  sessionSecureCookie?: boolean
  /** Where signed-out sessions are recorded, so every replica refuses them; without it, sign-out only clears the browser's cookie. */
  sessionRevocations?: SessionRevocationStore
}

/** Signed-out sessions (common/store/session-revocations.ts). */
export interface SessionRevocationStore {
  revoke(sessionId: string, expiresAt: number, now?: number): Promise<void>
  isRevoked(sessionId: string): Promise<boolean>
}

export interface Principal {
  kind: 'admin' | 'tenant'
  /** The key's tenant; undefined for the admin token. */
  tenantId?: number
  keyId?: string
}

/** Paths that never need a token (liveness, readiness, metrics, the API description). */
export const PUBLIC_PATHS = new Set(['/health', '/ready', '/metrics', '/openapi.json', '/docs'])
/** Where a browser exchanges a key for a session cookie (session-routes.ts): it checks the key itself. */
export const SESSION_PATH = '/api/v2/cdp/session'
/**
 * Public: health, metrics, docs, the platforms' webhooks (they authenticate by signature), the
 * console's page and assets (the data they show comes from the API, with a session), and the
 * session exchange.
 */
export const isPublicPath = (path: string) => {
  const p = path.toLowerCase()
  return PUBLIC_PATHS.has(p) || p.startsWith('/docs/') || p.startsWith('/webhooks/') || p === '/console' || p.startsWith('/console/') || p === SESSION_PATH
}

const BEARER = /^Bearer[ ]+([A-Za-z0-9._~+/=-]{1,512})[ ]*$/i

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest()

/** Constant-time equality of two secrets of any length (compares their SHA-256 digests). */
export function secretEquals(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b))
}

function unauthorized(res: Response, details: string): void {
  res.setHeader('WWW-Authenticate', 'Bearer realm="cdp"')
  sendError(res, 401, 'Unauthorized', details)
}

/** A tenant id as a request spells it: a positive integer (number or digits), else null. */
export function tenantValue(v: unknown): number | null {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v > 0 ? v : null
  if (typeof v === 'string' && /^\s*\+?\d{1,16}\s*$/.test(v)) {
    const n = Number(v.trim())
    return Number.isSafeInteger(n) && n > 0 ? n : null
  }
  return null
}

const isBlank = (v: unknown) => v === undefined || v === null || (typeof v === 'string' && v.trim() === '')

/**
 * The tenants a request asks for, per route family; `null` when the route family is unknown
 * (a tenant key is then refused: new route families must be added here). Entries are the raw
 * values; `undefined` entries mean "not given" (the handler's own validation answers 400).
 *
 * - analytics and the customer list (/api/v2/cdp/analytics/*, /api/cdp/v2/*): `?tenant_id=`
 * - processing (/api/v2/cdp/process/{tenantId}…, …/status/{tenantId}): the path segment
 * - tenant settings (/api/v2/cdp/tenants/{tenantId}/settings): the path segment; the tenant
 *   listing (/api/v2/cdp/tenants) names none (it lists the caller's own)
 * - ingest (/api/v2/cdp/ingest/*): every event's `tenant_id` in the body
 * - audience syncs (/api/v2/cdp/audience-syncs…): `?tenant_id=` and, on create, the body's
 * - `'handler'` for HANDLER_CHECKED_PREFIXES (tenant integrations)
 */
export function requestedTenants(req: Request): unknown[] | 'handler' | null {
  // Express routes match case-insensitively; so does this.
  const path = req.path.toLowerCase()
  if (HANDLER_CHECKED_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`))) return 'handler'
  if (path === '/api/v2/cdp/audience-syncs' || path.startsWith('/api/v2/cdp/audience-syncs/')) {
    // tenant_id in the query, and in the body of a create.
    const q = (req.query as Record<string, unknown>).tenant_id
    const b = req.method === 'POST' ? (req.body as { tenant_id?: unknown } | undefined)?.tenant_id : undefined
    return [...(Array.isArray(q) ? q : [q]), ...(b === undefined ? [] : [b])]
  }
  if (path.startsWith('/api/v2/cdp/analytics/') || path.startsWith('/api/cdp/v2/')) {
    const q = (req.query as Record<string, unknown>).tenant_id
    return Array.isArray(q) ? (q.length ? q : [undefined]) : [q]
  }
  if (path.startsWith('/api/v2/cdp/process/')) {
    const segs = path.slice('/api/v2/cdp/process/'.length).split('/')
    const seg = segs[0] === 'status' ? segs[1] : segs[0]
    return [seg === undefined || seg === '' ? undefined : safeDecode(seg)]
  }
  if (path === '/api/v2/cdp/tenants') return [] // the listing answers the caller's own tenants
  if (path.startsWith('/api/v2/cdp/tenants/')) {
    // /api/v2/cdp/tenants/{tenantId}/settings
    const seg = path.slice('/api/v2/cdp/tenants/'.length).split('/')[0]
    return [seg === undefined || seg === '' ? undefined : safeDecode(seg)]
  }
  if (path.startsWith('/api/v2/cdp/ingest/')) {
    const events = (req.body as { events?: unknown } | undefined)?.events
    if (!Array.isArray(events)) return [undefined]
    return events.map((e) => (e !== null && typeof e === 'object' ? (e as Record<string, unknown>).tenant_id : undefined))
  }
  return null
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/** Checks a tenant key against what the request asks for: null when allowed, else why not. */
export function tenantDenial(req: Request, tenantId: number): string | null {
  const asked = requestedTenants(req)
  if (asked === 'handler') return null // the route's handler checks the tenant of the resource (tenantAccessDenied)
  if (asked === null) return 'this key is limited to its tenant and cannot use this endpoint'
  for (const v of asked) {
    if (isBlank(v)) continue // not given: the endpoint's validation answers 400
    if (tenantValue(v) !== tenantId) return `this key belongs to tenant ${tenantId} and cannot access another tenant`
  }
  return null
}

/**
 * Route families whose tenant is known only once the handler has read the resource (an
 * integration by its id): authorize lets tenant keys through and the handler must call
 * tenantAccessDenied with the resource's tenant.
 */
export const HANDLER_CHECKED_PREFIXES = ['/api/v2/tenant-integrations']

/**
 * For handlers of HANDLER_CHECKED_PREFIXES: sends 403 and returns true when the caller's key
 * belongs to another tenant than `tenantId` (the admin token, or no auth configured, passes).
 */
export function tenantAccessDenied(req: Request, res: Response, tenantId: number): boolean {
  const p = req.auth
  if (!p || p.kind === 'admin' || p.tenantId === tenantId) return false
  sendError(res, 403, 'Forbidden', `this key belongs to tenant ${p.tenantId} and cannot access another tenant`)
  return true
}

/** The tenant a tenant key is limited to, or null for the admin token (or no auth): for listings across tenants. */
export const callerTenant = (req: Request): number | null => (req.auth?.kind === 'tenant' ? req.auth.tenantId! : null)

/** The caller's tenant scope for the lanes' services: its tenant for a tenant key, every tenant for the admin token (or no auth). */
export const callerScope = (req: Request): TenantScope => {
  const t = callerTenant(req)
  return t === null ? ALL_TENANTS : tenantOnly(t)
}

export interface AuthMiddleware {
  /** Who is calling: 401 unless a valid token; sets req.auth. Runs before the body is parsed. */
  authenticate: RequestHandler
  /** Tenant isolation: 403 when a tenant key asks for another tenant. Runs after body parsing. */
  authorize: RequestHandler
  /** Forgets every cached key lookup (tests; an in-process revocation). */
  clearCache(): void
  /** Who a token is (the admin token, a tenant key), or null: what a bearer request would be. */
  resolve(token: string): Promise<Principal | null>
  /** Who a session is, or null when its key is unknown or revoked, or it was signed out. */
  resolveSession(session: OpenedSession): Promise<Principal | null>
  /** The console's session cookies, sealed under the admin token. */
  sessions: SessionSeal
  /** Records a sign-out: this process refuses the session at once, the others within their cache's minute. */
  revokeSession(session: OpenedSession): Promise<void>
}

export function createAuth(deps: AuthDeps): AuthMiddleware {
  if (!deps.adminToken) throw new Error('an admin token is required')
  const now = deps.now ?? Date.now
  const sessions = createSessionSeal(deps.adminToken, { ttlMs: deps.sessionTtlMs, now, secureCookie: deps.sessionSecureCookie })
  // Key lookups by the key's hash (the plain key is not kept), unknown keys too, so a flood of
  // bad keys does not reach the store; least recently used first out; a revoked key stops
  // working within the TTL.
  const cache = lruCache<string, { principal: Principal | null }>({ max: 10_000, ttlMs: deps.cacheTtlMs ?? 60_000, now })

  // Signed-out session ids, looked up at most once a minute per session (like keys).
  const revokedCache = lruCache<string, boolean>({ max: 10_000, ttlMs: deps.cacheTtlMs ?? 60_000, now })
  const sessionRevoked = async (id: string): Promise<boolean> => {
    if (!deps.sessionRevocations) return false
    const hit = revokedCache.get(id)
    if (hit !== undefined) return hit
    const revoked = await deps.sessionRevocations.isRevoked(id)
    revokedCache.set(id, revoked)
    return revoked
  }
  const revokeSession = async (s: OpenedSession): Promise<void> => {
    revokedCache.set(s.id, true)
    await deps.sessionRevocations?.revoke(s.id, s.expiresAt, now())
  }

  const resolve = async (token: string): Promise<Principal | null> => {
    if (secretEquals(token, deps.adminToken)) return { kind: 'admin' }
    const h = hashKey(token)
    const hit = cache.get(h)
    if (hit !== undefined) return hit.principal
    const found = await deps.keys.verify(token)
    const principal: Principal | null = found ? { kind: 'tenant', tenantId: found.tenantId, keyId: found.keyId } : null
    cache.set(h, { principal })
    return principal
  }
  // A session is its key, unless it was signed out: the same answer for the API and the session routes.
  const resolveSession = async (s: OpenedSession) => ((await sessionRevoked(s.id)) ? null : resolve(s.token))

  const authenticate: RequestHandler = async (req, res, next) => {
    if (isPublicPath(req.path)) return next()
    try {
      const header = req.headers.authorization
      if (!header) {
        // The console's session cookie stands for the key it was opened with (session.ts).
        const session = sessions.read(req)
        if (session === null) return unauthorized(res, 'send Authorization: Bearer <api key>')
        if (session === 'invalid') return unauthorized(res, SESSION_INVALID)
        const principal = await resolveSession(session)
        if (!principal) return unauthorized(res, SESSION_ENDED)
        if (!SAFE_METHODS.has(req.method) && !sessions.csrfOk(req, session)) return refuseCsrf(res)
        req.auth = principal
        return next()
      }
      const m = BEARER.exec(header)
      if (!m) return unauthorized(res, 'the Authorization header must be: Bearer <api key>')
      const principal = await resolve(m[1]!)
      if (!principal) return unauthorized(res, 'the API key is unknown or revoked')
      req.auth = principal
      next()
    } catch (err) {
      next(err)
    }
  }

  const authorize: RequestHandler = (req, res, next) => {
    if (isPublicPath(req.path)) return next()
    const p = req.auth
    // Defence in depth: authenticate runs first and never lets a request through without one.
    if (!p) return unauthorized(res, 'send Authorization: Bearer <api key>')
    if (p.kind === 'tenant') {
      const denial = tenantDenial(req, p.tenantId!)
      if (denial) return sendError(res, 403, 'Forbidden', denial)
    }
    next()
  }

  return { authenticate, authorize, clearCache: () => cache.clear(), resolve, resolveSession, sessions, revokeSession }
}

declare module 'express-serve-static-core' {
  interface Request {
    /** Who is calling, set by the auth middleware. */
    auth?: Principal
  }
}
