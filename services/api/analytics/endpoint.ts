import { z } from 'zod'
import type { Store } from '../../../common/store/clickhouse.ts'
import type { Logger } from '../../../common/logger.ts'
import type { ResponseCache } from './cache.ts'
import type { CommonOptions } from './options.ts'
import type { SummarySource } from './summary.ts'
import { ReferenceMetadata } from '../response-schemas.ts'

/** What an analytics endpoint module gets: the store, the clock, the cache and the tenant summaries. */
export interface AnalyticsContext {
  store: Store
  logger: Logger
  now: () => number
  cache: ResponseCache
  /** Precomputed tenant-wide aggregates (summary.ts); without it every query runs live. */
  summaries?: SummarySource
}

/** A column of an export: header and how to read it from a row. */
export interface ExportColumn<R> {
  header: string
  value(row: R): string | number | boolean | null
}

/** What a body returns when there is nothing to show: the router answers 204 without a body. */
export const NO_CONTENT = Symbol('no content')

/**
 * One analytics endpoint: its path, its query schema (CommonQuery extended), the JSON body it
 * answers with, and (when it has a row-level view) the rows an export streams.
 */
export interface AnalyticsEndpoint<Q extends CommonOptions = CommonOptions, R = Record<string, unknown>> {
  path: string
  /** Other paths answering the same (spec aliases). */
  aliases?: string[]
  summary: string
  /** Query schema (a strict object); unknown keys are rejected by the router. */
  query: z.ZodType<Q>
  /** The JSON body the router answers with (`analyticsBody`): what the OpenAPI document shows and tests check answers against. */
  response: z.ZodType
  /** What else a client should know of this endpoint's options (the OpenAPI description). */
  notes?: string
  /** When the body may be NO_CONTENT: what a 204 means here. */
  noContent?: string
  /** Shared options that do not apply here (said in the OpenAPI description). */
  ignores?: (keyof CommonOptions)[]
  /** Overview responses carry `Cache-Control: max-age=300`. */
  overview: boolean
  /** Server-side cache TTL (ms); 0 = not cached. */
  cacheTtlMs: number
  /** Status for an unknown tenant (default 404; the spec's demographics says 400). */
  unknownTenantStatus?: 400 | 404
  /** Query fields whose invalid values get another status than 400 (the spec's demographics filters: 422). */
  filterErrorStatus?: { fields: readonly string[]; status: 422 }
  body(ctx: AnalyticsContext, q: Q): Promise<unknown>
  export?: {
    columns: ExportColumn<R>[]
    /** One row as the JSON export writes it (an object keyed by column header). */
    row: z.ZodObject
    /** Rows in order; the router refuses (400) when there are more than the export limit. */
    count(ctx: AnalyticsContext, q: Q): Promise<number>
    rows(ctx: AnalyticsContext, q: Q, limit: number): AsyncIterable<R> | Promise<R[]>
  }
}

/**
 * The schema of an analytics answer: `success`, the endpoint's `data` (and `message` where it has
 * one), and `metadata` with the reference date the router adds to every body (plus the
 * endpoint's own metadata fields).
 */
export function analyticsBody(data: z.ZodType, opts: { message?: boolean; metadata?: z.ZodRawShape } = {}) {
  return z.strictObject({
    success: z.literal(true),
    ...(opts.message ? { message: z.string() } : {}),
    data,
    metadata: z.strictObject({ ...opts.metadata, ...ReferenceMetadata.shape }),
  })
}

/** Runs a parameterised query and returns its rows as objects. */
export async function select<T>(store: Store, query: string, params: Record<string, unknown>): Promise<T[]> {
  const rs = await store.query({ query, query_params: params, format: 'JSONEachRow' })
  return rs.json<T>()
}

export const round2 = (x: number) => Math.round(x * 100) / 100
/** Percent of a total, 2 decimals; 0 when the total is 0. */
export const pct = (n: number, total: number) => (total ? round2((100 * n) / total) : 0)
/** Signed percent string of a change, e.g. "+12.5%", "-3%", "0%"; null when there is no base. */
export function signedPct(current: number, previous: number): string | null {
  if (!previous) return null
  const v = round2((100 * (current - previous)) / previous)
  return `${v > 0 ? '+' : ''}${v}%`
}
