import type { ErrorRequestHandler, RequestHandler, Response } from 'express'

/** The spec's common error body: success false, an error string, details string or object. */
export function sendError(res: Response, status: number, error: string, details?: unknown): void {
  res.status(status).json({ success: false, error, details: details ?? null })
}

export const notFound: RequestHandler = (req, res) => sendError(res, 404, 'Not found', `no route for ${req.method} ${req.path}`)

/** Body-parser and unexpected errors become the common error body; internals are logged, not returned. */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
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
