import type { Request, RequestHandler } from 'express'
import { sendError } from './errors.ts'
import { MemoryRateLimiter, fixedWindow, retryAfterSeconds, type RateRule as WindowRule } from '../../common/rate-limit.ts'

/**
 * In-memory fixed-window rate limits (spec "Limits") on common/rate-limit.ts. Counters live in
 * this process: with N API replicas behind a load balancer a client can make up to N times the
 * limit. A fixed window can let up to twice the limit through across a window boundary; both are
 * accepted trade-offs for a limiter that needs no shared store (docs/auth.md).
 */
export interface RateRule extends WindowRule {
  name: string
  /** Which requests the rule counts. */
  applies(req: Request): boolean
  /** Whose counter a request counts against (an IP, a key id). */
  keyOf(req: Request): string
}

/** Windows one middleware keeps; past it the least recently used client's window is forgotten. */
const MAX_WINDOWS = 100_000

/**
 * Middleware over a set of rules: every rule that applies counts the request; when any is over
 * its limit the answer is 429 with Retry-After (seconds) and the common error body. RateLimit-Limit
 * and RateLimit-Remaining describe the tightest applicable rule (also across several of these
 * middlewares on one request).
 */
export function rateLimit(rules: RateRule[], now: () => number = Date.now): RequestHandler {
  const limiter = new MemoryRateLimiter({ algorithm: fixedWindow, maxKeys: MAX_WINDOWS, now })
  return (req, res, next) => {
    let blocked: { rule: RateRule; resetMs: number } | null = null
    for (const rule of rules) {
      if (!rule.applies(req)) continue
      const at = now()
      const r = limiter.take(`${rule.name}:${rule.keyOf(req)}`, rule, at)
      const resetMs = r.resetAt! - at
      const shown = res.getHeader('RateLimit-Remaining')
      if (shown === undefined || r.remaining < Number(shown)) {
        res.setHeader('RateLimit-Limit', String(rule.limit))
        res.setHeader('RateLimit-Remaining', String(r.remaining))
        res.setHeader('RateLimit-Reset', String(Math.ceil(resetMs / 1000)))
      }
      if (!r.allowed && (!blocked || resetMs > blocked.resetMs)) blocked = { rule, resetMs }
    }
    if (!blocked) return next()
    const retryAfter = retryAfterSeconds(blocked.resetMs)
    res.setHeader('Retry-After', String(retryAfter))
    sendError(res, 429, 'Too many requests', {
      code: 'RATE_LIMIT_EXCEEDED',
      limit: blocked.rule.limit,
      window_seconds: Math.round(blocked.rule.windowMs / 1000),
      retry_after: retryAfter,
    })
  }
}

export const ANALYTICS_PREFIXES = ['/api/v2/cdp/analytics/', '/api/cdp/v2/']
export const DEMOGRAPHICS_PATHS = ['/api/v2/cdp/analytics/demographics', '/api/cdp/v2/analytics/demographics', '/api/cdp/v2/customers']

// Express routes match case-insensitively, so the limits do too.
const underAny = (path: string, prefixes: string[]) => {
  const l = path.toLowerCase()
  return prefixes.some((p) => (p.endsWith('/') ? l.startsWith(p) : l === p || l.startsWith(`${p}/`)))
}

export const isAnalyticsPath = (path: string) => underAny(path, ANALYTICS_PREFIXES)
export const isDemographicsPath = (path: string) => underAny(path, DEMOGRAPHICS_PATHS)

/**
 * The management routes the spec gives no limit for ("Rate limits of processing and integration
 * endpoints: not shown"): processing, tenant integrations and audience syncs.
 */
export const OPERATIONS_PREFIXES = ['/api/v2/cdp/process', '/api/v2/tenant-integrations', '/api/v2/cdp/audience-syncs', '/api/v2/cdp/tenants']
export const isOperationsPath = (path: string) => underAny(path, OPERATIONS_PREFIXES)

/**
 * Among those, the requests that start work or call another platform with a tenant's credentials
 * (a client repeating them would load our workers, spend the tenant's quota at the platform or,
 * with credentials that change each time, guess credentials at our expense):
 * - `always`: a processing run or a schedule of one (`POST /api/v2/cdp/process/{tenantId}[/schedule]`);
 *   creating an integration (verified with its platform, may queue the initial sync) or an
 *   audience sync (its token checked with `/debug_token`); a credentials check, a connection test,
 *   a sync (`POST /api/v2/tenant-integrations/validate/{type}`, `…/{integrationId}/test`, `…/sync`);
 * - `with-credentials`: an update that sends new credentials, which are verified again
 *   (`PUT /api/v2/tenant-integrations/{id}` with a credential field or `configuration.site_id`;
 *   `PUT /api/v2/cdp/audience-syncs/{id}` with `access_token`).
 */
export type JobKind = 'always' | 'with-credentials'

export function jobKind(method: string, path: string): JobKind | null {
  const l = path.toLowerCase().replace(/\/+$/, '')
  if (method === 'POST') {
    if (/^\/api\/v2\/cdp\/process\/[^/]+(\/schedule)?$/.test(l) && !l.startsWith('/api/v2/cdp/process/status')) return 'always'
    if (l === '/api/v2/tenant-integrations' || l === '/api/v2/cdp/audience-syncs') return 'always'
    if (/^\/api\/v2\/tenant-integrations\/(validate\/[^/]+|[^/]+\/(test|sync))$/.test(l)) return 'always'
  }
  if (method === 'PUT' && /^\/api\/v2\/(tenant-integrations|cdp\/audience-syncs)\/[^/]+$/.test(l)) return 'with-credentials'
  return null
}

/** Whether an update body carries credentials (anything an integration update verifies again, or an ads token). */
function carriesCredentials(path: string, body: unknown): boolean {
  if (!body || typeof body !== 'object') return false
  const b = body as Record<string, unknown>
  if (path.toLowerCase().includes('/audience-syncs/')) return b.access_token !== undefined
  const configuration = b.configuration
  return Object.keys(b).some((k) => k !== 'is_active' && k !== 'configuration') || (!!configuration && typeof configuration === 'object' && 'site_id' in configuration)
}

export function isJobRequest(method: string, path: string, body?: unknown): boolean {
  const kind = jobKind(method, path)
  return kind === 'always' || (kind === 'with-credentials' && carriesCredentials(path, body))
}

export interface RateLimitOptions {
  /** Analytics endpoints, per key (admin token: per IP) per minute. Spec: 100. */
  analyticsPerMinute: number
  /** Demographics-related endpoints, per IP per 15 minutes. Spec: 1,000 in production, 10,000 in development. */
  demographicsPer15Min: number
  /** Processing, integration and audience-sync endpoints, per key per minute. Ours: 120 (the spec shows none). */
  operationsPerMinute: number
  /** Of those, jobs (runs, syncs, anything that checks credentials with a platform; `jobKind`), per key per minute. Ours: 20. */
  jobsPerMinute: number
  now?: () => number
}

/**
 * One replica's share of limits that `replicas` API processes enforce together, each in its own
 * memory: 1/N of each, rounded down (at least one call), so N replicas never allow more than the
 * limit. A balancer that spreads a client's requests evenly gives it the whole limit; one that
 * pins a client to a replica gives it that replica's share (docs/auth.md).
 */
export function replicaShare(limits: Omit<RateLimitOptions, 'now'>, replicas: number): Omit<RateLimitOptions, 'now'> {
  const share = (n: number) => Math.max(1, Math.floor(n / replicas))
  return {
    analyticsPerMinute: share(limits.analyticsPerMinute),
    demographicsPer15Min: share(limits.demographicsPer15Min),
    operationsPerMinute: share(limits.operationsPerMinute),
    jobsPerMinute: share(limits.jobsPerMinute),
  }
}

/** The spec's numbers for an environment, and ours where it shows none (docs/auth.md). */
export function defaultRateLimits(nodeEnv: string): Omit<RateLimitOptions, 'now'> {
  return { analyticsPerMinute: 100, demographicsPer15Min: nodeEnv === 'production' ? 1000 : 10_000, operationsPerMinute: 120, jobsPerMinute: 20 }
}

const ipOf = (req: Request) => req.ip ?? req.socket.remoteAddress ?? 'unknown'

/** Per-IP demographics limit: mounted before authentication, so unauthenticated floods count too. */
export function demographicsLimiter(o: RateLimitOptions): RequestHandler {
  return rateLimit([{ name: 'demographics', limit: o.demographicsPer15Min, windowMs: 15 * 60_000, applies: (r) => isDemographicsPath(r.path), keyOf: ipOf }], o.now)
}

/** Whose per-key budget a request spends: its API key, or (admin token) its IP. */
const keyOrIp = (r: Request) => (r.auth?.keyId ? `key:${r.auth.keyId}` : `ip:${ipOf(r)}`)

/**
 * Per-key limits, mounted after authentication (req.auth names the key): analytics (spec), and
 * the operations routes with their tighter budget for jobs (ours).
 */
export function keyLimiter(o: RateLimitOptions): RequestHandler {
  return rateLimit(
    [
      { name: 'analytics', limit: o.analyticsPerMinute, windowMs: 60_000, applies: (r) => isAnalyticsPath(r.path), keyOf: keyOrIp },
      { name: 'operations', limit: o.operationsPerMinute, windowMs: 60_000, applies: (r) => isOperationsPath(r.path), keyOf: keyOrIp },
      { name: 'jobs', limit: o.jobsPerMinute, windowMs: 60_000, applies: (r) => isJobRequest(r.method, r.path, r.body), keyOf: keyOrIp },
    ],
    o.now,
  )
}
