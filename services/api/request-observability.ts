import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Request, RequestHandler } from 'express'
import client from 'prom-client'
import { pinoHttp } from 'pino-http'
import type { Logger } from '../../common/logger.ts'
import { registry } from '../../common/runtime/metrics.ts'

/** An id a caller may pass in X-Request-Id: short, printable, no spaces (anything else is replaced). */
const CALLER_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/
/** Probes polled every few seconds: counted in the metrics, kept out of the access log. */
const QUIET = new Set(['/health', '/ready', '/metrics'])

const requests = new client.Counter({
  name: 'cdp_http_requests_total',
  help: 'HTTP requests answered, by method, route (the matched route pattern; "unmatched" otherwise) and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
})
const duration = new client.Histogram({
  name: 'cdp_http_request_duration_seconds',
  help: 'Time from a request arriving to its response finishing, by method, route and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
})

/** The route pattern a request matched (bounded label values: never the raw path). */
function routeOf(req: Request): string {
  const path = (req.route as { path?: string } | undefined)?.path
  return typeof path === 'string' ? `${req.baseUrl}${path}` : 'unmatched'
}

/**
 * Request ids, the access log and HTTP metrics of the API (docs/operations.md, "Requests"):
 * - X-Request-Id: the caller's when it is a plausible id, else a new UUID; echoed on the
 *   response, on every log line of the request (`reqId`) and in the access log;
 * - one info line per request (pino-http): method, path without the query, status, time; no
 *   header (the bearer key stays out of the logs), 5xx at error level;
 * - cdp_http_requests_total and cdp_http_request_duration_seconds by method, route and status.
 */
export function requestObservability(logger: Logger): RequestHandler[] {
  const accessLog = pinoHttp<IncomingMessage, ServerResponse>({
    logger,
    genReqId: (req, res) => {
      const given = req.headers['x-request-id']
      const id = typeof given === 'string' && CALLER_ID.test(given) ? given : randomUUID()
      res.setHeader('X-Request-Id', id)
      return id
    },
    autoLogging: { ignore: (req) => QUIET.has((req.url ?? '').split('?')[0]!) },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : 'info'),
    customSuccessMessage: (req, res) => `${req.method} ${(req.url ?? '').split('?')[0]} ${res.statusCode}`,
    customErrorMessage: (req, res) => `${req.method} ${(req.url ?? '').split('?')[0]} ${res.statusCode}`,
    serializers: {
      req: (req: { id: unknown; method: string; url: string }) => ({ id: req.id, method: req.method, path: req.url.split('?')[0] }),
      res: (res: { statusCode: number }) => ({ status: res.statusCode }),
    },
  })
  const metrics: RequestHandler = (req, res, next) => {
    const end = duration.startTimer()
    res.on('finish', () => {
      const labels = { method: req.method, route: routeOf(req), status: String(res.statusCode) }
      end(labels)
      requests.inc(labels)
    })
    next()
  }
  return [accessLog as unknown as RequestHandler, metrics]
}
