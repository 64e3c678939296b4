/**
 * HTTP client of the ads platform (spec "Endpoints"): the 7 endpoints plus the removal of users
 * (`DELETE /{custom_audience_id}/users` with the same `payload` body as the add call, as the real
 * platform does; the payload is always in the body, never in the URL).
 *
 * Every request: `{baseUrl}/{version}/…`, `Authorization: Bearer <token>`, JSON bodies. Errors
 * become the typed classes of errors.ts; HTTP 429/5xx are retried by common/retry.ts with the
 * spec's policy (below); with a budget,
 * the client-side hourly limits (limits.ts) are taken before each attempt of endpoints 4, 5, 6
 * and the removal. Instrumentation goes to `onEvent`, never to a logger, and never carries a token.
 */
import { z } from 'zod'
import { AdsApiError, AdsNetworkError, AdsProtocolError, RateLimitError, errorFromResponse, type RequestContext } from './errors.ts'
import { retryDelayMs, withRetry, type RetryInfo, type RetryPolicy, type Sleep } from '../../../common/retry.ts'
import type { HourlyBudget, LimitedOperation } from './limits.ts'
import { MAX_ROWS_PER_REQUEST } from './batching.ts'
import { isAudienceColumn } from './hashing.ts'
import {
  DEFAULT_AD_ACCOUNT_FIELDS,
  DEFAULT_AUDIENCE_FIELDS,
  type AdAccount,
  type AdAccountField,
  type CreateCustomAudienceInput,
  type CreateCustomAudienceResult,
  type CustomAudience,
  type CustomAudienceField,
  type TokenInfo,
  type UploadResult,
  type UserPayload,
} from './types.ts'

/**
 * The spec's recommended retry, in tenacity's terms: `stop_after_attempt(3)` and
 * `wait_exponential(multiplier=1, min=4, max=10)`, only on HTTP 429 and 5xx, never on other client
 * errors or network errors. tenacity waits multiplier · 2^(n−1) s after failed attempt n, clamped
 * to [min, max]: n = 1, 2, 3 → 4 s; n = 4 → 8 s; n ≥ 5 → 10 s. With 3 attempts the two waits are
 * 4 s and 4 s; the growth only shows with a longer policy. Run by common/retry.ts.
 */
export interface AdsRetryPolicy {
  /** Attempts in total, the first one included. */
  maxAttempts: number
  multiplier: number
  minWaitMs: number
  maxWaitMs: number
}

export const ADS_RETRY_POLICY: Readonly<AdsRetryPolicy> = Object.freeze({ maxAttempts: 3, multiplier: 1, minWaitMs: 4_000, maxWaitMs: 10_000 })

/** The tenacity parameters as common/retry.ts's policy. */
export const retryPolicyOf = (p: AdsRetryPolicy): RetryPolicy => ({ maxAttempts: p.maxAttempts, initialDelayMs: p.multiplier * 1000, maxDelayMs: p.maxWaitMs, minDelayMs: p.minWaitMs })

/** Milliseconds to wait after failed attempt `attempt` (1-based), tenacity's formula. */
export const backoffMs = (attempt: number, policy: AdsRetryPolicy = ADS_RETRY_POLICY): number => retryDelayMs(attempt, retryPolicyOf(policy))

/**
 * Whether the policy repeats `err`: an answer with HTTP 429 or >= 500 that is not one of the
 * spec's mapped codes (errors.ts). Network errors, other 4xx and anything that is not an
 * AdsApiError are not repeated.
 */
export const isRetriable = (err: unknown): boolean => err instanceof AdsApiError && err.retriable

export interface AdsRetryOptions {
  /** Default ADS_RETRY_POLICY. */
  policy?: AdsRetryPolicy
  /** Injectable so tests run instantly. */
  sleep?: Sleep
  /** Default isRetriable. */
  shouldRetry?: (err: unknown) => boolean
  /** Called before each wait. */
  onRetry?: (info: RetryInfo) => void
}

export const DEFAULT_API_VERSION = 'v18.0'
export const DEFAULT_TIMEOUT_MS = 60_000

export type AdsClientEvent =
  | { type: 'request'; method: string; path: string; attempt: number }
  | { type: 'response'; method: string; path: string; attempt: number; status: number; ms: number }
  | { type: 'retry'; method: string; path: string; attempt: number; waitMs: number; error: unknown }

export interface AdsClientOptions {
  /** e.g. `https://graph.example.com` or the simulator's url; the version path is appended. */
  baseUrl: string
  /** The tenant's user access token, sent as `Authorization: Bearer`. */
  accessToken: string
  /** Default 'v18.0'. */
  version?: string
  /** Application access token: the `access_token` query of `/debug_token`. */
  appAccessToken?: string
  /** Retry policy, injectable sleep (tests), onRetry. */
  retry?: AdsRetryOptions
  /** Client-side hourly limits; none when absent. */
  budget?: HourlyBudget
  /** Per attempt; default 60 s. */
  timeoutMs?: number
  fetch?: typeof fetch
  now?: () => number
  onEvent?: (event: AdsClientEvent) => void
}

type Method = 'GET' | 'POST' | 'DELETE'

interface CallSpec<T> {
  method: Method
  /** Path segments below the version, each encoded. */
  segments: string[]
  query?: Record<string, string>
  body?: unknown
  /** Limited operation whose budget each attempt takes. */
  operation?: LimitedOperation
  /** The token in the Authorization header, default the access token. */
  bearer?: string
  schema: z.ZodType<T>
}

// Response schemas: loose (unknown extra fields pass), strict on what the spec promises.
const tokenInfoSchema = z.object({
  data: z.looseObject({
    app_id: z.coerce.string(),
    type: z.string(),
    application: z.string(),
    expires_at: z.number(),
    is_valid: z.boolean(),
    scopes: z.array(z.string()).default([]),
  }),
})
const adAccountSchema = z.looseObject({ id: z.string().regex(/^act_\d+$/) })
const adAccountListSchema = z.looseObject({
  data: z.array(adAccountSchema),
  paging: z.looseObject({ cursors: z.looseObject({ after: z.string().optional() }).optional(), next: z.string().optional() }).optional(),
})
const audienceSchema = z.looseObject({ id: z.string().regex(/^\d+$/) })
const createResultSchema = z.looseObject({ id: z.string().regex(/^\d+$/), success: z.boolean().default(true) })
const uploadResultSchema = z.looseObject({
  audience_id: z.string(),
  session_id: z.coerce.string(),
  num_received: z.number().int(),
  num_invalid_entries: z.number().int(),
  invalid_entry_samples: z.record(z.string(), z.array(z.string())).default({}),
})
const successSchema = z.looseObject({ success: z.boolean() })

export class AdsClient {
  readonly baseUrl: string
  readonly version: string
  private readonly accessToken: string
  private readonly opts: AdsClientOptions
  private readonly fetch: typeof fetch
  private readonly now: () => number

  constructor(opts: AdsClientOptions) {
    if (!opts.baseUrl) throw new TypeError('AdsClient: baseUrl is required')
    if (!opts.accessToken) throw new TypeError('AdsClient: accessToken is required')
    this.opts = opts
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '')
    this.version = opts.version ?? DEFAULT_API_VERSION
    this.accessToken = opts.accessToken
    this.fetch = opts.fetch ?? globalThis.fetch
    this.now = opts.now ?? Date.now
  }

  /** 1. GET /debug_token: inspects `inputToken` (default the client's token) with the application access token. */
  async debugToken(inputToken: string = this.accessToken): Promise<TokenInfo> {
    const app = this.opts.appAccessToken
    if (!app) throw new TypeError('AdsClient.debugToken needs appAccessToken in the client options')
    const { data } = await this.call({
      method: 'GET',
      segments: ['debug_token'],
      query: { input_token: inputToken, access_token: app },
      bearer: app,
      schema: tokenInfoSchema,
    })
    return data
  }

  /** 2. GET /{ad_account_id}?fields=… */
  getAdAccount(adAccountId: string, fields: readonly AdAccountField[] = DEFAULT_AD_ACCOUNT_FIELDS): Promise<AdAccount> {
    return this.call({ method: 'GET', segments: [adAccountId], query: { fields: fields.join(',') }, schema: adAccountSchema })
  }

  /** 3. GET /me/adaccounts?fields=…, following `paging.cursors.after` while `paging.next` is given. */
  async listAdAccounts(fields: readonly AdAccountField[] = DEFAULT_AD_ACCOUNT_FIELDS): Promise<AdAccount[]> {
    const out: AdAccount[] = []
    let after: string | undefined
    for (let page = 0; page < 1000; page++) {
      const query: Record<string, string> = { fields: fields.join(',') }
      if (after) query.after = after
      const res = await this.call({ method: 'GET', segments: ['me', 'adaccounts'], query, schema: adAccountListSchema })
      out.push(...res.data)
      after = res.paging?.next ? res.paging.cursors?.after : undefined
      if (!after) break
    }
    return out
  }

  /** 4. POST /{ad_account_id}/customaudiences (subtype CUSTOM, customer_file_source USER_PROVIDED_ONLY unless given). */
  createCustomAudience(adAccountId: string, input: CreateCustomAudienceInput): Promise<CreateCustomAudienceResult> {
    const body = {
      name: input.name,
      subtype: input.subtype ?? 'CUSTOM',
      description: input.description ?? '',
      customer_file_source: input.customer_file_source ?? 'USER_PROVIDED_ONLY',
    }
    return this.call({ method: 'POST', segments: [adAccountId, 'customaudiences'], body, operation: 'create_audience', schema: createResultSchema })
  }

  /** 5. GET /{custom_audience_id}?fields=… */
  getCustomAudience(audienceId: string, fields: readonly CustomAudienceField[] = DEFAULT_AUDIENCE_FIELDS): Promise<CustomAudience> {
    return this.call({ method: 'GET', segments: [audienceId], query: { fields: fields.join(',') }, operation: 'read_audience', schema: audienceSchema }) as Promise<CustomAudience>
  }

  /** 6. POST /{custom_audience_id}/users with `{ payload }` (at most 10,000 rows; see batching.ts). */
  async addUsers(audienceId: string, payload: UserPayload): Promise<UploadResult> {
    checkPayload(payload)
    return this.call({ method: 'POST', segments: [audienceId, 'users'], body: { payload }, operation: 'upload_users', schema: uploadResultSchema })
  }

  /** DELETE /{custom_audience_id}/users with the same `{ payload }` body as addUsers. Counted as an upload. */
  async removeUsers(audienceId: string, payload: UserPayload): Promise<UploadResult> {
    checkPayload(payload)
    return this.call({ method: 'DELETE', segments: [audienceId, 'users'], body: { payload }, operation: 'upload_users', schema: uploadResultSchema })
  }

  /** 7. DELETE /{custom_audience_id} */
  deleteCustomAudience(audienceId: string): Promise<{ success: boolean }> {
    return this.call({ method: 'DELETE', segments: [audienceId], schema: successSchema })
  }

  /** The URL of a path below the version root (exported for tests and logs; carries no token unless `query` does). */
  url(segments: string[], query?: Record<string, string>): string {
    const path = segments.map((s) => encodeURIComponent(s)).join('/')
    const qs = query && Object.keys(query).length ? `?${new URLSearchParams(query).toString()}` : ''
    return `${this.baseUrl}/${encodeURIComponent(this.version)}/${path}${qs}`
  }

  private async call<T>(spec: CallSpec<T>): Promise<T> {
    const context: RequestContext = { method: spec.method, path: `/${spec.segments.join('/')}` }
    const retry = this.opts.retry ?? {}
    return withRetry((attempt) => this.attempt(spec, context, attempt), retryPolicyOf(retry.policy ?? ADS_RETRY_POLICY), {
      classify: retry.shouldRetry ?? isRetriable,
      exhausted: 'last',
      sleep: retry.sleep,
      onRetry: (e) => {
        this.opts.onEvent?.({ type: 'retry', ...context, attempt: e.attempt, waitMs: e.delayMs, error: e.error })
        retry.onRetry?.(e)
      },
    })
  }

  private async attempt<T>(spec: CallSpec<T>, context: RequestContext, attempt: number): Promise<T> {
    const bearer = spec.bearer ?? this.accessToken
    if (spec.operation && this.opts.budget) {
      const decision = await this.opts.budget.take(bearer, spec.operation)
      if (!decision.allowed) {
        throw new RateLimitError(`${context.method} ${context.path}: client-side limit of ${decision.limit} ${spec.operation} calls per hour reached`, {
          httpStatus: null,
          context,
          retryAt: decision.retryAt ?? this.now(),
          source: 'client',
        })
      }
    }
    const headers: Record<string, string> = { authorization: `Bearer ${bearer}`, accept: 'application/json' }
    let body: string | undefined
    if (spec.body !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(spec.body)
    }
    this.opts.onEvent?.({ type: 'request', ...context, attempt })
    const started = performance.now()
    let res: Response
    let text: string
    try {
      res = await this.fetch(this.url(spec.segments, spec.query), {
        method: spec.method,
        headers,
        body,
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? DEFAULT_TIMEOUT_MS),
      })
      text = await res.text()
    } catch (err) {
      throw new AdsNetworkError(`${context.method} ${context.path}: no answer (${(err as Error).message})`, { httpStatus: null, context, cause: err })
    }
    this.opts.onEvent?.({ type: 'response', ...context, attempt, status: res.status, ms: performance.now() - started })
    let json: unknown = null
    let parsed = false
    try {
      json = text ? JSON.parse(text) : null
      parsed = true
    } catch {
      /* an error page in HTML: handled below */
    }
    if (!res.ok) throw errorFromResponse(res.status, json, context, this.now())
    if (!parsed) throw new AdsProtocolError(`${context.method} ${context.path}: HTTP ${res.status} with a body that is not JSON`, { httpStatus: res.status, context })
    const result = spec.schema.safeParse(json)
    if (!result.success) {
      throw new AdsProtocolError(`${context.method} ${context.path}: unexpected answer: ${z.prettifyError(result.error)}`, { httpStatus: res.status, context })
    }
    return result.data
  }
}

export function createAdsClient(opts: AdsClientOptions): AdsClient {
  return new AdsClient(opts)
}

/** Programming errors caught before a call is spent: a payload the platform would refuse as a whole. */
function checkPayload(payload: UserPayload): void {
  const { schema, data } = payload
  if (!Array.isArray(schema) || schema.length === 0) throw new RangeError('payload.schema must name at least one column')
  for (const c of schema) if (!isAudienceColumn(c)) throw new RangeError(`payload.schema: unknown column '${c}'`)
  if (data.length === 0) throw new RangeError('payload.data is empty')
  if (data.length > MAX_ROWS_PER_REQUEST) throw new RangeError(`payload.data has ${data.length} rows; at most ${MAX_ROWS_PER_REQUEST} per request (split with prepareUpload)`)
  for (let i = 0; i < data.length; i++) {
    if (data[i]!.length !== schema.length) throw new RangeError(`payload.data[${i}] has ${data[i]!.length} values for ${schema.length} schema columns`)
  }
}
