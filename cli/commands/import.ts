import fs from 'node:fs'
import { loadConfig } from '../../common/config.ts'
import { createLogger } from '../../common/logger.ts'
import { createProgress } from '../../common/progress.ts'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { estimateLineCount, importFormat, readRecords } from '../../pipelines/ingest/file-reader.ts'
import { validateCustomerInput, validateOrderInput } from '../../pipelines/ingest/validation.ts'
import { openEventSink } from '../../pipelines/ingest/sink.ts'
import type { IngestKind } from '../../pipelines/ingest/publisher.ts'
import { RUNTIME_FLAGS, UsageError, configFlags, parse } from '../args.ts'

const FLAGS = { ...RUNTIME_FLAGS, tenant: { type: 'string' }, kind: { type: 'string' }, api: { type: 'string' }, strict: { type: 'boolean' } } as const

const HELP = `usage: cdp import <file.csv|file.jsonl> --tenant N [--kind orders|customers] [--api URL] [--strict]

Validates every record (the ingest endpoint's rules), publishes the valid ones to the event log
in batches and writes rejected ones, with their line and field errors, to <file>.rejects.jsonl.
Without --kind, a record with an order_id is an order and any other record a customer.
Events without event_id get one derived from their content, so importing a file twice never
counts twice. While \`cdp start\` holds the embedded log, records go through its ingest API.
--strict exits 1 when any record was rejected. A summary is printed as JSON on stdout.
`

const BATCH = 5000

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, FLAGS)
  if (values.help) {
    process.stdout.write(HELP)
    return 0
  }
  const file = positionals[0]
  if (!file) throw new UsageError('import needs a file: cdp import <file.csv|file.jsonl> --tenant N')
  if (!fs.existsSync(file)) throw new UsageError(`no such file: ${file}`)
  importFormat(file) // fails early on an unsupported extension
  const tenant = Number(values.tenant)
  if (!Number.isSafeInteger(tenant) || tenant <= 0) throw new UsageError('--tenant must be a positive integer')
  const kind = values.kind as IngestKind | undefined
  if (kind && kind !== 'orders' && kind !== 'customers') throw new UsageError('--kind must be orders or customers')

  const config = loadConfig(process.env, configFlags(values, Object.keys(RUNTIME_FLAGS)))
  const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel })
  const sink = await openEventSink(config, logger, { apiUrl: values.api })
  const rejectsFile = `${file}.rejects.jsonl`
  const rejects = fs.createWriteStream(rejectsFile)
  const progress = createProgress({ label: `import ${file} → ${sink.describe}`, total: await estimateLineCount(file) })
  const pending: Record<IngestKind, (OrderEvent | CustomerUpserted)[]> = { orders: [], customers: [] }
  const counts = { accepted: 0, rejected: 0, orders: 0, customers: 0 }
  const flush = async (k: IngestKind) => {
    if (!pending[k].length) return
    await sink.publish(k, pending[k])
    counts[k] += pending[k].length
    pending[k] = []
  }
  const now = Date.now()
  try {
    for await (const item of readRecords(file)) {
      progress.tick()
      if ('error' in item) {
        counts.rejected++
        rejects.write(`${JSON.stringify({ line: item.line, errors: [{ path: '', code: 'unreadable', message: item.error }] })}\n`)
        continue
      }
      const k: IngestKind = kind ?? ('order_id' in item.record ? 'orders' : 'customers')
      const r = k === 'orders' ? validateOrderInput(item.record, { defaultSource: 'import', now, tenantId: tenant }) : validateCustomerInput(item.record, { defaultSource: 'import', now, tenantId: tenant })
      if (!r.ok) {
        counts.rejected++
        rejects.write(`${JSON.stringify({ line: item.line, errors: r.errors })}\n`)
        continue
      }
      counts.accepted++
      pending[k].push(r.value)
      if (pending[k].length >= BATCH) {
        // Customers before orders, so profiles precede the orders that name them.
        await flush('customers')
        await flush(k)
      }
    }
    await flush('customers')
    await flush('orders')
  } finally {
    progress.done()
    await new Promise<void>((r) => rejects.end(r))
    await sink.close()
  }
  if (counts.rejected === 0) fs.rmSync(rejectsFile, { force: true })
  process.stdout.write(`${JSON.stringify({ file, tenant_id: tenant, ...counts, rejects_file: counts.rejected ? rejectsFile : null })}\n`)
  return values.strict && counts.rejected > 0 ? 1 : 0
}
