import { createHash, randomUUID } from 'node:crypto'
import { claimantId, Heartbeat, leaseHeld } from '../../common/jobs/lease.ts'
import { claimRow } from '../../common/jobs/lock.ts'
import type { Logger } from '../../common/logger.ts'
import { sleep as defaultSleep, type Sleep } from '../../common/retry.ts'
import {
  AdsApiError,
  AdsClient,
  chunk,
  MAX_ROWS_PER_REQUEST,
  type AudienceColumn,
  HourlyBudget,
  InvalidTokenError,
  PermissionDeniedError,
  RateLimitError,
  prepareUpload,
  rejectedItems,
  type AdsRetryOptions,
  type UploadBatch,
} from './ads-platform/index.ts'
import type { AudienceSyncConfig, AudienceSyncStore, ConfigWithToken } from './store.ts'
import { auditEvents } from './metrics.ts'

/** The permissions /debug_token must show before anything is synced (spec "Authentication"). */
export const REQUIRED_SCOPES = ['ads_management', 'ads_read', 'business_management'] as const

export interface SyncerOptions {
  store: AudienceSyncStore
  logger: Logger
  /** The platform: base url (version path appended by the client) and the application token of /debug_token. */
  ads: { baseUrl: string; version?: string; appAccessToken: string }
  /** A customer's change must be this old before it is uploaded (coalescing window). */
  settleMs: number
  /** Wait between two upload batches (spec: about 2 s). */
  pacingMs: number
  /** Rows per request (≤ 10,000). */
  maxRows?: number
  /** Rows of one config considered per cycle. */
  maxDeltaPerCycle?: number
  /** A token is checked again after this long. */
  tokenCheckMs?: number
  /** Dead-letters a batch the platform calls malformed (error 100). */
  deadLetter?: (c: ConfigWithToken, batch: { operation: string; batch_id: string; payload: unknown }, err: AdsApiError) => Promise<void>
  retry?: AdsRetryOptions
  sleep?: Sleep
  now?: () => number
  /** This process among the audience-sync processes sharing the store (a random id by default). */
  owner?: string
  /** A configuration's owner that has not written a heartbeat for this long is taken over (ms; default 20 s). */
  leaseMs?: number
}

/** The tenant was paused (its token is invalid or lacks a permission): no more calls for it in this cycle. */
class TenantPausedError extends Error {}
/** The configuration's audience was gone and is reset: this configuration stops for this cycle. */
class AudienceResetError extends Error {}

/** True when /debug_token says the token is expired (0 = never expires). */
export const tokenExpired = (expiresAt: number, nowMs: number) => expiresAt !== 0 && expiresAt * 1000 <= nowMs

/** Id of a batch: the configuration, the operation and exactly which customers, with their target state. */
export function batchId(configId: string, operation: 'add' | 'remove', customerIds: readonly number[]): string {
  const h = createHash('sha256').update(`${configId}|${operation}|${[...customerIds].sort((a, b) => a - b).join(',')}`).digest('hex')
  return h.slice(0, 32)
}

type Item = { customer_id: number; want: 0 | 1 }

/** Two hashed rows hold the same person when their non-empty columns hold the same digests (the schemas may differ in empty columns). */
function sameRow(schemaA: readonly string[], rowA: readonly string[], schemaB: readonly string[], rowB: readonly string[]): boolean {
  const pairs = (schema: readonly string[], row: readonly string[]) => schema.map((col, i) => `${col}=${row[i] ?? ''}`).filter((p) => !p.endsWith('=')).sort().join('|')
  return pairs(schemaA, rowA) === pairs(schemaB, rowB)
}

/**
 * The sync of every active configuration: checks the token, creates the audience once, and
 * uploads the difference between the segment and what the audience holds, batch by batch:
 * `pending` is recorded, the call made, then what the audience now holds is written, so a
 * restart resumes from the last batch that completed. Errors follow the spec: 190/200 pause the
 * tenant with an alert, 2650 pauses the configuration, 100 dead-letters the batch, 80004 (or the
 * client's hourly budget) waits for the window, 429/5xx are retried by the client and otherwise
 * tried again next cycle.
 */
export class AudienceSyncer {
  private readonly budget: HourlyBudget
  private readonly checked = new Map<string, number>()
  private readonly now: () => number
  private readonly sleep: Sleep
  private readonly owner: string
  private readonly leaseMs: number
  /** Configurations this syncer holds the lease of, with its last heartbeat. */
  private readonly leases = new Map<string, number>()

  constructor(private readonly o: SyncerOptions) {
    this.owner = o.owner ?? claimantId(randomUUID())
    this.leaseMs = o.leaseMs ?? 20_000
    this.now = o.now ?? Date.now
    this.sleep = o.sleep ?? defaultSleep
    this.budget = new HourlyBudget({ store: o.store, now: this.now })
  }

  client(token: string): AdsClient {
    return new AdsClient({ baseUrl: this.o.ads.baseUrl, version: this.o.ads.version, accessToken: token, appAccessToken: this.o.ads.appAccessToken, budget: this.budget, retry: { sleep: this.sleep, ...this.o.retry }, now: this.now })
  }

  /** One cycle over every active configuration; returns the rows uploaded. */
  async cycle(signal?: AbortSignal): Promise<number> {
    let rows = 0
    const paused = new Set<number>()
    for (const c of await this.o.store.activeConfigsWithTokens()) {
      if (signal?.aborted) break
      if (paused.has(c.tenant_id)) continue
      if (c.blocked_until !== null && c.blocked_until > this.now()) continue
      try {
        if (!(await this.holds(c))) continue
        rows += await this.syncConfig(c, signal)
      } catch (err) {
        if (await this.handle(c, err)) paused.add(c.tenant_id)
      }
    }
    return rows
  }

  /**
   * Whether this syncer may sync the configuration now: one process at a time does, under a lease
   * (common/jobs: a heartbeat at least every third of it, taken over once older than it). A
   * claim is written and read back; two claimants in the same instant may both go on for one
   * cycle, which re-checks before the audience is created and before every batch.
   */
  private async holds(c: AudienceSyncConfig): Promise<boolean> {
    const now = this.now()
    const beat = this.leases.get(c.config_id)
    if (beat !== undefined && now - beat < this.leaseMs / 3) return true
    const current = await this.o.store.lease(c.config_id)
    if (current && current.owner !== this.owner && leaseHeld(current.heartbeat_at, now, this.leaseMs)) {
      this.leases.delete(c.config_id)
      return false
    }
    const mine = await claimRow(
      { owner: this.owner, heartbeat_at: now },
      { write: (r) => this.o.store.writeLease(c.config_id, r.owner, r.heartbeat_at), read: () => this.o.store.lease(c.config_id), ours: (r) => r.owner === this.owner },
    )
    if (!mine) {
      this.leases.delete(c.config_id)
      return false
    }
    if (beat === undefined) this.o.logger.info({ tenantId: c.tenant_id, configId: c.config_id, owner: this.owner }, 'audience sync configuration taken')
    this.leases.set(c.config_id, now)
    return true
  }

  /** Gives up every lease this syncer holds, so another process takes its configurations over at once (on stop). */
  async release(): Promise<void> {
    for (const configId of this.leases.keys()) {
      // Only a lease still ours: another process may have taken it over while this one stalled.
      const current = await this.o.store.lease(configId).catch(() => null)
      if (current?.owner === this.owner) await this.o.store.writeLease(configId, this.owner, 0).catch(() => {})
    }
    this.leases.clear()
  }

  /** Maps a failure to the spec's action; true when the tenant was paused. */
  private async handle(c: ConfigWithToken, err: unknown, operation: 'sync' | 'read' = 'sync'): Promise<boolean> {
    const log = this.o.logger.child({ tenantId: c.tenant_id, configId: c.config_id })
    if (err instanceof TenantPausedError) return true
    if (err instanceof AudienceResetError) return false
    if (!(err instanceof AdsApiError)) {
      log.error({ err }, 'audience sync failed; tried again next cycle')
      return false
    }
    auditEvents.inc({ event: err.name })
    if (err instanceof RateLimitError) {
      log.warn({ retryAt: new Date(err.retryAt).toISOString(), source: err.source, operation }, 'ads rate limit: waiting for the window')
      // A read limit must not hold the uploads back: only upload and creation limits block the configuration.
      if (operation === 'sync') await this.o.store.updateConfig(c.tenant_id, c.config_id, (x) => ({ ...x, blocked_until: err.retryAt }))
      return false
    }
    if (err instanceof InvalidTokenError || err instanceof PermissionDeniedError) {
      const reason = err instanceof InvalidTokenError ? 'token_invalid' : `missing_permission:${err.permission ?? 'unknown'}`
      const message =
        err instanceof InvalidTokenError
          ? 'The ads access token is invalid or expired (error 190): sync paused until a new token is set'
          : `The ads access token lacks the ${err.permission ?? 'required'} permission (error 200): sync paused until the permission is granted`
      await this.pauseTenant(c, reason, message)
      return true
    }
    if (err.action === 'pause_tenant') {
      // 2650: this configuration's ad account does not exist.
      await this.o.store.updateConfig(c.tenant_id, c.config_id, (x) => ({ ...x, status: 'paused', paused_reason: 'ad_account_not_found' }))
      await this.o.store.alert(c.tenant_id, c.config_id, 'ad_account_not_found', `Ad account ${c.ad_account_id} does not exist (error 2650): sync of this configuration paused`)
      log.warn({ code: err.code }, 'ad account not found: configuration paused')
      return false
    }
    log.warn({ err: { name: err.name, code: err.code, status: err.httpStatus, message: err.message } }, 'audience sync call failed; tried again next cycle')
    return false
  }

  private async pauseTenant(c: ConfigWithToken, reason: string, message: string): Promise<void> {
    const n = await this.o.store.pauseTenant(c.tenant_id, reason)
    await this.o.store.alert(c.tenant_id, c.config_id, reason.split(':')[0]!, message)
    this.o.logger.warn({ tenantId: c.tenant_id, reason, configs: n }, 'audience sync paused for the tenant')
  }

  /**
   * /debug_token: valid, not expired and with the three permissions; checked at most every
   * tokenCheckMs. A rejected token pauses the tenant (TenantPausedError). /debug_token itself
   * failing (our application token is wrong, the platform is down) is ours to fix: logged and
   * tried again next cycle, never blamed on the tenant.
   */
  private async checkToken(c: ConfigWithToken): Promise<void> {
    const key = createHash('sha256').update(c.token).digest('hex')
    if ((this.checked.get(key) ?? 0) > this.now()) return
    let info
    try {
      info = await this.client(c.token).debugToken()
    } catch (err) {
      throw new Error(`/debug_token failed (check CDP_ADS_APP_ACCESS_TOKEN and the platform): ${(err as Error).message}`)
    }
    if (!info.is_valid || tokenExpired(info.expires_at, this.now())) {
      await this.pauseTenant(c, 'token_invalid', 'The ads access token is invalid or expired (/debug_token): sync paused until a new token is set')
      throw new TenantPausedError()
    }
    const missing = REQUIRED_SCOPES.filter((s) => !info.scopes.includes(s))
    if (missing.length) {
      await this.pauseTenant(c, `missing_permission:${missing.join(',')}`, `The ads access token lacks ${missing.join(', ')}: sync paused until granted`)
      throw new TenantPausedError()
    }
    this.checked.set(key, this.now() + (this.o.tokenCheckMs ?? 15 * 60_000))
  }

  private async ensureAudience(c: ConfigWithToken): Promise<string> {
    if (c.audience_id) return c.audience_id
    // Created once: another process may have taken the configuration (and created it) meanwhile.
    this.leases.delete(c.config_id)
    if (!(await this.holds(c))) throw new AudienceResetError()
    const stored = await this.o.store.getConfig(c.tenant_id, c.config_id)
    if (stored?.audience_id) return stored.audience_id
    let created
    try {
      created = await this.client(c.token).createCustomAudience(c.ad_account_id, {
        name: c.name,
        description: `CDP segment "${c.segment}" of tenant ${c.tenant_id} (kept in sync by the customer data platform)`,
        subtype: 'CUSTOM',
        customer_file_source: 'USER_PROVIDED_ONLY',
      })
    } catch (err) {
      // Refused as malformed: repeating it every cycle would only spend the 25 creations an hour.
      if (err instanceof AdsApiError && err.action === 'dead_letter_batch') {
        await this.o.store.updateConfig(c.tenant_id, c.config_id, (x) => ({ ...x, status: 'paused', paused_reason: 'audience_create_failed' }))
        await this.o.store.alert(c.tenant_id, c.config_id, 'audience_create_failed', `Creating the custom audience was refused (error ${err.code ?? 'unknown'}): ${err.message}`)
        throw new AudienceResetError()
      }
      throw err
    }
    await this.o.store.updateConfig(c.tenant_id, c.config_id, (x) => ({ ...x, audience_id: created.id }))
    this.o.logger.info({ tenantId: c.tenant_id, configId: c.config_id, audienceId: created.id }, 'custom audience created')
    return created.id
  }

  private async syncConfig(c: ConfigWithToken, signal?: AbortSignal): Promise<number> {
    const delta = await this.o.store.delta(c, this.o.settleMs, this.o.maxDeltaPerCycle ?? 100_000)
    if (!delta.length) return 0
    // The lease is kept alive while the sync runs, a slow upload (retries, timeouts) included, so
    // no other process takes the configuration over from a live holder; a lease found lost stops
    // the sync before its next batch.
    let lost = false
    const beat = new Heartbeat(Math.max(1_000, Math.floor(this.leaseMs / 3)), async () => {
      if (!(await this.holds(c))) lost = true
    }, (err) => this.o.logger.warn({ err, configId: c.config_id }, 'audience sync lease heartbeat failed'))
    try {
      return await this.syncDelta(c, delta, () => lost, signal)
    } finally {
      await beat.stop()
    }
  }

  private async syncDelta(c: ConfigWithToken, delta: Awaited<ReturnType<AudienceSyncStore['delta']>>, lost: () => boolean, signal?: AbortSignal): Promise<number> {
    await this.checkToken(c)
    const audienceId = await this.ensureAudience(c)
    const ids = await this.o.store.identifiers(c.tenant_id, delta.map((d) => d.customer_id))
    const current = (d: Item) => {
      const p = ids.get(d.customer_id)
      return { EMAIL: p?.email, PHONE: p?.phone, FN: p?.first_name, LN: p?.last_name }
    }
    const work: { operation: 'add' | 'remove'; batch: UploadBatch<Item> }[] = []
    /** Removals send exactly the rows that were added (the email or phone may have changed since), grouped by their schema. */
    const removeHeld = (items: Item[], held: Map<number, { schema: string[]; row: string[] }>) => {
      const bySchema = new Map<string, Item[]>()
      for (const d of items) {
        const key = held.get(d.customer_id)!.schema.join(',')
        bySchema.set(key, [...(bySchema.get(key) ?? []), d])
      }
      for (const [key, part] of bySchema) {
        for (const rows of chunk(part, this.o.maxRows ?? MAX_ROWS_PER_REQUEST)) {
          work.push({ operation: 'remove', batch: { index: work.length, items: rows, payload: { schema: key.split(',') as AudienceColumn[], data: rows.map((d) => held.get(d.customer_id)!.row) } } })
        }
      }
    }
    // Profiles whose members changed (a merge, a split): the held row is removed first, then the
    // profile's row now is added; when both are the same row, it is only recorded again.
    const refreshed: Item[] = []
    const refresh = delta.filter((d) => d.refresh)
    if (refresh.length) {
      const held = await this.o.store.heldRows(c, refresh.map((d) => d.customer_id))
      const same: { customer_id: number; member: 1; rejected: false; schema: string[]; row: string[] }[] = []
      const replace: Item[] = []
      for (const d of refresh) {
        const now = prepareUpload([d], current).batches[0]?.payload
        const was = held.get(d.customer_id)
        if (now && was && sameRow(now.schema, now.data[0]!, was.schema, was.row)) {
          same.push({ customer_id: d.customer_id, member: 1, rejected: false, schema: was.schema, row: was.row })
          continue
        }
        if (was) replace.push({ customer_id: d.customer_id, want: 0 })
        refreshed.push({ customer_id: d.customer_id, want: 1 })
      }
      if (same.length) await this.o.store.recordMembers(c, 'identifiers-unchanged', same)
      removeHeld(replace, held)
    }
    // Removals: members added without a kept row by their identifiers now.
    const removes = delta.filter((d) => d.want === 0)
    if (removes.length) {
      const held = await this.o.store.heldRows(c, removes.map((d) => d.customer_id))
      removeHeld(removes.filter((r) => held.has(r.customer_id)), held)
      const rest = removes.filter((r) => !held.has(r.customer_id))
      if (rest.length) for (const batch of prepareUpload(rest, current, { maxRows: this.o.maxRows }).batches) work.push({ operation: 'remove', batch })
    }
    // Adds last: the platform matches people by any identifier, so the removal of an account
    // absorbed by a merge (its e-mail is the profile's too) sent after the profile's new row would
    // take the person out again. One without any identifier is not sent and not recorded, so it is
    // tried again once its profile has an email, a phone or a name.
    const adds = [...delta.filter((d) => d.want === 1 && !d.refresh), ...refreshed]
    if (adds.length) for (const batch of prepareUpload(adds, current, { maxRows: this.o.maxRows }).batches) work.push({ operation: 'add', batch })
    const client = this.client(c.token)
    let sent = 0
    for (const [n, { operation, batch }] of work.entries()) {
      if (signal?.aborted) break
      if (n > 0 && this.o.pacingMs > 0) await this.sleep(this.o.pacingMs)
      // A lease lost meanwhile (this process stalled past it) stops here.
      if (lost() || (n > 0 && !(await this.holds(c)))) break
      await this.upload(c, client, audienceId, operation, batch)
      sent += batch.items.length
    }
    // The audience's size right after the upload (the platform counts at once), not at the next
    // status poll; only while the read budget allows, and a failed read waits for that poll.
    if (sent > 0 && !signal?.aborted) await this.readStatus({ ...c, audience_id: audienceId }).catch((err) => this.o.logger.warn({ tenant_id: c.tenant_id, config_id: c.config_id, err }, 'audience size read after the upload failed'))
    return sent
  }

  /** Reads one audience's size and delivery status when the read budget allows; false when it does not. */
  private async readStatus(c: ConfigWithToken & { audience_id: string }): Promise<boolean> {
    if (!(await this.budget.peek(c.token, 'read_audience')).allowed) return false
    const a = await this.client(c.token).getCustomAudience(c.audience_id)
    await this.o.store.recordStatus({
      tenant_id: c.tenant_id,
      config_id: c.config_id,
      audience_id: c.audience_id,
      approximate_count: a.approximate_count ?? null,
      delivery_code: a.delivery_status?.code ?? null,
      delivery_description: a.delivery_status?.description ?? null,
      source: 'poll',
    })
    return true
  }

  private async upload(c: ConfigWithToken, client: AdsClient, audienceId: string, operation: 'add' | 'remove', batch: UploadBatch<Item>): Promise<void> {
    const id = batchId(c.config_id, operation, batch.items.map((i) => i.customer_id))
    const base = { tenant_id: c.tenant_id, config_id: c.config_id, batch_id: id, audience_id: audienceId, operation, rows: batch.items.length, created_at: this.now() }
    await this.o.store.recordBatch({ ...base, status: 'pending' })
    let result
    try {
      result = operation === 'add' ? await client.addUsers(audienceId, batch.payload) : await client.removeUsers(audienceId, batch.payload)
    } catch (err) {
      if (err instanceof AdsApiError && err.code === 100 && /does not exist/i.test(err.message)) {
        // The audience was deleted outside the CDP: not a malformed batch. Start a new audience next cycle.
        await this.o.store.recordBatch({ ...base, status: 'failed', error: `${err.name}: ${err.message}` })
        await this.o.store.resetAudience(c)
        await this.o.store.alert(c.tenant_id, c.config_id, 'audience_missing', `Custom audience ${audienceId} no longer exists on the platform: a new one is created and filled`)
        throw new AudienceResetError()
      }
      if (err instanceof AdsApiError && err.action === 'dead_letter_batch') {
        // Error 100 (or an answer we cannot read): recorded and dead-lettered; the rows are held as
        // rejected so the same batch is not sent again until their membership changes.
        await this.o.store.recordBatch({ ...base, status: 'dead_letter', error: `${err.name}: ${err.message}` })
        await this.o.store.recordMembers(c, id, batch.items.map((i) => ({ customer_id: i.customer_id, member: i.want, rejected: true })))
        await this.o.deadLetter?.(c, { operation, batch_id: id, payload: batch.payload }, err)
        await this.o.store.alert(c.tenant_id, c.config_id, 'batch_dead_lettered', `Batch ${id} (${operation}, ${batch.items.length} rows) was refused as malformed (error ${err.code ?? 'unknown'}): ${err.message}`)
        return
      }
      // A rate-limit wait is not a failure of the batch (spec: wait for the window).
      await this.o.store.recordBatch({ ...base, status: err instanceof RateLimitError ? 'waiting' : 'failed', error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) })
      throw err
    }
    const rejected = rejectedItems(batch, result)
    const rejectedIds = new Set(rejected.items.map((i) => i.customer_id))
    await this.o.store.recordMembers(
      c,
      id,
      batch.items.map((item, k) => ({ customer_id: item.customer_id, member: item.want, rejected: rejectedIds.has(item.customer_id), schema: batch.payload.schema, row: batch.payload.data[k] })),
    )
    await this.o.store.recordBatch({
      ...base,
      status: 'done',
      num_received: result.num_received,
      num_invalid_entries: result.num_invalid_entries,
      invalid_entry_samples: result.invalid_entry_samples,
      rejected_customer_ids: [...rejectedIds],
    })
    auditEvents.inc({ event: `upload_${operation}` })
  }

  /** Reads each audience's size and delivery status (within the hourly read budget). */
  async pollStatus(): Promise<number> {
    let read = 0
    const paused = new Set<number>()
    for (const c of await this.o.store.activeConfigsWithTokens()) {
      // One process reads an audience: the one syncing it (the hourly read budget is the token's, shared).
      if (!c.audience_id || paused.has(c.tenant_id) || !this.leases.has(c.config_id)) continue
      try {
        if (await this.readStatus({ ...c, audience_id: c.audience_id })) read++
      } catch (err) {
        if (await this.handle(c, err, 'read')) paused.add(c.tenant_id)
      }
    }
    return read
  }
}
