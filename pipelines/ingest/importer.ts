/**
 * The import loop of `cdp import`: reads a file's records, maps their columns to our fields, fills
 * a missing currency, validates them with the ingest endpoint's rules, publishes the valid ones in
 * batches through an injected event sink and writes the rejected ones to the rejects file. It
 * prints nothing: progress and retries go to the caller's hooks, and the result (with the summary
 * the command prints) comes back.
 *
 * Resume bookkeeping: records are handled in windows. A window's customers, then its orders, are
 * published (each batch retried while the ingest API or the log is unreachable), then its rejects
 * are written; only then do its records count as handled. So when a batch finally fails, every
 * record before the window is acknowledged or in the rejects file, and `--skip <handled>` resumes
 * exactly there. Re-sending records is harmless anyway: event ids are derived from content.
 */
import fs from 'node:fs'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { describeRetry, withRetry, type RetryPolicy } from '../../common/retry.ts'
import { acceptedFields, jsonColumns, mapColumns, type ColumnMap } from './column-map.ts'
import { readRecords, type ReadItem } from './file-reader.ts'
import type { IngestKind } from './publisher.ts'
import { BatchRejectedError, type EventSink } from './sink.ts'
import { validateCustomerInput, validateOrderInput } from './validation.ts'

export interface ImportOptions {
  tenant: number
  kind?: IngestKind
  columns: ColumnMap
  /** Fills a missing or blank currency of order records. */
  currency?: string
  /** The tenant's currency when known: orders are held to it, as the ingest API does. */
  tenantCurrency?: string | null
  skip: number
  batchSize: number
  retry: RetryPolicy
  /** The validation clock (future-timestamp rule). */
  now: number
  /** Keys not to report as unknown (accepted fields, mapped columns, columns already warned about). */
  knownKeys: ReadonlySet<string>
}

export interface ImportDeps {
  sink: Pick<EventSink, 'publish'>
  /** Appends reject lines (JSON, newline-terminated) to the rejects file; resolves once written. */
  writeRejects(lines: string): Promise<void>
  /** One record read (skipped ones too). */
  onRecord?(): void
  onRetry?(message: string): void
  sleep?: (ms: number) => Promise<void>
}

export interface ImportResult {
  /** Records read, skipped ones included. */
  read: number
  skipped: number
  /** Records passed validation. */
  accepted: number
  /** Rejects written to the rejects file. */
  rejected: number
  /** Records published and confirmed by the log or the ingest API. */
  acknowledged: number
  orders: number
  customers: number
  /** Leading records that are done: skipped, acknowledged or written as rejects. `--skip handled` resumes. */
  handled: number
  /** Keys seen in records that no field or mapping takes (besides the known ones). */
  unknownKeys: string[]
  /** Orders rejected for want of a currency (what --currency fills). */
  missingCurrency: number
  failure?: { stage: 'publish' | 'read'; error: unknown }
}

/** A valid record waiting for its batch, with what a reject would report about it. */
interface Pending {
  event: OrderEvent | CustomerUpserted
  line: number
  raw: string
}

function isBlank(v: unknown): boolean {
  return v === undefined || v === null || (typeof v === 'string' && v.trim() === '')
}

export async function importRecords(items: AsyncIterable<ReadItem>, opts: ImportOptions, deps: ImportDeps): Promise<ImportResult> {
  const r: ImportResult = { read: 0, skipped: 0, accepted: 0, rejected: 0, acknowledged: 0, orders: 0, customers: 0, handled: 0, unknownKeys: [], missingCurrency: 0 }
  const pending: Record<IngestKind, Pending[]> = { customers: [], orders: [] }
  let rejects: { line: number; json: string }[] = []
  const known = new Set(opts.knownKeys)

  const reject = (item: { line: number; raw: string | null }, errors: { path?: string; code?: string }[]) => {
    if (errors.some((e) => e.path === 'currency' && e.code === 'required')) r.missingCurrency++
    rejects.push({ line: item.line, json: `${JSON.stringify({ line: item.line, raw: item.raw, errors })}\n` })
  }

  /**
   * Publishes one kind's batch, retrying while the sink is unreachable. Events the ingest API
   * refuses (rules only it can check) become rejects and the rest is sent again.
   */
  const publish = async (k: IngestKind, batch: Pending[]) => {
    let retried = 0
    while (batch.length > 0) {
      try {
        await withRetry(() => deps.sink.publish(k, batch.map((p) => p.event)), opts.retry, {
          sleep: deps.sleep,
          onRetry: (info) => {
            retried++
            deps.onRetry?.(describeRetry(info))
          },
        })
        break
      } catch (err) {
        if (!(err instanceof BatchRejectedError)) throw err
        const refused = new Map<number, { path: string; code: string; message: string }[]>()
        for (const { index, ...e } of err.errors) refused.set(index, [...(refused.get(index) ?? []), e])
        if (![...refused.keys()].every((i) => i >= 0 && i < batch.length)) throw err
        for (const [i, errors] of refused) reject(batch[i]!, errors)
        r.accepted -= refused.size
        batch = batch.filter((_, i) => !refused.has(i))
      }
    }
    if (retried > 0) deps.onRetry?.(`batch of ${batch.length} ${k} acknowledged after ${retried} ${retried === 1 ? 'retry' : 'retries'}`)
    r.acknowledged += batch.length
    r[k] += batch.length
  }

  /** Publishes the window (customers first: profiles precede the orders that name them), then its rejects. */
  const flush = async () => {
    for (const k of ['customers', 'orders'] as const) {
      if (pending[k].length === 0) continue
      await publish(k, pending[k])
      pending[k] = []
    }
    if (rejects.length > 0) {
      await deps.writeRejects(rejects.sort((a, b) => a.line - b.line).map((x) => x.json).join(''))
      r.rejected += rejects.length
      rejects = []
    }
    r.handled = r.read
  }

  const handle = (item: ReadItem) => {
    if ('error' in item) return reject(item, [item.error])
    for (const key of Object.keys(item.record)) {
      if (!known.has(key)) {
        known.add(key)
        r.unknownKeys.push(key)
      }
    }
    let record = mapColumns(item.record, opts.columns)
    const k: IngestKind = opts.kind ?? ('order_id' in record ? 'orders' : 'customers')
    if (k === 'orders' && opts.currency && isBlank(record.currency)) record = { ...record, currency: opts.currency }
    const ctx = { defaultSource: 'import', now: opts.now, tenantId: opts.tenant, tenantCurrency: opts.tenantCurrency }
    const v = k === 'orders' ? validateOrderInput(record, ctx) : validateCustomerInput(record, ctx)
    if (!v.ok) return reject(item, v.errors)
    r.accepted++
    pending[k].push({ event: v.value, line: item.line, raw: item.raw })
  }

  const it = items[Symbol.asyncIterator]()
  let readError: unknown
  try {
    for (;;) {
      let next: IteratorResult<ReadItem>
      try {
        next = await it.next()
      } catch (error) {
        // The file cannot be read further (e.g. a quote that never closes): what came before is
        // sound and still gets published below.
        readError = error
        break
      }
      if (next.done) break
      r.read++
      deps.onRecord?.()
      if (r.read <= opts.skip) {
        r.skipped++
        r.handled = r.read
        continue
      }
      handle(next.value)
      if (pending.orders.length >= opts.batchSize || pending.customers.length >= opts.batchSize || rejects.length >= opts.batchSize) {
        await flush()
      }
    }
    await flush()
  } catch (error) {
    await it.return?.()
    return { ...r, failure: { stage: 'publish', error } }
  }
  return readError === undefined ? r : { ...r, failure: { stage: 'read', error: readError } }
}

/** The tenant's currency as the sink's receiving side knows it, for validating orders the way it will; undefined when it cannot tell. */
export async function lookupTenantCurrency(sink: Pick<EventSink, 'tenantCurrency'>, tenant: number, kind: IngestKind | undefined): Promise<string | null | undefined> {
  return kind === 'customers' ? undefined : await sink.tenantCurrency?.(tenant).catch(() => undefined)
}

export interface ImportFileOptions extends Omit<ImportOptions, 'knownKeys'> {
  /** Where rejects go; appended to when resuming (skip > 0), removed when nothing was rejected. */
  rejectsFile: string
  /** The file's columns as checked against the mapping (checkFileColumns): already warned about. */
  fileColumns: readonly string[]
}

/** The JSON summary `cdp import` prints on stdout. */
export interface ImportSummary {
  file: string
  tenant_id: number
  accepted: number
  rejected: number
  orders: number
  customers: number
  acknowledged: number
  skipped: number
  /** null when nothing was rejected (the file is then removed). */
  rejects_file: string | null
  status: 'done' | 'failed'
  error?: string
  handled?: number
}

/** Imports a file: importRecords over its records, with the rejects file opened, written and closed (removed when empty). */
export async function importFile(file: string, opts: ImportFileOptions, deps: Omit<ImportDeps, 'writeRejects'>): Promise<{ result: ImportResult; summary: ImportSummary }> {
  const { rejectsFile, fileColumns, ...loop } = opts
  // A resumed import adds to the rejects of the run it continues (which wrote those of its handled records only).
  const rejectsFd = fs.openSync(rejectsFile, opts.skip > 0 ? 'a' : 'w')
  let result: ImportResult
  try {
    result = await importRecords(
      readRecords(file, { jsonColumns: jsonColumns(opts.columns) }),
      { ...loop, knownKeys: new Set([...acceptedFields(opts.kind), ...opts.columns.values(), ...fileColumns]) },
      { ...deps, writeRejects: (lines) => new Promise((resolve, reject) => fs.write(rejectsFd, lines, (err) => (err ? reject(err) : resolve()))) },
    )
  } finally {
    fs.closeSync(rejectsFd)
  }
  const hasRejects = fs.statSync(rejectsFile).size > 0
  if (!hasRejects) fs.rmSync(rejectsFile, { force: true })
  return { result, summary: importSummary(file, opts.tenant, result, hasRejects ? rejectsFile : null) }
}

function importSummary(file: string, tenant: number, result: ImportResult, rejectsFile: string | null): ImportSummary {
  const summary = {
    file,
    tenant_id: tenant,
    accepted: result.accepted,
    rejected: result.rejected,
    orders: result.orders,
    customers: result.customers,
    acknowledged: result.acknowledged,
    skipped: result.skipped,
    rejects_file: rejectsFile,
  }
  if (!result.failure) return { ...summary, status: 'done' }
  const error = result.failure.error instanceof Error ? result.failure.error.message : String(result.failure.error)
  return { ...summary, status: 'failed', error, handled: result.handled }
}
