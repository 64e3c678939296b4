import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'
import { parse as parseCookies, serialize as serializeCookie } from 'cookie'
import type { Request, Response } from 'express'
import { sendError } from './errors.ts'

/**
 * Browser sessions for the console (docs/auth.md, "Browser sessions"): a tenant key or the admin
 * token, pasted once, travels afterwards in an HttpOnly, SameSite=Strict cookie instead of a
 * bearer header. The cookie is the token itself sealed with AES-256-GCM under a key derived from
 * the admin token, so every API replica that shares the admin token reads it, and nothing is kept
 * server-side. Each request still resolves the token as a bearer request would: a revoked key
 * stops a session as it stops the key.
 *
 * Writes (any method but GET, HEAD and OPTIONS) made with the cookie must carry
 * `X-CSRF-Token`: an HMAC of the cookie under a second derived key, handed to the page at sign-in
 * and on GET of the session. A page on another site can neither read it nor, under SameSite=Strict,
 * send the cookie at all.
 */
export const SESSION_COOKIE = 'cdp_session'
export const CSRF_HEADER = 'x-csrf-token'
/** How long a session lasts from sign-in, unless configured (CDP_CONSOLE_SESSION_HOURS). */
export const DEFAULT_SESSION_TTL_MS = 8 * 3600_000

export interface SessionContent {
  /** A random id of this sign-in: what a sign-out revokes (SessionRevocations). */
  id: string
  /** The API key or admin token the session stands for. */
  token: string
  /** Milliseconds since epoch after which the session is refused. */
  expiresAt: number
}

export interface OpenedSession extends SessionContent {
  /** The value the page must send in X-CSRF-Token with every write. */
  csrf: string
}

export interface SessionSeal {
  /** The cookie value of a new session for `token`. */
  seal(token: string): { value: string; content: OpenedSession }
  /** The session a request's cookie holds: null without one; 'invalid' when it does not open or has expired. */
  read(req: Request): OpenedSession | 'invalid' | null
  /** Whether a write made with `session` carries its CSRF token. */
  csrfOk(req: Request, session: OpenedSession): boolean
  setCookie(req: Request, res: Response, value: string): void
  clearCookie(req: Request, res: Response): void
  ttlMs: number
}

const b64 = (b: Buffer) => b.toString('base64url')

export function createSessionSeal(secret: string, opts: { ttlMs?: number; now?: () => number; secureCookie?: boolean } = {}): SessionSeal {
  const ttlMs = opts.ttlMs ?? DEFAULT_SESSION_TTL_MS
  const now = opts.now ?? Date.now
  const derive = (info: string) => Buffer.from(hkdfSync('sha256', secret, 'cdp console session', info, 32))
  const encKey = derive('cookie encryption')
  const macKey = derive('csrf token')
  const csrfOf = (value: string) => b64(createHmac('sha256', macKey).update(value).digest())

  const open = (value: string): SessionContent | null => {
    try {
      const raw = Buffer.from(value, 'base64url')
      if (raw.length < 12 + 16 + 2) return null
      const d = createDecipheriv('aes-256-gcm', encKey, raw.subarray(0, 12))
      d.setAuthTag(raw.subarray(12, 28))
      const text = Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8')
      const c = JSON.parse(text) as { s?: unknown; t?: unknown; e?: unknown }
      return typeof c.s === 'string' && typeof c.t === 'string' && typeof c.e === 'number' ? { id: c.s, token: c.t, expiresAt: c.e } : null
    } catch {
      return null
    }
  }

  // Secure over HTTPS: as the request says (behind a TLS-terminating proxy, with `trust proxy`
  // set: CDP_TRUST_PROXY), or always/never when configured (CDP_CONSOLE_SECURE_COOKIE).
  const cookieOptions = (req: Request) => ({ httpOnly: true, sameSite: 'strict' as const, path: '/', secure: opts.secureCookie ?? req.secure })

  return {
    ttlMs,
    seal(token) {
      const expiresAt = now() + ttlMs
      const id = b64(randomBytes(16))
      const iv = randomBytes(12)
      const c = createCipheriv('aes-256-gcm', encKey, iv)
      const ct = Buffer.concat([c.update(JSON.stringify({ s: id, t: token, e: expiresAt }), 'utf8'), c.final()])
      const value = b64(Buffer.concat([iv, c.getAuthTag(), ct]))
      return { value, content: { id, token, expiresAt, csrf: csrfOf(value) } }
    },
    read(req) {
      const header = req.headers.cookie
      if (!header) return null
      const value = parseCookies(header)[SESSION_COOKIE]
      if (!value) return null
      const c = open(value)
      if (!c || c.expiresAt <= now()) return 'invalid'
      return { ...c, csrf: csrfOf(value) }
    },
    csrfOk(req, session) {
      const sent = req.headers[CSRF_HEADER]
      if (typeof sent !== 'string' || sent.length !== session.csrf.length) return false
      return timingSafeEqual(Buffer.from(sent), Buffer.from(session.csrf))
    },
    setCookie(req, res, value) {
      res.append('Set-Cookie', serializeCookie(SESSION_COOKIE, value, { ...cookieOptions(req), maxAge: Math.floor(ttlMs / 1000) }))
    },
    clearCookie(req, res) {
      res.append('Set-Cookie', serializeCookie(SESSION_COOKIE, '', { ...cookieOptions(req), maxAge: 0, expires: new Date(0) }))
    },
  }
}

/** Methods that change nothing, and so need no CSRF token. */
export const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Why a cookie is refused (401), wherever it is read: it does not open or has expired, or it no longer stands for a key. */
export const SESSION_INVALID = 'the session has expired or is not valid: sign in again'
export const SESSION_ENDED = 'the session was signed out, or its API key is unknown or revoked: sign in again'

/** The 403 of a write made with the cookie but without its X-CSRF-Token. */
export function refuseCsrf(res: Response): void {
  sendError(res, 403, 'Forbidden', { code: 'CSRF_TOKEN_INVALID', message: 'a write made with the session cookie must carry its X-CSRF-Token header' })
}
