/**
 * Turning a set of customers into upload requests (spec rules 2 and "wait about 2 seconds between
 * batches"). Pure except sendPaced, whose sleep is injectable.
 *
 * - At most 10,000 rows per request: 10,001 rows are two requests.
 * - The schema keeps only the columns the set has data for: a column whose every value is empty
 *   (after normalisation) is dropped, so no request carries a column of blanks.
 * - A customer with no identifier at all is skipped, not sent as a row of blanks (one such row
 *   can fail a whole batch on the real platform).
 */
import { AUDIENCE_COLUMNS, hashRow, normalize, type AudienceColumn, type CustomerIdentifiers } from './hashing.ts'
import { sleep as defaultSleep, type Sleep } from '../../../common/retry.ts'
import type { UploadResult, UserPayload } from './types.ts'

export const MAX_ROWS_PER_REQUEST = 10_000
export const DEFAULT_PACING_MS = 2_000

/** Consecutive slices of at most `size` items. */
export function chunk<T>(items: readonly T[], size: number = MAX_ROWS_PER_REQUEST): T[][] {
  if (!Number.isSafeInteger(size) || size < 1) throw new RangeError(`chunk size must be a positive integer, got ${size}`)
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

/** The columns of `candidates` (in their order) for which at least one record has a non-empty normalised value. */
export function columnsWithData(records: Iterable<CustomerIdentifiers>, candidates: readonly AudienceColumn[] = AUDIENCE_COLUMNS): AudienceColumn[] {
  const seen = new Set<AudienceColumn>()
  for (const record of records) {
    for (const column of candidates) if (!seen.has(column) && normalize(column, record[column]) !== '') seen.add(column)
    if (seen.size === candidates.length) break
  }
  return candidates.filter((c) => seen.has(c))
}

export interface UploadBatch<T> {
  /** 0-based position in the upload; stable for the same input, so a resumed upload can skip done batches. */
  index: number
  /** The input items of this batch, aligned with `payload.data`. */
  items: T[]
  payload: UserPayload
}

export interface PreparedUpload<T> {
  schema: AudienceColumn[]
  batches: UploadBatch<T>[]
  /** Items with no identifier in any schema column: not sent. */
  skipped: T[]
}

export interface PrepareOptions {
  /** Candidate columns, default all four; the schema is the subset with data. */
  columns?: readonly AudienceColumn[]
  /** Rows per request, at most MAX_ROWS_PER_REQUEST. */
  maxRows?: number
}

/** Hashes every item's identifiers and cuts the rows into requests. */
export function prepareUpload<T>(items: readonly T[], identifiers: (item: T) => CustomerIdentifiers, opts: PrepareOptions = {}): PreparedUpload<T> {
  const maxRows = opts.maxRows ?? MAX_ROWS_PER_REQUEST
  if (maxRows > MAX_ROWS_PER_REQUEST) throw new RangeError(`maxRows must be <= ${MAX_ROWS_PER_REQUEST}, got ${maxRows}`)
  const records = items.map(identifiers)
  const schema = columnsWithData(records, opts.columns ?? AUDIENCE_COLUMNS)
  const kept: T[] = []
  const rows: string[][] = []
  const skipped: T[] = []
  records.forEach((record, i) => {
    const row = schema.length ? hashRow(schema, record) : []
    if (row.some((v) => v !== '')) {
      kept.push(items[i]!)
      rows.push(row)
    } else skipped.push(items[i]!)
  })
  const itemChunks = chunk(kept, maxRows)
  const rowChunks = chunk(rows, maxRows)
  const batches = itemChunks.map((batchItems, index) => ({ index, items: batchItems, payload: { schema: [...schema], data: rowChunks[index]! } }))
  return { schema, batches, skipped }
}

/**
 * The items of a batch the platform reported invalid: a row is rejected when one of its values
 * is listed in `invalid_entry_samples` under its column. Samples are samples: when
 * `num_invalid_entries` exceeds what they identify, `unidentified` says how many are unknown.
 */
export function rejectedItems<T>(batch: UploadBatch<T>, result: Pick<UploadResult, 'num_invalid_entries' | 'invalid_entry_samples'>): { items: T[]; unidentified: number } {
  const { schema, data } = batch.payload
  const bad = schema.map((column) => new Set(result.invalid_entry_samples[column] ?? []))
  const items: T[] = []
  data.forEach((row, i) => {
    if (row.some((value, c) => bad[c]?.has(value))) items.push(batch.items[i]!)
  })
  return { items, unidentified: Math.max(0, result.num_invalid_entries - items.length) }
}

export interface PacingOptions {
  /** Wait between two consecutive batches (not before the first, not after the last). Default 2,000 ms. */
  pacingMs?: number
  sleep?: Sleep
  /** Stops before the next batch when aborted (throws the signal's reason). */
  signal?: AbortSignal
}

/**
 * Sends batches one after the other with the pacing wait between them. The first error stops
 * the run and is thrown as is; batches are deterministic, so the caller resumes at the failed
 * index.
 */
export async function sendPaced<B, R>(batches: readonly B[], send: (batch: B, index: number) => Promise<R>, opts: PacingOptions = {}): Promise<R[]> {
  const pacingMs = opts.pacingMs ?? DEFAULT_PACING_MS
  const sleep = opts.sleep ?? defaultSleep
  const results: R[] = []
  for (let i = 0; i < batches.length; i++) {
    if (i > 0 && pacingMs > 0) await sleep(pacingMs)
    opts.signal?.throwIfAborted()
    results.push(await send(batches[i]!, i))
  }
  return results
}
