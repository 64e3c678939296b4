/**
 * One attempt of a claimed sync job, following the spec's steps: validate the stored credentials;
 * fetch the entities for the window from the external system page by page; map; check integrity
 * (duplicates, totals, unknown customers, counts); publish customer then order events to the log;
 * trigger the CDP analysis for the tenant; notify the webhook.
 *
 * Resumable: after each page is published the checkpoint (entity, cursor, counters) is written
 * with the job, so a killed attempt resumes at the next page. Event ids are deterministic, so a
 * page published twice (killed between publishing and checkpointing, or a full re-run) yields
 * identical events that every consumer deduplicates: nothing is counted twice.
 */
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { Logger } from '../../common/logger.ts'
import { publishEvents } from '../ingest/index.ts'
import type { IntegrationRecord, IntegrationStore } from './store.ts'
import type { HttpOptions } from './sources/http.ts'
import { createSyncSource, type SourcePage, type SyncWindow } from './sources/source.ts'
import type { ConnectorEndpoints, Entity } from './sources/types.ts'
import { describeFailure, failureBody, seconds, SyncInterruptedError, SyncTimeoutError } from './errors.ts'
import { orderProblem, sample, sanitizeCustomer } from './integrity.ts'
import { notifyWebhook } from './notify.ts'
import { notifyEmail, type MailSettings } from './notify-email.ts'
import { Heartbeat } from '../../common/jobs/lease.ts'
import { emptyStats, type Checkpoint, type JobStats, type Notification, type SyncJob, type SyncQueue } from './queue.ts'

export interface JobDeps {
  queue: SyncQueue
  integrations: IntegrationStore
  log: EventLog
  codec: EventCodec
  logger: Logger
  endpoints: ConnectorEndpoints
  triggerAnalysis(tenantId: number): Promise<void>
  /** Signs notifications of integrations without a webhook_secret of their own. */
  webhookSecret: string | null
  /** The deployment's SMTP server for e-mail notifications (null: none configured). */
  mail?: MailSettings | null
  /** Notifications may go to private, loopback and link-local addresses (development only). */
  allowPrivateWebhooks?: boolean
  /** Transport of the connectors and the webhook (tests inject one). */
  fetch?: typeof fetch
  sleep?: (ms: number) => Promise<void>
  now: () => number
  runnerId: string
  /** Longest attempt; default 600 s (the spec's SYNC_TIMEOUT shows 600s). */
  timeoutMs: number
  /** An incremental window starts this long before the watermark (late-arriving changes). */
  overlapMs: number
  /** Heartbeat period while an attempt runs. */
  heartbeatMs: number
}

/** Retries wait for the platform's retry_after, else back off 30 s, 1 min, 2 min … up to 10 min. */
const backoffMs = (failures: number) => Math.min(600_000, 30_000 * 2 ** Math.max(0, failures - 1))

export async function executeJob(claimed: SyncJob, deps: JobDeps, signal: AbortSignal): Promise<SyncJob> {
  const { queue, logger } = deps
  const integration = await deps.integrations.get(claimed.integration_id)
  let job = claimed
  if (!integration || integration.deleted_at !== null || !integration.is_active) {
    const error = !integration || integration.deleted_at !== null
      ? { error: 'INTEGRATION_DELETED', message: 'the integration was deleted before the sync ran', solution: 'nothing to do' }
      : { error: 'INTEGRATION_INACTIVE', message: 'the integration was deactivated before the sync ran', solution: 'activate it (PUT is_active: true) and sync again' }
    job = { ...job, status: 'cancelled', finished_at: deps.now(), runner_id: '', error_code: error.error, error }
    await queue.write(job)
    return job
  }
  const startedAt = deps.now()
  const t0 = performance.now()
  const elapsed = () => performance.now() - t0
  const log = logger.child({ integration_id: job.integration_id, sync_id: job.sync_id, attempt: job.attempt })
  await queue.writeRun({ integration_id: job.integration_id, sync_id: job.sync_id, attempt: job.attempt, tenant_id: job.tenant_id, integration_type: integration.integration_type, status: 'running', started_at: startedAt, finished_at: null, duration_ms: 0, error: null, stats: null })

  // The heartbeat keeps the claim alive while a page is slow; it writes the job as it stands,
  // and only while the job is still ours (a runner that stalled must not undo a takeover).
  const heartbeat = new Heartbeat(deps.heartbeatMs, async () => {
    if (await owns(job, deps)) await queue.write({ ...job, heartbeat_at: deps.now() })
  })
  const stopHeartbeat = () => heartbeat.stop()
  const finishRun = (status: 'success' | 'failed' | 'interrupted', stats: JobStats | null, error: SyncJob['error']) =>
    queue.writeRun({ integration_id: job.integration_id, sync_id: job.sync_id, attempt: job.attempt, tenant_id: job.tenant_id, integration_type: integration.integration_type, status, started_at: startedAt, finished_at: deps.now(), duration_ms: Math.round(elapsed()), error, stats })

  try {
    const creds = await deps.integrations.credentials(job.integration_id)
    const http: HttpOptions = { fetch: deps.fetch, sleep: deps.sleep, signal }
    const source = createSyncSource(integration.integration_type, creds, { api_version: integration.configuration.api_version, site_id: integration.configuration.site_id ?? undefined }, { tenantId: job.tenant_id, endpoints: deps.endpoints, http, now: deps.now })
    await source.verify()
    let cp: Checkpoint = job.checkpoint ?? (await initialCheckpoint(job, deps))
    job = { ...job, checkpoint: cp }
    const run = new PageProcessor(job, deps)

    while (cp.entity_index < job.entities.length) {
      if (signal.aborted) throw new SyncInterruptedError('the runner is stopping')
      if (elapsed() > deps.timeoutMs) throw new SyncTimeoutError(deps.timeoutMs)
      await ensureOwner(job, deps)
      const entity = job.entities[cp.entity_index]!
      const window: SyncWindow = { from: cp.window_from[entity] ?? null, to: cp.window_to }
      const first = cp.cursor === null
      const page = await source.page(entity, window, cp.cursor, integration.configuration.batch_size, run.products)
      // The page counts into a copy: the heartbeat may write the job while the page is being
      // published, and the committed checkpoint must pair the old cursor with the old counts (a
      // resumed attempt replays the page and would otherwise count it twice).
      const stats = structuredClone(cp.stats)
      await run.process(entity, page, first, stats)
      const last = page.next === null
      if (last) run.closeEntity(entity, stats)
      const next: Checkpoint = { ...cp, stats, entity_index: last ? cp.entity_index + 1 : cp.entity_index, cursor: last ? null : page.next }
      // A runner that stalled past its lease lost the job: it must not move the checkpoint back.
      await ensureOwner(job, deps)
      cp = next
      job = { ...job, checkpoint: cp, stats: cp.stats, heartbeat_at: deps.now() }
      await queue.write(job)
    }

    await ensureOwner(job, deps)
    await updateWatermarks(job, cp, deps)
    cp = { ...cp, stats: structuredClone(cp.stats) }
    const published = cp.stats.events_published.customers + cp.stats.events_published.orders
    if (published > 0) {
      try {
        await deps.triggerAnalysis(job.tenant_id)
        cp.stats.analysis_triggered = true
      } catch (err) {
        cp.stats.analysis_triggered = false
        cp.stats.analysis_error = (err as Error).message
        log.warn({ err }, 'the sync published its events but could not trigger the analysis')
      }
    }
    await stopHeartbeat()
    await ensureOwner(job, deps)
    job = { ...job, status: 'success', runner_id: '', finished_at: deps.now(), checkpoint: cp, stats: cp.stats, error_code: '', error: null }
    await queue.write(job)
    await finishRun('success', cp.stats, null)
    log.info({ ms: Math.round(elapsed()), published: cp.stats.events_published, integrity: summary(cp.stats) }, 'sync finished')
    return await notify(job, integration, deps, 'sync.completed', elapsed())
  } catch (err) {
    await stopHeartbeat()
    const stats = job.checkpoint?.stats ?? null
    // Another runner took the job over while this one stalled: its state is not ours to write.
    if (!(await owns(job, deps).catch(() => false))) {
      await finishRun('interrupted', stats, null)
      log.warn('sync taken over by another runner; this attempt stops')
      return job
    }
    if (err instanceof SyncInterruptedError || signal.aborted) {
      await finishRun('interrupted', stats, null)
      job = { ...job, status: 'queued', runner_id: '', not_before: deps.now() }
      await queue.write(job)
      log.info('sync interrupted; it resumes from its checkpoint')
      return job
    }
    const f = describeFailure(err)
    const body = failureBody(f)
    await finishRun('failed', stats, body)
    const failures = job.failures + 1
    if (f.retriable && failures < job.max_attempts) {
      const wait = f.retry_after !== undefined ? f.retry_after * 1000 : backoffMs(failures)
      job = { ...job, status: 'queued', runner_id: '', failures, not_before: deps.now() + wait, error_code: f.error, error: body }
      await queue.write(job)
      log.warn({ error: f.error, detail: f.message, retry_in_ms: wait }, 'sync attempt failed; it will be retried')
      return job
    }
    job = { ...job, status: 'failed', runner_id: '', failures, finished_at: deps.now(), error_code: f.error, error: body }
    await queue.write(job)
    log.warn({ error: f.error, detail: f.message }, 'sync failed')
    return await notify(job, integration, deps, 'sync.failed', elapsed())
  }
}

/** The window is fixed on the first attempt, so every resume reads the same listing. */
async function initialCheckpoint(job: SyncJob, deps: JobDeps): Promise<Checkpoint> {
  const now = deps.now()
  const to = job.date_to !== null ? Math.min(job.date_to, now) : now
  const marks = job.sync_type === 'incremental' ? await deps.queue.watermarks(job.integration_id) : new Map<Entity, number>()
  const window_from: Checkpoint['window_from'] = {}
  for (const e of job.entities) {
    const w = marks.get(e)
    window_from[e] = job.sync_type === 'incremental' ? (w === undefined ? null : Math.max(0, w - deps.overlapMs)) : job.date_from
  }
  return { window_to: to, window_from, entity_index: 0, cursor: null, stats: emptyStats() }
}

/** A window that starts at or before an entity's watermark and ends after it moves the watermark. */
async function updateWatermarks(job: SyncJob, cp: Checkpoint, deps: JobDeps): Promise<void> {
  const marks = await deps.queue.watermarks(job.integration_id)
  const next: Partial<Record<Entity, number>> = {}
  for (const e of job.entities) {
    const from = cp.window_from[e] ?? null
    const w = marks.get(e)
    if ((from === null || (w !== undefined && from <= w)) && cp.window_to > (w ?? -1)) next[e] = cp.window_to
  }
  await deps.queue.setWatermarks(job.integration_id, job.sync_id, next)
}

/** Whether the job is still running under this runner and this attempt. */
async function owns(job: SyncJob, deps: JobDeps): Promise<boolean> {
  const current = await deps.queue.get(job.integration_id, job.sync_id)
  return !!current && current.runner_id === deps.runnerId && current.status === 'running' && current.attempt === job.attempt
}

async function ensureOwner(job: SyncJob, deps: JobDeps): Promise<void> {
  if (!(await owns(job, deps))) throw new SyncInterruptedError('another runner took the job over')
}

const summary = (s: JobStats) => ({ duplicates: s.integrity.duplicates, total_mismatches: s.integrity.total_mismatches, unknown_customers: s.integrity.unknown_customers, invalid_records: s.integrity.invalid_records })

/** Integrity checks and publishing of one page at a time, counted into the stats `process` is given (the next checkpoint's). */
class PageProcessor {
  /** SKU → product name, from the products pages (fills order lines that come without a name). */
  readonly products = new Map<string, string>()
  private readonly seenOrders = new Set<string>()
  private readonly unknownSeen = new Set<string>()

  /** The stats of the page being processed. */
  private stats: JobStats = emptyStats()

  constructor(private readonly job: SyncJob, private readonly deps: JobDeps) {}

  async process(entity: Entity, page: SourcePage, firstPage: boolean, stats: JobStats): Promise<void> {
    this.stats = stats
    const s = (this.stats.entities[entity] ??= { pages: 0, received: 0, expected: null, published: 0 })
    s.pages++
    s.received += page.received
    if (firstPage) s.expected = page.total
    for (const bad of page.invalid) {
      this.stats.integrity.invalid_records++
      sample(this.stats, 'invalid_records', { id: bad.externalId, reason: bad.reason })
    }
    if (entity === 'products') {
      for (const p of page.products) this.products.set(p.sku, p.name)
      s.published += page.products.length
    } else if (entity === 'customers') {
      const events: CustomerUpserted[] = []
      const remember: { external_id: string; customer_id: number }[] = []
      for (const c of page.customers) {
        const ok = sanitizeCustomer(c.event)
        if (ok.ok) {
          events.push(ok.event)
          remember.push({ external_id: c.externalId, customer_id: c.event.customer_id })
        } else {
          this.stats.integrity.invalid_records++
          sample(this.stats, 'invalid_records', { id: c.externalId, reason: ok.reason })
        }
      }
      await this.publishCustomers(events, remember)
      s.published += events.length
    } else {
      s.published += await this.processOrders(page)
    }
  }

  /** Orders: drop duplicates and invalid ones, publish unknown buyers' profiles first, then the orders' events. */
  private async processOrders(page: SourcePage): Promise<number> {
    const now = this.deps.now()
    const fresh = []
    for (const o of page.orders) {
      if (this.seenOrders.has(o.externalId)) {
        this.stats.integrity.duplicates++
        sample(this.stats, 'duplicates', o.externalId)
        continue
      }
      this.seenOrders.add(o.externalId)
      const problem = orderProblem(o, now)
      if (problem) {
        this.stats.integrity.invalid_records++
        sample(this.stats, 'invalid_records', { id: o.externalId, reason: problem })
        continue
      }
      if (o.totalMismatch) {
        this.stats.integrity.total_mismatches++
        sample(this.stats, 'total_mismatches', o.externalId)
      }
      fresh.push(o)
    }
    const buyers = [...new Set(fresh.map((o) => o.customerExternalId))]
    const known = await this.deps.queue.knownCustomers(this.job.integration_id, buyers)
    const profiles: CustomerUpserted[] = []
    const remember: { external_id: string; customer_id: number }[] = []
    for (const o of fresh) {
      if (known.has(o.customerExternalId) || this.unknownSeen.has(o.customerExternalId)) continue
      this.unknownSeen.add(o.customerExternalId)
      this.stats.integrity.unknown_customers++
      sample(this.stats, 'unknown_customers', o.customerExternalId)
      const p = o.profile ? sanitizeCustomer(o.profile) : null
      if (p?.ok) {
        profiles.push(p.event)
        remember.push({ external_id: o.customerExternalId, customer_id: o.customerId })
      }
    }
    await this.publishCustomers(profiles, remember)
    const events: OrderEvent[] = fresh.flatMap((o) => o.events)
    await publishEvents(this.deps.log, this.deps.codec, 'orders', events)
    this.stats.events_published.orders += events.length
    return fresh.length
  }

  private async publishCustomers(events: CustomerUpserted[], remember: { external_id: string; customer_id: number }[]): Promise<void> {
    if (!events.length) return
    await publishEvents(this.deps.log, this.deps.codec, 'customers', events)
    this.stats.events_published.customers += events.length
    await this.deps.queue.rememberCustomers(this.job.integration_id, this.job.tenant_id, remember)
  }

  /** The platform's count of a listing against what was read (an entity read across resumes counts every page once). */
  closeEntity(entity: Entity, stats: JobStats): void {
    this.stats = stats
    const s = this.stats.entities[entity]
    if (s && s.expected !== null && s.expected !== s.received && !this.stats.integrity.count_mismatches.includes(entity)) this.stats.integrity.count_mismatches.push(entity)
  }
}

async function notify(job: SyncJob, integration: IntegrationRecord, deps: JobDeps, event: 'sync.completed' | 'sync.failed', ms: number): Promise<SyncJob> {
  // What both notifications say of the sync.
  const about = { sync_id: job.sync_id, integration_id: job.integration_id, tenant_id: job.tenant_id, integration_type: integration.integration_type, status: job.status, duration: seconds(ms) }
  const [webhook, email] = await Promise.all([
    notifyByWebhook(job, integration, deps, event, about),
    notifyEmail(deps.mail ?? null, integration.configuration.notification_emails ?? [], { event, ...about, published: job.stats?.events_published ?? null, error: job.error }, { sleep: deps.sleep, now: deps.now }),
  ])
  if (email.status === 'failed') deps.logger.warn({ integration_id: job.integration_id, sync_id: job.sync_id, error: email.error }, 'sync e-mail not delivered')
  const out = { ...job, notification: { ...webhook, email } }
  await deps.queue.write(out)
  return out
}

async function notifyByWebhook(job: SyncJob, integration: IntegrationRecord, deps: JobDeps, event: 'sync.completed' | 'sync.failed', about: Record<string, unknown>): Promise<Notification> {
  const c = integration.configuration
  let notification: Notification
  if (!c.webhook_url || !c.webhook_notifications) {
    notification = { status: 'skipped', url: c.webhook_url, http_status: null, attempts: 0, signed: false, at: new Date(deps.now()).toISOString() }
  } else {
    // The deployment's secret signs only for integrations without one of their own: an own secret
    // that cannot be decrypted (a key rotated away, a damaged row) fails the notification instead
    // of signing it with a key the receiver does not expect.
    let secret: string | null = null
    let secretError: string | null = null
    try {
      secret = (await deps.integrations.webhookSecret(job.integration_id)) ?? deps.webhookSecret
    } catch (err) {
      secretError = (err as Error).message
    }
    if (secretError !== null) {
      deps.logger.error({ integration_id: job.integration_id, sync_id: job.sync_id, err_message: secretError }, 'the integration webhook secret cannot be decrypted; notification not sent')
      notification = { status: 'failed', url: c.webhook_url, http_status: null, attempts: 0, signed: false, at: new Date(deps.now()).toISOString(), error: 'the integration webhook_secret cannot be decrypted (set it again); the notification was not sent' }
    } else notification = await notifyWebhook(
      c.webhook_url,
      event,
      {
        ...about,
        sync_type: job.sync_type,
        entities: job.entities,
        window: job.checkpoint ? { from: job.checkpoint.window_from, to: new Date(job.checkpoint.window_to).toISOString() } : null,
        queued_at: new Date(job.queued_at).toISOString(),
        finished_at: job.finished_at === null ? null : new Date(job.finished_at).toISOString(),
        attempts: job.attempt,
        stats: job.stats,
        error: job.error,
      },
      secret,
      { fetch: deps.fetch, sleep: deps.sleep, now: deps.now, allowPrivate: deps.allowPrivateWebhooks ?? false },
    )
    if (notification.status === 'failed') deps.logger.warn({ integration_id: job.integration_id, sync_id: job.sync_id, http_status: notification.http_status, error: notification.error }, 'sync notification not delivered')
  }
  return notification
}
