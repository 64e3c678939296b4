import express, { type Request, type Response, type Router } from 'express'
import { z } from 'zod'
import type { Logger } from '../../common/logger.ts'
import { fieldErrorsFromZod } from '../../pipelines/ingest/validation.ts'
import { failure, sendError } from './errors.ts'
import { json, route, type Operation, type RouteGroup } from './routes.ts'
import { Timestamp } from './response-schemas.ts'
import { SESSION_PATH, type Principal } from './auth.ts'
import { rateLimit } from './rate-limit.ts'
import { refuseCsrf, SESSION_ENDED, SESSION_INVALID, type OpenedSession, type SessionSeal } from './session.ts'

/**
 * Browser sessions (ours; docs/auth.md, "Browser sessions"): the console exchanges a tenant key
 * or the admin token for a session cookie here, reads who it is signed in as, and signs out. The
 * key is never echoed, logged or readable by the page afterwards (HttpOnly).
 */
const SignInBody = z.strictObject({
  api_key: z.string().trim().min(1).max(512).meta({ description: 'A tenant API key, or the admin token' }),
})

const SessionData = z
  .strictObject({
    role: z.enum(['tenant', 'admin']).meta({ description: '`admin` (the admin token: every tenant) or `tenant` (a tenant key)' }),
    tenant_id: z.int().min(1).nullable().meta({ description: "The key's tenant; null for the admin token" }),
    csrf_token: z.string().meta({ description: 'Send it as `X-CSRF-Token` with every write made with the session cookie' }),
    expires_at: Timestamp,
  })
  .meta({ id: 'Session' })
const SessionAnswer = z.strictObject({ success: z.literal(true), data: SessionData })

const unauthorized = failure('No valid session, or (sign-in) an unknown or revoked key')

const signIn: Operation = {
  method: 'post',
  path: SESSION_PATH,
  operationId: 'signIn',
  summary: 'Open a browser session with an API key',
  description:
    'Answers the session and sets the `cdp_session` cookie (HttpOnly, SameSite=Strict, Secure over HTTPS) that stands for the key on later requests; writes made with it need `X-CSRF-Token`. Sessions last 8 hours unless `CDP_CONSOLE_SESSION_HOURS` says otherwise; a revoked key ends its sessions. At most 20 attempts a minute per IP.',
  public: true,
  request: { body: { schema: SignInBody, required: true, example: { api_key: '<tenant API key>' } } },
  responses: { 200: json('Signed in', SessionAnswer), 400: failure('Invalid body (`details.errors[]`)'), 401: unauthorized, 429: failure('Too many attempts (`Retry-After`)') },
}

const current: Operation = {
  method: 'get',
  path: SESSION_PATH,
  operationId: 'getSession',
  summary: 'The browser session this cookie holds',
  description: 'Who the session is signed in as, its CSRF token and when it ends; 401 without a valid session.',
  public: true,
  responses: { 200: json('The session', SessionAnswer), 401: unauthorized },
}

const signOut: Operation = {
  method: 'delete',
  path: SESSION_PATH,
  operationId: 'signOut',
  summary: 'Sign out: clear the session cookie',
  description: 'Ends the session on every API replica (this one at once, the others within a minute: even a copy of the cookie is refused) and clears the cookie; 200 also without a session. With a session it needs `X-CSRF-Token`, as every write does.',
  public: true,
  responses: { 200: json('Signed out', z.strictObject({ success: z.literal(true), message: z.string() })), 403: failure('The session cookie came without its X-CSRF-Token') },
}

export const SESSION_ROUTES: RouteGroup = {
  tag: { name: 'Sessions', description: "Browser sessions for the console (ours): a key exchanged for an HttpOnly cookie." },
  operations: [signIn, current, signOut],
}

export interface SessionRoutesDeps {
  sessions: SessionSeal
  resolve(token: string): Promise<Principal | null>
  resolveSession(session: OpenedSession): Promise<Principal | null>
  revokeSession(session: OpenedSession): Promise<void>
  logger: Logger
  now?: () => number
  /** Sign-in attempts per IP and minute (default 20). */
  attemptsPerMinute?: number
}

const sessionData = (p: Principal, s: OpenedSession) => ({ role: p.kind, tenant_id: p.tenantId ?? null, csrf_token: s.csrf, expires_at: new Date(s.expiresAt).toISOString() })

export function sessionRouter(deps: SessionRoutesDeps): Router {
  const router = express.Router()
  const attempts = rateLimit(
    [{ name: 'sign-in', limit: deps.attemptsPerMinute ?? 20, windowMs: 60_000, applies: () => true, keyOf: (r: Request) => r.ip ?? r.socket.remoteAddress ?? 'unknown' }],
    deps.now,
  )
  const noSession = (req: Request, res: Response, details: string) => {
    deps.sessions.clearCookie(req, res)
    sendError(res, 401, 'Unauthorized', details)
  }

  route(router, signIn, attempts, async (req, res, next) => {
    try {
      const b = SignInBody.safeParse(req.body ?? {})
      if (!b.success) return sendError(res, 400, 'Invalid request', { errors: fieldErrorsFromZod(b.error.issues) })
      const principal = await deps.resolve(b.data.api_key)
      if (!principal) return noSession(req, res, 'the API key is unknown or revoked')
      const { value, content } = deps.sessions.seal(b.data.api_key)
      deps.sessions.setCookie(req, res, value)
      deps.logger.info({ role: principal.kind, tenant_id: principal.tenantId, key_id: principal.keyId }, 'console session opened')
      res.json({ success: true, data: sessionData(principal, content) })
    } catch (err) {
      next(err)
    }
  })

  route(router, current, async (req, res, next) => {
    try {
      const s = deps.sessions.read(req)
      if (s === null) return sendError(res, 401, 'Unauthorized', 'not signed in')
      if (s === 'invalid') return noSession(req, res, SESSION_INVALID)
      const principal = await deps.resolveSession(s)
      if (!principal) return noSession(req, res, SESSION_ENDED)
      res.json({ success: true, data: sessionData(principal, s) })
    } catch (err) {
      next(err)
    }
  })

  route(router, signOut, async (req, res, next) => {
    try {
      const s = deps.sessions.read(req)
      if (s && s !== 'invalid') {
        if (!deps.sessions.csrfOk(req, s)) return refuseCsrf(res)
        // Every replica refuses this cookie from now on, even a copy of it.
        await deps.revokeSession(s)
        deps.logger.info({ session_expires_at: new Date(s.expiresAt).toISOString() }, 'console session signed out')
      }
      deps.sessions.clearCookie(req, res)
      res.json({ success: true, message: 'signed out' })
    } catch (err) {
      next(err)
    }
  })

  return router
}
