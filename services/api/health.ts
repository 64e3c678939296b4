import express, { type Router } from 'express'
import { z } from 'zod'
import { registry } from '../../common/runtime/metrics.ts'
import { json, route, type Operation, type RouteGroup } from './routes.ts'

export interface ReadinessCheck {
  name: string
  check(): Promise<boolean> | boolean
}

const Readiness = z
  .strictObject({ ready: z.boolean(), checks: z.record(z.string(), z.boolean()).meta({ description: 'Each check by name: whether it passes' }) })
  .meta({ id: 'Readiness' })

const health: Operation = {
  method: 'get',
  path: '/health',
  operationId: 'health',
  summary: 'Liveness',
  public: true,
  responses: {
    200: json(
      'Alive: `status` "ok", `uptime_seconds` and build info',
      z
        .object({
          status: z.literal('ok'),
          uptime_seconds: z.int().min(0),
          runtime: z.enum(['embedded', 'distributed']).optional(),
          roles: z.array(z.string()).optional().meta({ description: 'The roles this process runs' }),
        })
        .catchall(z.unknown()),
    ),
  },
}

const ready: Operation = {
  method: 'get',
  path: '/ready',
  operationId: 'ready',
  summary: 'Readiness: every dependency check passes',
  public: true,
  responses: { 200: json('Ready', Readiness), 503: json('Not ready: `checks` says which check failed', Readiness) },
}

const metrics: Operation = {
  method: 'get',
  path: '/metrics',
  operationId: 'metrics',
  summary: 'Prometheus metrics',
  public: true,
  responses: { 200: { description: 'Prometheus text exposition format', content: { 'text/plain': z.string() } } },
}

export const OPERATIONS_ROUTES: RouteGroup = {
  tag: { name: 'Operations', description: 'Health, readiness and metrics (no token needed).' },
  operations: [health, ready, metrics],
}

/** /health (liveness), /ready (every check passes) and /metrics (Prometheus), for every role. */
export function healthRouter(checks: ReadinessCheck[], info: Record<string, unknown> = {}): Router {
  const router = express.Router()
  const started = Date.now()
  route(router, health, (_req, res) => {
    res.json({ status: 'ok', uptime_seconds: Math.round((Date.now() - started) / 1000), ...info })
  })
  route(router, ready, async (_req, res) => {
    const results: Record<string, boolean> = {}
    for (const c of checks) {
      try {
        results[c.name] = await c.check()
      } catch {
        results[c.name] = false
      }
    }
    const ready = Object.values(results).every(Boolean)
    res.status(ready ? 200 : 503).json({ ready, checks: results })
  })
  route(router, metrics, async (_req, res) => {
    res.set('Content-Type', registry.contentType)
    res.send(await registry.metrics())
  })
  return router
}
