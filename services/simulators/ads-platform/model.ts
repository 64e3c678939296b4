/**
 * The simulator's state: tokens, ad accounts, audiences and their hashed members, per-hour call
 * counters, faults, the request log and webhook deliveries. No HTTP here; app.ts maps routes onto
 * these methods and tests can call them directly (through `state`).
 */
import { drawFault } from '../shared/faults.ts'
import type { LoggedRequest } from '../shared/request-log.ts'
import { adAccountNotFound, invalidParameter, invalidToken, permissionDenied, rateLimited, unknownObject } from './graph-error.ts'
import { checkPayload, type Member } from './upload.ts'
import { MemoryRateLimiter, slidingWindow } from '../../../common/rate-limit.ts'

export const SCOPES = ['ads_management', 'ads_read', 'business_management'] as const
export type LimitedOperation = 'create_audience' | 'upload_users' | 'read_audience'

export interface SeedToken {
  token: string
  /** Default: the three scopes of the spec. */
  scopes?: string[]
  /** Unix seconds; default 60 days from now (a long-lived token); null = never expires. */
  expiresAt?: number | null
  /** Ids of the ad accounts this token sees; default all. */
  adAccounts?: string[]
}

export interface SeedAdAccount {
  /** `act_<number>` */
  id: string
  name?: string
  account_status?: number
  currency?: string
  timezone_name?: string
  business?: { id: string; name: string } | null
}

export interface Faults {
  /** Share of API requests answered HTTP 429 (0..1). */
  rate429: number
  /** Share of API requests answered HTTP 500 (0..1). */
  rate500: number
  /** Added to every API request. */
  latencyMs: number
}

export interface DeliveryStatus {
  code: number
  description: string
}

export interface RequestLogEntry extends LoggedRequest {
  /** Path below the version root, no query. */
  path: string
  /** `error.code` of an error answer. */
  errorCode: number | null
  /** SHA-256 hex of the raw request body; null without a body. */
  bodyDigest: string | null
  /** `payload.data.length` of user uploads and removals. */
  rows: number | null
  /** True when the call changed state (an upload applied, an audience created or deleted). */
  applied: boolean
  /** Set when the answer was an injected fault. */
  fault: 429 | 500 | null
}

export interface WebhookDelivery {
  time: number
  url: string
  audienceId: string
  body: string
  signature: string
  status: number | null
  error: string | null
}

interface TokenRecord {
  token: string
  scopes: string[]
  /** Unix seconds; null = never. */
  expiresAt: number | null
  adAccounts: Set<string> | null
}

interface AudienceRecord {
  id: string
  accountId: string
  name: string
  subtype: string
  description: string
  customer_file_source: string
  createdMs: number
  updatedMs: number
  members: Map<string, Member>
  statusOverride: DeliveryStatus | null
  deleted: boolean
}

export interface AudienceView {
  id: string
  account_id: string
  name: string
  subtype: string
  description: string
  customer_file_source: string
  approximate_count: number
  delivery_status: DeliveryStatus
  time_created: string
  time_updated: string
  deleted: boolean
}

export interface ModelOptions {
  appId: string
  appName: string
  appSecret: string
  limits: Record<LimitedOperation, number>
  windowMs: number
  maxRows: number
  maxInvalidSamples: number
  now: () => number
  random: () => number
}

export const READY: DeliveryStatus = { code: 200, description: 'This audience is ready for use.' }
// Not in the spec (it shows 200 only): what an empty audience reports here.
export const TOO_SMALL: DeliveryStatus = { code: 300, description: 'This audience is too small to use.' }

const CUSTOMER_FILE_SOURCES = ['USER_PROVIDED_ONLY', 'PARTNER_PROVIDED_ONLY', 'BOTH_USER_AND_PARTNER_PROVIDED']

/** `YYYY-MM-DDThh:mm:ss+0000` */
export function graphTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}+0000`
}

export class AdsPlatformModel {
  readonly requestLog: RequestLogEntry[] = []
  readonly webhookLog: WebhookDelivery[] = []
  faults: Faults = { rate429: 0, rate500: 0, latencyMs: 0 }
  /** Statuses (429 or 500) answered to the next API requests, one each, before the random faults. */
  readonly queuedFaults: (429 | 500)[] = []
  private readonly tokens = new Map<string, TokenRecord>()
  private readonly accounts = new Map<string, Required<SeedAdAccount>>()
  private readonly audiences = new Map<string, AudienceRecord>()
  /** The hourly allowance per token and operation. */
  private readonly calls = new MemoryRateLimiter({ algorithm: slidingWindow, maxKeys: 10_000 })
  private audienceSeq = 0
  private sessionSeq = 0

  constructor(readonly opts: ModelOptions) {}

  /** `<app id>|<app secret>`: the application access token `/debug_token` wants. */
  get appAccessToken(): string {
    return `${this.opts.appId}|${this.opts.appSecret}`
  }

  // ---- seeding and knobs -------------------------------------------------------------------

  addToken(seed: SeedToken): void {
    if (!seed.token) throw new TypeError('a token needs a value')
    const expiresAt = seed.expiresAt === undefined ? Math.floor(this.opts.now() / 1000) + 60 * 86_400 : seed.expiresAt
    this.tokens.set(seed.token, {
      token: seed.token,
      scopes: [...(seed.scopes ?? SCOPES)],
      expiresAt,
      adAccounts: seed.adAccounts ? new Set(seed.adAccounts) : null,
    })
  }

  hasToken(token: string): boolean {
    return this.tokens.has(token)
  }

  /** Makes the token expire now: every call with it answers 190 from here on. */
  expireToken(token: string): void {
    const t = this.tokens.get(token)
    if (!t) throw new Error(`unknown token`)
    t.expiresAt = Math.floor(this.opts.now() / 1000) - 1
  }

  setScopes(token: string, scopes: string[]): void {
    const t = this.tokens.get(token)
    if (!t) throw new Error(`unknown token`)
    t.scopes = [...scopes]
  }

  addAdAccount(seed: SeedAdAccount): void {
    if (!/^act_\d+$/.test(seed.id)) throw new TypeError(`ad account ids have the form act_<number>, got '${seed.id}'`)
    this.accounts.set(seed.id, {
      id: seed.id,
      name: seed.name ?? `Simulated account ${seed.id.slice(4)}`,
      account_status: seed.account_status ?? 1,
      currency: seed.currency ?? 'USD',
      timezone_name: seed.timezone_name ?? 'America/Argentina/Buenos_Aires',
      business: seed.business === undefined ? { id: `9${seed.id.slice(4)}`, name: 'Simulated business' } : seed.business,
    })
  }

  setFaults(faults: Partial<Faults>): Faults {
    for (const k of ['rate429', 'rate500'] as const) {
      const v = faults[k]
      if (v !== undefined && !(v >= 0 && v <= 1)) throw new RangeError(`${k} must be between 0 and 1`)
    }
    if (faults.latencyMs !== undefined && !(faults.latencyMs >= 0)) throw new RangeError('latencyMs must be >= 0')
    this.faults = { ...this.faults, ...faults }
    if (this.faults.rate429 + this.faults.rate500 > 1) throw new RangeError('rate429 + rate500 must be <= 1')
    return this.faults
  }

  /** The next API requests answer these statuses, one each (deterministic faults for tests). */
  queueFaults(statuses: (429 | 500)[]): void {
    this.queuedFaults.push(...statuses)
  }

  /** The fault for the next API request, if any. */
  nextFault(): 429 | 500 | null {
    const queued = this.queuedFaults.shift()
    if (queued) return queued
    return drawFault(this.faults, this.opts.random)
  }

  resetLimits(): void {
    this.calls.clear()
  }

  clearRequestLog(): void {
    this.requestLog.length = 0
  }

  // ---- authentication ------------------------------------------------------------------------

  /** The token record behind a bearer token, or the 190 the platform answers. */
  authenticate(token: string | null): TokenRecord {
    if (!token) throw invalidToken('An active access token must be used to query information about the current user.')
    const t = this.tokens.get(token)
    if (!t) throw invalidToken('Invalid OAuth access token - Cannot parse access token')
    if (this.isExpired(t)) throw invalidToken(`Error validating access token: Session has expired on ${new Date(t.expiresAt! * 1000).toUTCString()}.`)
    return t
  }

  requireScope(t: TokenRecord, scope: (typeof SCOPES)[number], what: string): void {
    if (!t.scopes.includes(scope)) throw permissionDenied(scope, what)
  }

  /** Counts one call of `op` for the token; 80004 when the hour's allowance is used up. */
  countCall(t: TokenRecord, op: LimitedOperation): void {
    const d = this.calls.take(`${op}:${t.token}`, { limit: this.opts.limits[op], windowMs: this.opts.windowMs }, this.opts.now())
    if (!d.allowed) throw rateLimited()
  }

  private isExpired(t: TokenRecord): boolean {
    return t.expiresAt !== null && t.expiresAt * 1000 <= this.opts.now()
  }

  // ---- endpoint 1 ----------------------------------------------------------------------------

  debugToken(appToken: string | null, inputToken: string | null): Record<string, unknown> {
    if (appToken !== this.appAccessToken) throw invalidToken('Invalid OAuth access token - Cannot parse access token')
    if (!inputToken) throw invalidParameter('The parameter input_token is required')
    const t = this.tokens.get(inputToken)
    const base = { app_id: this.opts.appId, type: 'USER', application: this.opts.appName }
    if (!t) return { data: { ...base, expires_at: 0, is_valid: false, scopes: [], error: { code: 190, message: 'Invalid OAuth access token.' } } }
    return { data: { ...base, expires_at: t.expiresAt ?? 0, is_valid: !this.isExpired(t), scopes: [...t.scopes] } }
  }

  // ---- endpoints 2 and 3 ---------------------------------------------------------------------

  adAccount(t: TokenRecord, id: string): Required<SeedAdAccount> {
    const a = /^act_\d+$/.test(id) ? this.accounts.get(id) : undefined
    // An account the token cannot see is answered like one that does not exist.
    if (!a || (t.adAccounts && !t.adAccounts.has(id))) throw adAccountNotFound(id)
    return a
  }

  adAccountsOf(t: TokenRecord): Required<SeedAdAccount>[] {
    return [...this.accounts.values()].filter((a) => !t.adAccounts || t.adAccounts.has(a.id))
  }

  // ---- endpoints 4, 5, 7 ---------------------------------------------------------------------

  createAudience(t: TokenRecord, accountId: string, body: Record<string, unknown>): { id: string; success: true } {
    this.adAccount(t, accountId)
    const { name, subtype = 'CUSTOM', description = '', customer_file_source = 'USER_PROVIDED_ONLY' } = body
    if (typeof name !== 'string' || !name.trim()) throw invalidParameter('The parameter name is required')
    if (subtype !== 'CUSTOM') throw invalidParameter(`Param subtype must be one of {CUSTOM}, got ${JSON.stringify(subtype)}`)
    if (typeof description !== 'string') throw invalidParameter('Param description must be a string')
    if (typeof customer_file_source !== 'string' || !CUSTOMER_FILE_SOURCES.includes(customer_file_source)) {
      throw invalidParameter(`Param customer_file_source must be one of {${CUSTOMER_FILE_SOURCES.join(', ')}}`)
    }
    const now = this.opts.now()
    const id = `2385${String(++this.audienceSeq + 1_000_000_000_000).padStart(13, '0')}`
    this.audiences.set(id, {
      id,
      accountId,
      name,
      subtype,
      description,
      customer_file_source,
      createdMs: now,
      updatedMs: now,
      members: new Map(),
      statusOverride: null,
      deleted: false,
    })
    return { id, success: true }
  }

  /** The live audience `id` as the token may see it, or error 100. */
  audienceFor(t: TokenRecord, id: string, method: string): AudienceRecord {
    const a = this.audiences.get(id)
    if (!a || a.deleted || (t.adAccounts && !t.adAccounts.has(a.accountId))) throw unknownObject(id, method)
    return a
  }

  deleteAudience(t: TokenRecord, id: string): { success: true } {
    const a = this.audienceFor(t, id, 'DELETE')
    a.deleted = true
    a.updatedMs = this.opts.now()
    return { success: true }
  }

  // ---- endpoint 6 and the removal ------------------------------------------------------------

  /** Applies the valid rows; returns the upload result and whether the delivery status changed. */
  upload(
    t: TokenRecord,
    id: string,
    rawPayload: unknown,
    mode: 'add' | 'remove',
  ): { result: Record<string, unknown>; statusChanged: boolean } {
    const a = this.audienceFor(t, id, mode === 'add' ? 'POST' : 'DELETE')
    const checked = checkPayload(rawPayload, this.opts.maxRows, this.opts.maxInvalidSamples)
    const before = this.deliveryStatusOf(a).code
    for (const row of checked.rows) {
      if (mode === 'add') a.members.set(row.key, row.member)
      else a.members.delete(row.key)
    }
    a.updatedMs = this.opts.now()
    return {
      result: {
        audience_id: a.id,
        session_id: String(5_000_000_000_000_000 + ++this.sessionSeq),
        num_received: checked.received,
        num_invalid_entries: checked.invalid,
        invalid_entry_samples: checked.samples,
      },
      statusChanged: this.deliveryStatusOf(a).code !== before,
    }
  }

  // ---- views ---------------------------------------------------------------------------------

  deliveryStatusOf(a: AudienceRecord): DeliveryStatus {
    return a.statusOverride ?? (a.members.size > 0 ? READY : TOO_SMALL)
  }

  /** Overrides the computed delivery status (null: back to computed). */
  setDeliveryStatus(id: string, status: DeliveryStatus | null): void {
    const a = this.audiences.get(id)
    if (!a) throw new Error(`unknown audience ${id}`)
    a.statusOverride = status
  }

  view(a: AudienceRecord): AudienceView {
    return {
      id: a.id,
      account_id: a.accountId,
      name: a.name,
      subtype: a.subtype,
      description: a.description,
      customer_file_source: a.customer_file_source,
      approximate_count: a.members.size,
      delivery_status: this.deliveryStatusOf(a),
      time_created: graphTime(a.createdMs),
      time_updated: graphTime(a.updatedMs),
      deleted: a.deleted,
    }
  }

  audience(id: string): AudienceView | undefined {
    const a = this.audiences.get(id)
    return a && this.view(a)
  }

  listAudiences(): AudienceView[] {
    return [...this.audiences.values()].map((a) => this.view(a))
  }

  /** The hashed members an audience holds: each its non-empty column → digest pairs. */
  members(id: string): Member[] {
    const a = this.audiences.get(id)
    if (!a) throw new Error(`unknown audience ${id}`)
    return [...a.members.values()].map((m) => ({ ...m }))
  }

  snapshot(): Record<string, unknown> {
    return {
      app_id: this.opts.appId,
      tokens: [...this.tokens.values()].map((t) => ({ token: t.token, scopes: t.scopes, expires_at: t.expiresAt, expired: this.isExpired(t), ad_accounts: t.adAccounts ? [...t.adAccounts] : 'all' })),
      ad_accounts: [...this.accounts.values()],
      audiences: this.listAudiences(),
      faults: this.faults,
      queued_faults: [...this.queuedFaults],
      limits: this.opts.limits,
      requests: this.requestLog.length,
      webhook_deliveries: this.webhookLog.length,
    }
  }
}
