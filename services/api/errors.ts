import http from 'node:http'
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express'
import { fieldErrorsFromZod } from '../../pipelines/ingest/validation.ts'
import { z } from 'zod'
import { DomainError, type DomainErrorKind } from '../../common/domain-errors.ts'
import { json, type ResponseSpec } from './routes.ts'

/** One problem of a request, at its field. */
export const FieldErrorSchema = z
  .strictObject({
    index: z.int().min(0).optional().meta({ description: 'Event index (ingest only)' }),
    path: z.string().meta({ description: 'Dotted path of the field, e.g. items.0.unit_price' }),
    code: z.string().meta({ description: 'Machine-readable code (invalid_type, too_small, required, …)' }),
    message: z.string(),
  })
  .meta({ id: 'FieldError' })

/** The spec's common error body (every error of every endpoint unless an operation says otherwise). */
export const ErrorBody = z
  .strictObject({
    success: z.literal(false),
    error: z.string().meta({ description: 'Short error message' }),
    details: z
      .union([z.string(), z.object({ errors: z.array(FieldErrorSchema).optional() }).catchall(z.unknown()), z.null()])
      .meta({ description: 'A string, an object (validation errors as `errors[]` of FieldError, else what the error is about) or null' }),
  })
  .meta({ id: 'ErrorBody', description: 'The common error body of every endpoint.' })

/** A response with the common error body. */
export const failure = (description: string): ResponseSpec => json(description, ErrorBody)

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

/** The methods the service answers; any other (TRACE, CONNECT, PROPFIND, …) gets 405 on every path. */
export const SERVED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const

/** 405 with `Allow` for a method the service never serves, before any route or authentication. */
export const unknownMethod: RequestHandler = (req, res, next) => {
  if ((SERVED_METHODS as readonly string[]).includes(req.method)) return next()
  res.set('Allow', SERVED_METHODS.join(', '))
  sendError(res, 405, 'Method not allowed', `${req.method} is not served; allowed: ${SERVED_METHODS.join(', ')}`)
}

/**
 * The longest request line and headers the service reads: Node's 16 KB default is shorter than a
 * filter the OpenAPI document allows (1,000 customer ids of up to 16 digits repeated as
 * `customer_ids=…`, about 30 KB).
 */
export const MAX_HEADER_BYTES = 64 * 1024

/** The HTTP server of the API (and of the health port): MAX_HEADER_BYTES, and jsonClientErrors. */
export function createApiServer(app: http.RequestListener): http.Server {
  const server = http.createServer({ maxHeaderSize: MAX_HEADER_BYTES }, app)
  jsonClientErrors(server)
  return server
}

/**
 * Requests Node's HTTP parser refuses before Express sees them (a header or URL over
 * MAX_HEADER_BYTES, a malformed request line) answered with the common JSON body instead of
 * Node's empty one.
 */
export function jsonClientErrors(server: http.Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable || (err.code === 'ECONNRESET')) return void socket.destroy()
    const [status, error, details] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request header fields too large', `the request line and headers exceed ${MAX_HEADER_BYTES / 1024} KB: send long filters in fewer, shorter parameters`]
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request timeout', null]
          : [400, 'Bad request', 'the request could not be parsed as HTTP/1.1']
    const body = JSON.stringify({ success: false, error, details })
    socket.end(`HTTP/1.1 ${status} ${error}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
  })
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


/**
 * Validates a request's path parameters, query and (when given) body with their zod schemas; on
 * failure answers 400 (`error` as given) with every field error of all of them at once, and
 * returns null.
 */
export function parseRequest<P, Q, B = undefined>(
  req: Request,
  res: Response,
  schemas: { params?: z.ZodType<P>; query: z.ZodType<Q>; body?: z.ZodType<B> },
  error = 'Invalid request',
): { params: P; query: Q; body: B } | null {
  const parts = { params: schemas.params?.safeParse(req.params), query: schemas.query.safeParse(req.query), body: schemas.body?.safeParse(req.body) }
  const failed = Object.values(parts).filter((p) => p !== undefined && !p.success)
  if (!failed.length) return { params: parts.params?.data as P, query: parts.query.data as Q, body: parts.body?.data as B }
  sendError(res, 400, error, { errors: failed.flatMap((p) => fieldErrorsFromZod(p!.error!.issues)) })
  return null
}
