import { z } from 'zod'
import type { Store } from '../../../common/store/clickhouse.ts'
import type { Logger } from '../../../common/logger.ts'
import type { ResponseCache } from './cache.ts'
import type { CommonOptions } from './options.ts'
import type { SummarySource } from './summary.ts'
import type { CustomerColumns } from './customer-columns.ts'
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

/** A cell of an export: text, a number, a boolean or empty. */
export type ExportCell = string | number | boolean | null

/** A column of an export: header and how to read it from a row. */
export interface ExportColumn<R> {
  header: string
  value(row: R): ExportCell
}

/** One table of an export file: a sheet of the workbook, an array of the JSON file, rows of the CSV (exports.ts). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tables of one file hold rows of different types
export interface ExportTable<R = any> {
  name: string
  columns: ExportColumn<R>[]
  rows: AsyncIterable<R> | R[]
}

/** A table made from a body: its rows are in memory (and counted by the router before anything is sent). */
export type BodyTable = ExportTable & { rows: unknown[] }

/** Columns that read a row's own fields, each named after its field. */
export function fieldColumns<R extends object>(fields: readonly (keyof R & string)[]): ExportColumn<R>[] {
  return fields.map((header) => ({ header, value: (r) => r[header] as ExportCell }))
}

/** Columns of the rows a zod object describes: one per key, in its order (the JSON export's row shape). */
export function schemaColumns(row: z.ZodObject): ExportColumn<Record<string, ExportCell>>[] {
  return fieldColumns(Object.keys(row.shape))
}

/** A table of a body export whose columns are the keys of its row schema. */
export function bodyTable<S extends z.ZodObject>(name: string, row: S, rows: z.infer<S>[]): BodyTable {
  return { name, columns: schemaColumns(row), rows }
}

/**
 * An export of rows read for it (the customer-level lists): counted first, so the router refuses
 * more than the limit before reading any, then read in order and streamed. One table.
 */
export interface RowsExport<Q extends CommonOptions = CommonOptions, R = Record<string, unknown>> {
  /** What a row is, in which order (the OpenAPI description). */
  description: string
  columns: ExportColumn<R>[]
  /** One row as the JSON export writes it (an object keyed by column header). */
  row: z.ZodObject
  count(ctx: AnalyticsContext, q: Q): Promise<number>
  /** Rows in order; the router refuses (400) when there are more than the export limit. */
  rows(ctx: AnalyticsContext, q: Q, limit: number): AsyncIterable<R> | Promise<R[]>
}

/**
 * An export of tables made from the endpoint's body for the request (the body the JSON answer
 * would carry, from the response cache when it is there), so its columns may depend on the
 * request. One table, or several (`tableColumn`).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each endpoint types its own body
export interface BodyExport<Q extends CommonOptions = CommonOptions, B = any> {
  /** What the file holds (the OpenAPI description). */
  description: string
  /** Every table a file may hold, by name in file order, with the JSON shape of its rows. */
  tables: Readonly<Record<string, z.ZodType>>
  /**
   * Several tables: the name of the CSV's first column, which says each row's table (exports.ts);
   * the JSON file is then an object of arrays by table name and the workbook has a sheet each.
   */
  tableColumn?: string
  /** This request's tables, in the order of `tables`; `at` is the clock the body was computed as of. */
  fromBody(body: B, q: Q, at: number): BodyTable[]
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each endpoint types its own rows
export type EndpointExport<Q extends CommonOptions = CommonOptions> = RowsExport<Q, any> | BodyExport<Q>

export const isBodyExport = <Q extends CommonOptions>(x: EndpointExport<Q>): x is BodyExport<Q> => 'fromBody' in x

/** What a body returns when there is nothing to show: the router answers 204 without a body. */
export const NO_CONTENT = Symbol('no content')

/**
 * One analytics endpoint: its path, its query schema (CommonQuery extended), the JSON body it
 * answers with, and what its export (`format=csv|excel|json`) holds.
 */
export interface AnalyticsEndpoint<Q extends CommonOptions = CommonOptions, X extends EndpointExport<Q> = EndpointExport<Q>> {
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
  /**
   * Works out, when a tenant summary's customer columns are loaded, what this endpoint's filtered
   * answers read from them (per-customer facts, orders), so no request waits for it.
   */
  prepare?(columns: CustomerColumns, nowMs: number): void | Promise<void>
  /**
   * Stored summary parts (by name) that hold class instances, and how to rebuild them from the
   * plain copy another thread receives (postMessage keeps data, not prototypes): body-workers.ts.
   */
  revive?: Readonly<Record<string, (copy: unknown) => unknown>>
  /** The file `format=…` downloads instead of the body (the spec lists `format` on every analytics endpoint). */
  export: X
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
/** The number of a signedPct string (`"+12.5%"` → 12.5), null for null: what a file holds, so a spreadsheet sees a number. */
export const signedPctValue = (s: string | null): number | null => (s === null ? null : Number.parseFloat(s))
