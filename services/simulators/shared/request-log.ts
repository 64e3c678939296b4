/**
 * The simulators' request logs: every API request is timed from its arrival and recorded, with its
 * answer, before the answer is sent, so a test that got the answer also sees the entry.
 */
import type { Request, RequestHandler, Response } from 'express'

/** What every simulator's log records of a request. */
export interface LoggedRequest {
  /** 1-based position in the log. */
  seq: number
  /** When the request arrived, on the simulator's clock (epoch ms). */
  time: number
  method: string
  path: string
  status: number
  durationMs: number
}

/** A request-log entry of the commerce-platform, marketplace and search-ads simulators. */
export interface RequestLogEntry extends LoggedRequest {
  /** The platform's error code of an error answer, else null. */
  error: string | null
  /** Who called (app key, client id, customer id), never a secret. */
  caller: string | null
}

/** `res.locals` of a timed request: its arrival on the simulator's clock and a monotonic start. */
export interface RequestClock {
  time: number
  t0: number
}

/** `res.locals` of the platform simulators' API requests. */
export interface RequestLocals extends RequestClock {
  caller: string | null
}

/** Starts the request's clock; the caller is not known yet. */
export function beginRequest(res: Response, now: () => number): void {
  Object.assign(res.locals, { t0: performance.now(), time: now(), caller: null } satisfies RequestLocals)
}

/** Middleware: `beginRequest` for every request of the router. */
export function timeRequests(now: () => number): RequestHandler {
  return (_req, res, next) => {
    beginRequest(res, now)
    next()
  }
}

/** Milliseconds since `t0` (a `performance.now()`), to 0.01 ms. */
export const durationSince = (t0: number): number => Math.round((performance.now() - t0) * 100) / 100

/** Appends the entry to the log under the next sequence number and tells `onRequest`. */
export function appendEntry<E extends LoggedRequest>(log: E[], onRequest: ((entry: E) => void) | undefined, entry: Omit<E, 'seq'>): E {
  const full = { seq: log.length + 1, ...entry } as E
  log.push(full)
  onRequest?.(full)
  return full
}

export type Reply = (req: Request, res: Response, status: number, body: unknown) => void

/**
 * The platform simulators' way to answer: records the request (see RequestLocals), then sends
 * `body` as JSON. `errorOf` reads the platform's error code from an error body; `pathOf` is the
 * path logged (default `req.path`).
 */
export function loggedReply(
  log: RequestLogEntry[],
  onRequest: ((entry: RequestLogEntry) => void) | undefined,
  errorOf: (body: unknown) => string | null,
  pathOf: (req: Request) => string = (req) => req.path,
): Reply {
  return (req, res, status, body) => {
    const l = res.locals as RequestLocals
    appendEntry(log, onRequest, {
      time: l.time,
      method: req.method,
      path: pathOf(req),
      status,
      error: status >= 400 ? errorOf(body) : null,
      caller: l.caller,
      durationMs: durationSince(l.t0),
    })
    res.status(status).json(body)
  }
}
