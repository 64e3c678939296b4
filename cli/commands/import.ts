/**
 * `cdp import FILE`: validates a shop's export record by record, publishes the valid ones in
 * batches and writes the rejected ones to FILE.rejects.jsonl.
 *
 * Resume bookkeeping: records are handled in windows. A window's customers, then its orders, are
 * published (each batch retried while the ingest API or the log is unreachable), then its rejects
 * are written; only then do its records count as handled. So when a batch finally fails, every
 * record before the window is acknowledged or in the rejects file, and `--skip <handled>` resumes
 * exactly there. Re-sending records is harmless anyway: event ids are derived from content.
 */
import fs from 'node:fs'
import { loadConfig } from '../../common/config.ts'
import { createLogger } from '../../common/logger.ts'
import { createProgress, type Progress } from '../../common/progress.ts'
import { ORDER_EVENT_TYPES, type CustomerUpserted, type OrderEvent } from '../../common/events.ts'
import {
  ColumnMapError,
  checkColumns,
  estimateLineCount,
  importFormat,
  mapColumns,
  parseColumnMap,
  readColumns,
  readRecords,
  similarColumn,
  type ColumnMap,
  type ReadItem,
} from '../../pipelines/ingest/file-reader.ts'
import { CUSTOMER_INPUT_FIELDS, ORDER_INPUT_FIELDS, ORDER_ITEM_FIELDS, validateCustomerInput, validateOrderInput } from '../../pipelines/ingest/validation.ts'
import {
  DEFAULT_RETRY_POLICY,
  HTTP_BATCH,
  BatchRejectedError,
  RetriesExhaustedError,
  describeSinkError,
  openEventSink,
  withRetry,
  type EventSink,
  type RetryPolicy,
} from '../../pipelines/ingest/sink.ts'
import type { IngestKind } from '../../pipelines/ingest/publisher.ts'
import { RUNTIME_FLAGS, UsageError, configFlags, parse } from '../args.ts'

const FLAGS = {
  ...RUNTIME_FLAGS,
  tenant: { type: 'string' },
  kind: { type: 'string' },
  columns: { type: 'string', multiple: true },
  currency: { type: 'string' },
  skip: { type: 'string' },
  'retry-for': { type: 'string' },
  'batch-size': { type: 'string' },
  rejects: { type: 'string' },
  api: { type: 'string' },
  strict: { type: 'boolean' },
} as const

const DEFAULT_BATCH = HTTP_BATCH
/** JSONL records whose keys stand for the file's columns (checked against --columns). */
const JSONL_KEY_SAMPLE = 1000

/** Wraps a list of names to lines of at most `width` characters, each indented by `indent`. */
function wrapList(names: readonly string[], indent: string, width = 100): string {
  const lines: string[] = []
  let line = ''
  for (const n of names) {
    const piece = line ? `${line}, ${n}` : n
    if (indent.length + piece.length > width && line) {
      lines.push(`${line},`)
      line = n
    } else {
      line = piece
    }
  }
  if (line) lines.push(line)
  return lines.map((l) => indent + l).join('\n')
}

/** The help text; the accepted columns come from the validation schemas, so they cannot drift. */
export function importHelp(): string {
  return `usage: cdp import <file.csv|file.jsonl> --tenant N [--kind orders|customers]
                  [--columns ours=theirs,...] [--currency CODE] [--skip N]
                  [--retry-for SECONDS] [--batch-size N] [--rejects FILE] [--api URL] [--strict]

Validates every record (the ingest endpoint's rules), publishes the valid ones to the event log
in batches and writes rejected ones to <file>.rejects.jsonl, one JSON object a line:
{"line":N,"raw":"<the record as the file has it>","errors":[{"path","code","message"}]}.
Without --kind, a record with an order_id is an order and any other record a customer.
While \`cdp start\` holds the embedded log, records go through its ingest API. A summary is printed
as JSON on stdout; progress, warnings and retries go to stderr. See docs/import.md.

  --columns ours=theirs,...  our field names mapped to the file's columns (CSV header names or
                             JSONL keys), e.g. order_id=InvoiceNo,occurred_at=InvoiceDate; may be
                             repeated. Columns that are neither our fields nor mapped are ignored,
                             with one warning naming them.
  --currency CODE            3-letter ISO 4217 code for orders whose currency is missing or blank
  --skip N                   skip the first N records (data rows / lines; what a failed import
                             prints to resume with)
  --retry-for SECONDS        keep retrying a batch while the ingest API or the event log is
                             unreachable or answers 5xx (backoff 0.5 s doubling to 8 s); default 60
  --batch-size N             records per published batch, 1..${HTTP_BATCH}; default ${DEFAULT_BATCH}
  --rejects FILE             where rejects go; default <file>.rejects.jsonl
  --api URL                  publish through the ingest API at URL (default: found from the log)
  --strict                   exit 1 when any record was rejected

Accepted columns (others are ignored):
  orders:
${wrapList(ORDER_INPUT_FIELDS, '    ')}
  customers:
${wrapList(CUSTOMER_INPUT_FIELDS, '    ')}
  order items (JSONL: an "items" array of objects; CSV: an "items" column holding that JSON array):
${wrapList(ORDER_ITEM_FIELDS, '    ')}
  event_type: ${ORDER_EVENT_TYPES.join(', ')} (default placed)
  event_id is optional: derived from the record's content when absent, so importing a file twice,
  or resuming from 0, never counts a record twice.

Exit status: 0 done; 1 a batch could not be published (the summary says how many records were
acknowledged and the --skip to resume with), or --strict and records were rejected; 2 usage.
`
}

// ---------------------------------------------------------------------------------------------
// The import loop, with its sink and outputs passed in (tests drive it with an in-memory sink).

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
          onRetry: ({ attempt, delayMs, error, remainingMs }) => {
            retried++
            deps.onRetry?.(`${describeSinkError(error)}; retry ${attempt} in ${(delayMs / 1000).toFixed(1)} s (giving up in ${Math.ceil(remainingMs / 1000)} s)`)
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

// ---------------------------------------------------------------------------------------------
// Outputs

/** Quotes an argument for a POSIX shell when it needs it. */
export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`
}

/** The command that resumes: the same arguments with `--skip N` instead of any earlier --skip. */
export function resumeCommand(argv: readonly string[], skip: number): string {
  const args: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--skip') {
      i++
      continue
    }
    if (a.startsWith('--skip=')) continue
    args.push(a)
  }
  return ['cdp', 'import', ...args, '--skip', String(skip)].map(shellQuote).join(' ')
}

const count = new Intl.NumberFormat('en-US')

/** What a failed import prints on stderr: what was acknowledged, and how to go on. */
export function failureReport(file: string, result: ImportResult, resume: string, rejectsFile: string): string {
  const f = result.failure!
  const why =
    f.error instanceof RetriesExhaustedError
      ? `the event sink stayed unreachable: ${f.error.message}`
      : f.stage === 'publish'
        ? `a batch was refused: ${describeSinkError(f.error)}`
        : `the file cannot be read further: ${(f.error as Error)?.message ?? String(f.error)}`
  return [
    `cdp import: stopped: ${why}`,
    `  acknowledged: ${count.format(result.acknowledged)} records published and confirmed (${count.format(result.customers)} customers, ${count.format(result.orders)} orders)`,
    `  handled: the first ${count.format(result.handled)} of the ${count.format(result.read)} records read${result.skipped ? ` (${count.format(result.skipped)} skipped)` : ''} are acknowledged or in ${rejectsFile}`,
    f.stage === 'read' ? `  once the file is fixed there, resume with: ${resume}` : `  resume with: ${resume}`,
    `  re-sending is idempotent (event ids derive from each record's content), so importing ${file} again from the start is safe too`,
    '',
  ].join('\n')
}

// ---------------------------------------------------------------------------------------------
// The command

function intFlag(v: string | undefined, flag: string, min: number, max: number, dflt: number): number {
  if (v === undefined) return dflt
  const n = Number(v)
  if (!/^\d+$/.test(v.trim()) || !Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`${flag} must be an integer from ${min} to ${max}, got "${v}"`)
  return n
}

function acceptedFields(kind: IngestKind | undefined): string[] {
  if (kind === 'orders') return [...ORDER_INPUT_FIELDS]
  if (kind === 'customers') return [...CUSTOMER_INPUT_FIELDS]
  return [...new Set([...ORDER_INPUT_FIELDS, ...CUSTOMER_INPUT_FIELDS])]
}

/** Checks --columns against the file's columns: usage errors for missing ones, warnings for unknown ones. */
async function resolveColumns(file: string, map: ColumnMap, accepted: readonly string[], warn: (m: string) => void): Promise<string[]> {
  const jsonl = importFormat(file) === 'jsonl'
  const fileColumns = await readColumns(file, { sample: JSONL_KEY_SAMPLE })
  const check = checkColumns(map, fileColumns, accepted)
  if (check.missing.length > 0) {
    const where = jsonl ? `the keys of the first ${count.format(JSONL_KEY_SAMPLE)} records of ${file}` : `the header of ${file}`
    const hints = check.missing.map((c) => {
      const near = similarColumn(c, fileColumns)
      return near ? `"${c}" (did you mean "${near}"?)` : `"${c}"`
    })
    throw new UsageError(`--columns names ${check.missing.length === 1 ? 'a column' : 'columns'} not in ${where}: ${hints.join(', ')}; it has: ${fileColumns.join(', ') || '(none)'}`)
  }
  if (check.unknown.length > 0) {
    warn(`cdp import: warning: ignoring ${check.unknown.length === 1 ? 'column' : 'columns'} that ${check.unknown.length === 1 ? 'is' : 'are'} neither one of our fields nor mapped with --columns: ${check.unknown.join(', ')} (cdp import --help lists the fields)`)
  }
  if (check.shadowed.length > 0) {
    warn(`cdp import: warning: ignoring ${check.shadowed.map((c) => `column "${c}" (--columns fills ${c} from "${map.get(c)}")`).join(', ')}`)
  }
  return fileColumns
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, FLAGS)
  if (values.help) {
    process.stdout.write(importHelp())
    return 0
  }
  const file = positionals[0]
  if (!file) throw new UsageError('import needs a file: cdp import <file.csv|file.jsonl> --tenant N (cdp import --help)')
  if (!fs.existsSync(file)) throw new UsageError(`no such file: ${file}`)
  try {
    importFormat(file)
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
  const tenant = Number(values.tenant)
  if (!Number.isSafeInteger(tenant) || tenant <= 0) throw new UsageError('--tenant must be a positive integer')
  const kind = values.kind as IngestKind | undefined
  if (kind && kind !== 'orders' && kind !== 'customers') throw new UsageError('--kind must be orders or customers')
  let currency: string | undefined
  if (values.currency !== undefined) {
    if (!/^[A-Za-z]{3}$/.test(values.currency.trim())) throw new UsageError(`--currency must be a 3-letter ISO 4217 code (e.g. GBP), got "${values.currency}"`)
    if (kind === 'customers') throw new UsageError('--currency applies to orders; this is a --kind customers import')
    currency = values.currency.trim().toUpperCase()
  }
  const skip = intFlag(values.skip, '--skip', 0, Number.MAX_SAFE_INTEGER, 0)
  const batchSize = intFlag(values['batch-size'], '--batch-size', 1, HTTP_BATCH, DEFAULT_BATCH)
  const retryFor = values['retry-for'] === undefined ? DEFAULT_RETRY_POLICY.retryForMs / 1000 : Number(values['retry-for'])
  if (!Number.isFinite(retryFor) || retryFor < 0 || values['retry-for']?.trim() === '') throw new UsageError(`--retry-for must be a number of seconds (0 or more), got "${values['retry-for']}"`)
  const accepted = acceptedFields(kind)
  let columns: Map<string, string>
  try {
    columns = parseColumnMap(values.columns ?? [], accepted, kind ? `accepted for --kind ${kind}` : 'accepted (orders and customers)')
  } catch (err) {
    if (err instanceof ColumnMapError) throw new UsageError(err.message)
    throw err
  }
  const stderr = (m: string) => process.stderr.write(`${m}\n`)
  let fileColumns: string[]
  try {
    fileColumns = await resolveColumns(file, columns, accepted, stderr)
  } catch (err) {
    if (err instanceof UsageError) throw err
    stderr(`cdp import: ${(err as Error).message}`) // the file itself cannot be read (e.g. duplicate header names)
    return 1
  }

  const config = loadConfig(process.env, configFlags(values, Object.keys(RUNTIME_FLAGS)))
  const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel })
  const sink = await openEventSink(config, logger, { apiUrl: values.api })
  // Validated here as the receiving side will: with the tenant's currency when it can tell.
  const tenantCurrency = kind === 'customers' ? undefined : await sink.tenantCurrency?.(tenant).catch(() => undefined)
  const rejectsFile = values.rejects ?? `${file}.rejects.jsonl`
  // A resumed import adds to the rejects of the run it continues (which wrote those of its handled records only).
  const rejectsFd = fs.openSync(rejectsFile, skip > 0 ? 'a' : 'w')
  const progress: Progress = createProgress({ label: `import ${file} → ${sink.describe}`, total: await estimateLineCount(file) })
  let result: ImportResult
  try {
    // JSON-valued columns (CSV) under the names the file gives them.
    const jsonColumns = ['items', 'source_ids'].map((f) => columns.get(f) ?? f)
    result = await importRecords(
      readRecords(file, { jsonColumns }),
      {
        tenant,
        kind,
        columns,
        currency,
        tenantCurrency,
        skip,
        batchSize,
        retry: { ...DEFAULT_RETRY_POLICY, retryForMs: retryFor * 1000 },
        now: Date.now(),
        knownKeys: new Set([...accepted, ...columns.values(), ...fileColumns]),
      },
      {
        sink,
        writeRejects: (lines) => new Promise((resolve, reject) => fs.write(rejectsFd, lines, (err) => (err ? reject(err) : resolve()))),
        onRecord: () => progress.tick(),
        onRetry: (m) => progress.note(`cdp import: ${sink.describe}: ${m}`),
      },
    )
  } finally {
    fs.closeSync(rejectsFd)
    await sink.close().catch(() => {})
  }
  progress.done(result.failure ? 'stopped' : 'done')
  if (result.unknownKeys.length > 0) {
    stderr(`cdp import: warning: ignored keys that are neither our fields nor mapped with --columns (found after the first ${count.format(JSONL_KEY_SAMPLE)} records): ${result.unknownKeys.join(', ')}`)
  }
  if (result.missingCurrency > 0) {
    stderr(`cdp import: ${count.format(result.missingCurrency)} orders were rejected for want of a currency: give the file's with --currency CODE (or set the tenant's currency)`)
  }
  const hasRejects = fs.statSync(rejectsFile).size > 0
  if (!hasRejects) fs.rmSync(rejectsFile, { force: true })
  const summary = {
    file,
    tenant_id: tenant,
    accepted: result.accepted,
    rejected: result.rejected,
    orders: result.orders,
    customers: result.customers,
    acknowledged: result.acknowledged,
    skipped: result.skipped,
    rejects_file: hasRejects ? rejectsFile : null,
  }
  if (result.failure) {
    const resume = resumeCommand(argv, result.handled)
    process.stderr.write(failureReport(file, result, resume, rejectsFile))
    const error = result.failure.error instanceof Error ? result.failure.error.message : String(result.failure.error)
    process.stdout.write(`${JSON.stringify({ ...summary, status: 'failed', error, handled: result.handled, resume_with: resume })}\n`)
    return 1
  }
  process.stdout.write(`${JSON.stringify({ ...summary, status: 'done' })}\n`)
  return values.strict && result.rejected > 0 ? 1 : 0
}
