import express, { type Router } from 'express'
import { registry } from '../../common/runtime/metrics.ts'

export interface ReadinessCheck {
  name: string
  check(): Promise<boolean> | boolean
}

/** /health (liveness), /ready (every check passes) and /metrics (Prometheus), for every role. */
export function healthRouter(checks: ReadinessCheck[], info: Record<string, unknown> = {}): Router {
  const router = express.Router()
  const started = Date.now()
  router.get('/health', (_req, res) => {
    res.json({ status: 'ok', uptime_seconds: Math.round((Date.now() - started) / 1000), ...info })
  })
  router.get('/ready', async (_req, res) => {
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
  router.get('/metrics', async (_req, res) => {
    res.set('Content-Type', registry.contentType)
    res.send(await registry.metrics())
  })
  return router
}
