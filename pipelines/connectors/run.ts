/**
 * The `connectors` role: polls the sync queue (schemas/clickhouse/007_integrations.sql) every
 * `pollMs`, queues recurring syncs, runs sync jobs (job.ts) against the external systems at
 * `endpoints`, publishes to the runtime's event log. stop() aborts the page in flight; the job
 * goes back to the queue with its checkpoint and the next runner resumes it.
 */
import { claimantId } from '../../common/jobs/lease.ts'
import type { Runtime } from '../../common/runtime/context.ts'
import type { RunningPipeline } from '../../common/runtime/pipeline.ts'
import type { SecretBox } from '../../common/secrets.ts'
import { IntegrationStore } from './store.ts'
import type { ConnectorEndpoints } from './sources/types.ts'
import { SyncQueue } from './queue.ts'
import { SyncRunner } from './runner.ts'
import type { MailSettings } from './notify-email.ts'

export interface ConnectorsDeps {
  secrets: SecretBox
  /** Runs the CDP analysis for a tenant after a sync published its events (wired to the processing service). */
  triggerAnalysis(tenantId: number): Promise<void>
  endpoints: ConnectorEndpoints
  /** Queue poll; default 5 s. */
  pollMs?: number
  /** Business clock (schedules, leases, windows); default Date.now. */
  now?: () => number
  /** Signs notifications of integrations that set no webhook_secret (CDP_CONNECTORS_WEBHOOK_SECRET). */
  webhookSecret?: string | null
  /** Longest sync attempt; default 600 s. */
  timeoutMs?: number
  /** Default 60 s. */
  leaseMs?: number
  /** Names this runner in job rows; default `<hostname>:<pid>:connectors`. */
  runnerId?: string
  /** Incremental windows start this long before the watermark; default 10 min. */
  overlapMs?: number
  /**
   * Let sync notifications go to loopback, private (RFC 1918), link-local, CGNAT and ULA addresses;
   * default false: a tenant's webhook_url must resolve to public addresses only (SSRF guard).
   * CDP_CONNECTORS_ALLOW_PRIVATE_WEBHOOKS; development turns it on for a local receiver.
   */
  allowPrivateWebhooks?: boolean
  /** The SMTP server for e-mail notifications (CDP_SMTP_URL, CDP_SMTP_FROM); default none. */
  mail?: MailSettings | null
  /** Transport to the external systems and webhooks; default global fetch (tests inject one). */
  fetch?: typeof fetch
  sleep?: (ms: number) => Promise<void>
}

export const DEFAULT_POLL_MS = 5_000
export const DEFAULT_SYNC_TIMEOUT_MS = 600_000
export const DEFAULT_LEASE_MS = 60_000

export async function runConnectors(rt: Runtime, deps: ConnectorsDeps): Promise<RunningPipeline & { runOnce(): Promise<number> }> {
  const logger = rt.logger.child({ role: 'connectors' })
  const now = deps.now ?? Date.now
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS
  const runner = new SyncRunner({
    queue: new SyncQueue(rt.store, now),
    integrations: new IntegrationStore(rt.store, deps.secrets, now),
    log: rt.log,
    codec: rt.codec,
    logger,
    endpoints: deps.endpoints,
    triggerAnalysis: deps.triggerAnalysis,
    webhookSecret: deps.webhookSecret ?? null,
    allowPrivateWebhooks: deps.allowPrivateWebhooks ?? false,
    mail: deps.mail ?? null,
    fetch: deps.fetch,
    sleep: deps.sleep,
    now,
    runnerId: deps.runnerId ?? claimantId('connectors'),
    timeoutMs: deps.timeoutMs ?? DEFAULT_SYNC_TIMEOUT_MS,
    overlapMs: deps.overlapMs ?? 10 * 60_000,
    heartbeatMs: Math.max(1000, Math.floor(leaseMs / 4)),
    leaseMs,
    maxJobsPerTick: 10,
  })
  const abort = new AbortController()
  let running = true
  let wake: (() => void) | null = null
  // Ticks never overlap: runOnce() from a test or an API hook waits for the loop's tick.
  let chain: Promise<unknown> = Promise.resolve()
  const runOnce = (): Promise<number> => {
    const next = chain.then(() => runner.tick(abort.signal))
    chain = next.catch(() => undefined)
    return next
  }
  // The first tick comes one poll after the start (runOnce() runs one now): what waits is queued, not lost.
  const loop = (async () => {
    while (running) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, deps.pollMs ?? DEFAULT_POLL_MS)
        wake = () => {
          clearTimeout(t)
          resolve()
        }
      })
      wake = null
      if (!running) break
      try {
        await runOnce()
      } catch (err) {
        logger.error({ err }, 'connectors tick failed; retrying at the next poll')
      }
    }
  })()
  logger.info({ poll_ms: deps.pollMs ?? DEFAULT_POLL_MS }, 'connectors started')
  return {
    name: 'connectors',
    isRunning: () => running,
    runOnce,
    stop: async () => {
      running = false
      abort.abort()
      ;(wake as (() => void) | null)?.()
      await loop
      await chain // a tick started by runOnce() (an API hook) finishes its writes before the store closes
      logger.info('connectors stopped')
    },
  }
}
