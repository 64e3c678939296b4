/**
 * `cdp import FILE`: validates a shop's export record by record, publishes the valid ones in
 * batches and writes the rejected ones to FILE.rejects.jsonl. The command reads its flags,
 * reports usage errors, opens the sink and prints; the import itself is
 * pipelines/ingest/importer.ts (the loop, windows and resume bookkeeping, the summary) and the
 * --columns mapping pipelines/ingest/column-map.ts.
 */
import fs from 'node:fs'
import { loadConfig } from '../../common/config.ts'
import { createLogger } from '../../common/logger.ts'
import { createProgress } from '../../common/progress.ts'
import { ORDER_EVENT_TYPES } from '../../common/events.ts'
import { RetriesExhaustedError, describeError } from '../../common/retry.ts'
import { estimateLineCount, importFormat } from '../../pipelines/ingest/file-reader.ts'
import { ColumnMapError, JSONL_KEY_SAMPLE, acceptedFields, checkFileColumns, parseColumnMap } from '../../pipelines/ingest/column-map.ts'
import { importFile, lookupTenantCurrency, type ImportResult } from '../../pipelines/ingest/importer.ts'
import { CUSTOMER_INPUT_FIELDS, ORDER_INPUT_FIELDS, ORDER_ITEM_FIELDS } from '../../pipelines/ingest/validation.ts'
import { HTTP_BATCH, openEventSink } from '../../pipelines/ingest/sink.ts'
import type { IngestKind } from '../../pipelines/ingest/publisher.ts'
import { RUNTIME_FLAGS, UsageError, configFlags, parse, retryPolicyFlag } from '../args.ts'

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
        ? `a batch was refused: ${describeError(f.error)}`
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
  const retry = retryPolicyFlag(values['retry-for'])
  const accepted = acceptedFields(kind)
  const stderr = (m: string) => process.stderr.write(`${m}\n`)
  let columns: Map<string, string>
  let fileColumns: string[]
  try {
    columns = parseColumnMap(values.columns ?? [], accepted, kind ? `accepted for --kind ${kind}` : 'accepted (orders and customers)')
    const check = await checkFileColumns(file, columns, accepted)
    fileColumns = check.fileColumns
    if (check.unknown.length > 0) {
      const one = check.unknown.length === 1
      stderr(`cdp import: warning: ignoring ${one ? 'column' : 'columns'} that ${one ? 'is' : 'are'} neither one of our fields nor mapped with --columns: ${check.unknown.join(', ')} (cdp import --help lists the fields)`)
    }
    if (check.shadowed.length > 0) {
      stderr(`cdp import: warning: ignoring ${check.shadowed.map((c) => `column "${c}" (--columns fills ${c} from "${columns.get(c)}")`).join(', ')}`)
    }
  } catch (err) {
    if (err instanceof ColumnMapError) throw new UsageError(err.message)
    stderr(`cdp import: ${(err as Error).message}`) // the file itself cannot be read (e.g. duplicate header names)
    return 1
  }

  const config = loadConfig(process.env, configFlags(values, Object.keys(RUNTIME_FLAGS)))
  const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel })
  const sink = await openEventSink(config, logger, { apiUrl: values.api })
  // Validated here as the receiving side will: with the tenant's currency when it can tell.
  const tenantCurrency = await lookupTenantCurrency(sink, tenant, kind)
  const rejectsFile = values.rejects ?? `${file}.rejects.jsonl`
  const progress = createProgress({ label: `import ${file} → ${sink.describe}`, total: await estimateLineCount(file) })
  let outcome: Awaited<ReturnType<typeof importFile>>
  try {
    outcome = await importFile(
      file,
      { tenant, kind, columns, currency, tenantCurrency, skip, batchSize, retry, now: Date.now(), rejectsFile, fileColumns },
      { sink, onRecord: () => progress.tick(), onRetry: (m) => progress.note(`cdp import: ${sink.describe}: ${m}`) },
    )
  } finally {
    await sink.close().catch(() => {})
  }
  const { result, summary } = outcome
  progress.done(result.failure ? 'stopped' : 'done')
  if (result.unknownKeys.length > 0) {
    stderr(`cdp import: warning: ignored keys that are neither our fields nor mapped with --columns (found after the first ${count.format(JSONL_KEY_SAMPLE)} records): ${result.unknownKeys.join(', ')}`)
  }
  if (result.missingCurrency > 0) {
    stderr(`cdp import: ${count.format(result.missingCurrency)} orders were rejected for want of a currency: give the file's with --currency CODE (or set the tenant's currency)`)
  }
  if (result.failure) {
    const resume = resumeCommand(argv, result.handled)
    process.stderr.write(failureReport(file, result, resume, rejectsFile))
    process.stdout.write(`${JSON.stringify({ ...summary, resume_with: resume })}\n`)
    return 1
  }
  process.stdout.write(`${JSON.stringify(summary)}\n`)
  return values.strict && result.rejected > 0 ? 1 : 0
}
