/** The platform simulators' API errors and the error handler that logs and answers them. */
import type { ErrorRequestHandler } from 'express'
import { beginRequest, type Reply, type RequestLocals } from './request-log.ts'

/** An error answer: the HTTP status, the platform's body, and Retry-After (seconds) when set. */
export abstract class SimulatorApiError extends Error {
  constructor(readonly status: number, message: string, readonly retryAfter?: number) {
    super(message)
  }

  abstract body(): unknown
}

/**
 * The API router's error handler: answers a SimulatorApiError with its status, body and
 * Retry-After, anything else as `unexpected` makes it; both through `send`, so they are logged.
 * A request that failed before its clock started (a body parser's error) starts it here.
 */
export function apiErrorHandler(now: () => number, send: Reply, unexpected: (err: unknown) => SimulatorApiError): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (!(res.locals as Partial<RequestLocals>).t0) beginRequest(res, now)
    const e = err instanceof SimulatorApiError ? err : unexpected(err)
    if (e.retryAfter !== undefined) res.setHeader('Retry-After', String(e.retryAfter))
    send(req, res, e.status, e.body())
  }
}
