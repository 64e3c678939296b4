import { randomBytes } from 'node:crypto'
import type http from 'node:http'
import { ConfigError, loadConfig, redactConfig, type Config } from '../../common/config.ts'
import { createLogger, type Logger } from '../../common/logger.ts'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import type { RunningPipeline } from '../../common/runtime/pipeline.ts'
import { devSecretFile, resolveSecretBox } from '../../common/secrets.ts'
import { streamDemoTenant } from '../../pipelines/ingest/demo.ts'
import { adminTokenFile } from '../../pipelines/ingest/sink.ts'
import { RUNTIME_FLAGS, configFlags, parse } from '../args.ts'
import { seedDemo, startDemoSimulators } from '../demo.ts'
import * as api from '../roles/api.ts'
import * as audienceSync from '../roles/audience-sync.ts'
import * as connectors from '../roles/connectors.ts'
import * as features from '../roles/features.ts'
import { startHealth } from '../roles/http.ts'
import { processingDeps } from '../roles/processing.ts'
import { laneServices, type LaneServices } from '../roles/services.ts'

const FLAGS = {
  ...RUNTIME_FLAGS,
  demo: { type: 'boolean' },
  roles: { type: 'string' },
  'api-port': { type: 'string' },
  'api-host': { type: 'string' },
} as const

const HELP = `usage: cdp start [--demo] [--roles api,features,...] [--api-port N] [--runtime embedded|distributed] [--data-dir DIR]

Starts the roles of this process (default: all, in one process on the embedded runtime:
event log and ClickHouse (chdb) under ./data, API on http://127.0.0.1:8080).
--demo also generates a demo tenant (tenant 1) and streams its customers and orders, and prints
an API key for tenant 1 once. Every API route except /health, /ready, /metrics needs
Authorization: Bearer <key>; CDP_ADMIN_TOKEN reaches every tenant (required in production; in
development one is generated into <data-dir>/admin-token). See docs/auth.md.
SIGTERM or Ctrl-C drains: the batch in hand is written and committed before exit.
`

export interface Started {
  runtime: Runtime
  pipelines: RunningPipeline[]
  server: http.Server
  url: string
  /** The lanes' services of this process (null when it holds no keyring: no api, audience-sync or connectors role). */
  services: LaneServices | null
  stop(): Promise<void>
}

/**
 * The admin token: CDP_ADMIN_TOKEN; in production there is no default (the API refuses to start);
 * in development one is generated once into <dataDir>/admin-token (mode 0600) and reused.
 * The token itself is never logged, only the file that holds it.
 */
export function resolveAdminToken(config: Config, logger: Logger): string {
  if (config.adminToken) return config.adminToken
  if (config.nodeEnv === 'production') {
    throw new ConfigError([{ path: 'adminToken (CDP_ADMIN_TOKEN)', message: 'is required in production: the API does not start without an admin token (docs/auth.md)' }])
  }
  const file = adminTokenFile(config)
  const token = devSecretFile(file, (v) => v.length >= 16, () => randomBytes(32).toString('base64url'))
  logger.warn({ file }, 'CDP_ADMIN_TOKEN is not set: using the development admin token stored in this file; set CDP_ADMIN_TOKEN in production')
  return token
}

/**
 * The composition root of a process: opens the runtime, starts each of its roles (cli/roles/),
 * then the API or, without it, health and metrics.
 */
export async function startRoles(config: Config, logger: Logger): Promise<Started> {
  const roles = new Set(config.roles)
  // Before anything is opened: a production API without an admin token does not start.
  const adminToken = roles.has('api') ? resolveAdminToken(config, logger) : ''
  // Stored credentials (ads tokens, integrations) are encrypted under this keyring; production requires one.
  const secrets = roles.has('api') || roles.has('audience-sync') || roles.has('connectors') ? resolveSecretBox(config, logger) : null
  const runtime = await openRuntime(config, logger, { apiUrl: roles.has('api') ? `http://${config.apiHost}:${config.apiPort}` : undefined })
  const processing = processingDeps(runtime)
  const featuresRole = roles.has('features') ? await features.start(runtime) : null
  const audienceSyncRole = roles.has('audience-sync') ? await audienceSync.start(runtime, secrets!) : null
  const connectorsRole = roles.has('connectors') ? await connectors.start(runtime, secrets!, processing) : null
  const pipelines = [...(featuresRole?.pipelines ?? []), ...[audienceSyncRole, connectorsRole].filter((p) => p !== null)]
  const services = secrets ? laneServices(runtime, secrets, { audienceSync: audienceSyncRole, connectors: connectorsRole }) : null
  let server: Awaited<ReturnType<typeof startHealth>>
  try {
    server = roles.has('api')
      ? await api.start(runtime, { adminToken, secrets: secrets!, services: services!, processing, features: featuresRole?.features ?? null, pipelines })
      : await startHealth(runtime, pipelines)
  } catch (err) {
    // Nothing may outlive a failed start (a taken port): stop what started and release the data dir.
    featuresRole?.detach()
    for (const p of pipelines) await p.stop().catch(() => undefined)
    await runtime.close().catch(() => undefined)
    throw err
  }

  let stopping: Promise<void> | null = null
  const stop = () =>
    (stopping ??= (async () => {
      logger.info('draining: finishing batches in hand')
      await server.stop()
      featuresRole?.detach()
      for (const p of pipelines) await p.stop()
      await runtime.close()
      logger.info('stopped')
    })())
  return { runtime, pipelines, server: server.server, url: server.url, services, stop }
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, FLAGS)
  if (values.help) {
    process.stdout.write(HELP)
    return 0
  }
  const loaded = loadConfig(process.env, configFlags(values, Object.keys(FLAGS)))
  const logger = createLogger({ level: loaded.logLevel, format: loaded.logFormat })
  // Signals are handled from the first moment: one that arrives while starting shuts down
  // cleanly once the start is done, instead of killing the process half-way.
  const signalled = new Promise<void>((resolve) => {
    const onSignal = (sig: string) => {
      logger.info({ signal: sig }, 'shutting down')
      resolve()
    }
    process.once('SIGTERM', () => onSignal('SIGTERM'))
    process.once('SIGINT', () => onSignal('SIGINT'))
  })
  // The demo without an ads or a commerce platform configured: the simulators run in this process.
  const sims = await startDemoSimulators(loaded)
  const config = sims.config
  logger.info({ config: redactConfig(config) }, 'starting')
  const started = await startRoles(config, logger).catch(async (err: unknown) => {
    await sims.close()
    throw err
  })
  if (config.demo) await seedDemo(started, config, logger, sims)
  const demo = config.demo ? streamDemoTenant(started.runtime, logger) : null
  await signalled
  demo?.cancel()
  await demo?.done.catch(() => {})
  await started.stop()
  await sims.close()
  return 0
}
