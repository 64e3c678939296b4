/** The HTTP server of a process: the API, or /health, /ready and /metrics alone for roles without it. */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { RequestListener } from 'node:http'
import type { Runtime } from '../../common/runtime/context.ts'
import type { RunningPipeline } from '../../common/runtime/pipeline.ts'
import { createHealthApp } from '../../services/api/app.ts'
import { createApiServer } from '../../services/api/errors.ts'
import { StartupError } from '../args.ts'
import type { ReadinessCheck } from '../../services/api/health.ts'

export interface RunningHttp {
  server: http.Server
  url: string
  /** Stops accepting requests and closes the open connections. */
  stop(): Promise<void>
}

/** Ready while the store answers and every pipeline of the process runs. */
export function readiness(rt: Runtime, pipelines: RunningPipeline[]): ReadinessCheck[] {
  return [
    { name: 'store', check: async () => (await rt.store.ping()).success },
    { name: 'pipelines', check: () => pipelines.every((p) => p.isRunning()) },
  ]
}

export const processInfo = (rt: Runtime) => ({ runtime: rt.config.runtime, roles: rt.config.roles })

/** Listens on `port` of the configured host and logs `what` with the url and the roles. */
export async function listen(rt: Runtime, app: RequestListener, port: number, what: string): Promise<RunningHttp> {
  const server = createApiServer(app)
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') reject(new StartupError(`port ${port} on ${rt.config.apiHost} is already in use (set CDP_API_PORT or CDP_METRICS_PORT, or stop the process holding it)`))
      else if (err.code === 'EACCES') reject(new StartupError(`no permission to listen on port ${port} of ${rt.config.apiHost}`))
      else reject(err)
    })
    server.listen(port, rt.config.apiHost, resolve)
  })
  const addr = server.address() as AddressInfo
  const url = `http://${addr.address}:${addr.port}`
  rt.logger.info({ url, roles: rt.config.roles }, what)
  return {
    server,
    url,
    stop: async () => {
      await new Promise<void>((r) => server.close(() => r()))
      server.closeAllConnections()
    },
  }
}

/** Roles without the API: health and metrics on the metrics port. */
export function startHealth(rt: Runtime, pipelines: RunningPipeline[]): Promise<RunningHttp> {
  return listen(rt, createHealthApp(readiness(rt, pipelines), processInfo(rt)), rt.config.metricsPort, 'health and metrics listening')
}
