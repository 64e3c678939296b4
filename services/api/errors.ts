import type { ErrorRequestHandler, RequestHandler, Response } from 'express'
import { DomainError, type DomainErrorKind } from '../../common/domain-errors.ts'

/** The spec's common error body: success false, an error string, details string or object. */
export function sendError(res: Response, status: number, error: string, details?: unknown): void {
  res.status(status).json({ success: false, error, details: details ?? null })
}

/** The HTTP status of each refusal a lane's service throws (common/domain-errors.ts). */
export const DOMAIN_ERROR_STATUS: Record<DomainErrorKind, number> = {
  invalid_input: 400,
  invalid_credentials: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  unreadable_secret: 500,
  upstream_unavailable: 502,
}

/** A service's refusal as the common error body: its message as `error`, its details as `details`. */
export function sendDomainError(res: Response, err: DomainError): void {
  sendError(res, DOMAIN_ERROR_STATUS[err.kind], err.message, err.details)
}

export const notFound: RequestHandler = (req, res) => sendError(res, 404, 'Not found', `no route for ${req.method} ${req.path}`)

/** Services' refusals, body-parser and unexpected errors become the common error body; internals are logged, not returned. */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  if (err instanceof DomainError) return sendDomainError(res, err)
  const e = err as { type?: string; status?: number; message?: string; limit?: number }
  if (e.type === 'entity.parse.failed') return sendError(res, 400, 'Invalid JSON', e.message)
  if (e.type === 'entity.too.large') return sendError(res, 413, 'Payload too large', `the body exceeds ${e.limit} bytes`)
  if (e.status && e.status >= 400 && e.status < 500) return sendError(res, e.status, e.message ?? 'Bad request')
  req.log?.error({ err }, 'unhandled error')
  sendError(res, 500, 'Internal error', 'the request failed; see the service logs')
}

declare module 'express-serve-static-core' {
  interface Request {
    log?: import('pino').Logger
  }
}
