import fs from 'node:fs'
import { loadConfig } from '../../common/config.ts'
import { createLogger } from '../../common/logger.ts'
import { createProgress } from '../../common/progress.ts'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { RetriesExhaustedError, describeRetry, withRetry, type RetryPolicy } from '../../common/retry.ts'
import { generateEvents, type GeneratedEvent } from '../../pipelines/ingest/synthetic/generate.ts'
import { sharedPopulationEvents } from '../../pipelines/ingest/synthetic/shared-population.ts'
import { openEventSink } from '../../pipelines/ingest/sink.ts'
import type { IngestKind } from '../../pipelines/ingest/publisher.ts'
import { RUNTIME_FLAGS, UsageError, configFlags, parse, retryPolicyFlag } from '../args.ts'

const FLAGS = {
  ...RUNTIME_FLAGS,
  tenant: { type: 'string' },
  customers: { type: 'string' },
  seed: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  out: { type: 'string', short: 'o' },
  publish: { type: 'boolean' },
  api: { type: 'string' },
  'retry-for': { type: 'string' },
  overlap: { type: 'string' },
  truth: { type: 'string' },
} as const

const HELP = `usage: cdp generate --tenant N [--customers 1000] [--seed S] [--from YYYY-MM-DD] [--to YYYY-MM-DD]
                    [--overlap SHARE [--truth FILE]]
                    [--out FILE | --publish [--api URL] [--retry-for SECONDS]]

A realistic synthetic Argentine shop: names, emails, phones, DNI/CUIL, provinces and postal codes
(a share of them messy, as real records are), and purchase histories from a buying process with
repeat, one-time and churned customers and seasonality. Deterministic: the same options give the
same bytes. Writes JSONL (importable with \`cdp import\`) to FILE or stdout, or with --publish
publishes straight into the event log (through the ingest API of a \`cdp start\` holding the
embedded log, or --api URL). Defaults: 1000 customers, seed = tenant, the last two years.

  --retry-for SECONDS  with --publish: keep retrying a batch while the ingest API or the event log
                       is unreachable (backoff 0.5 s doubling to 8 s, as cdp import); default 60
  --overlap SHARE      the shop's buyers on two platforms (default off): every customer buys on
                       the commerce platform (source commerce_platform, customer id 1..N), the
                       SHARE (0..1) of them also on the marketplace (source marketplace, customer
                       id 1000000000 + N), which has their e-mail, phone and DNI/CUIL written
                       another way or missing, and about half of their orders; a few families
                       share one e-mail. The kind of population \`cdp simulator
                       commerce-platform|marketplace --overlap\` serve, as events
  --truth FILE         with --overlap: the ground truth, one JSON line per source customer:
                       {"customer_id": N, "person_id": P, "source": "commerce_platform|marketplace"}
`

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, FLAGS)
  if (values.help) {
    process.stdout.write(HELP)
    return 0
  }
  const tenantId = Number(values.tenant)
  if (!Number.isSafeInteger(tenantId) || tenantId <= 0) throw new UsageError('--tenant must be a positive integer')
  const customers = Number(values.customers ?? 1000)
  if (!Number.isSafeInteger(customers) || customers <= 0) throw new UsageError('--customers must be a positive integer')
  const end = values.to ? parseDate(values.to, '--to') : startOfTodayUtc()
  const start = values.from ? parseDate(values.from, '--from') : new Date(end.getTime() - 730 * 86_400_000)
  if (start >= end) throw new UsageError('--from must be before --to')
  const retry = retryPolicyFlag(values['retry-for'])
  const overlap = values.overlap === undefined ? undefined : Number(values.overlap)
  if (overlap !== undefined && !(overlap >= 0 && overlap <= 1)) throw new UsageError(`--overlap must be a number between 0 and 1, got '${values.overlap}'`)
  if (values.truth !== undefined && overlap === undefined) throw new UsageError('--truth needs --overlap')
  const seed = values.seed ?? String(tenantId)
  const truth = values.truth ? new LineFile(values.truth) : null
  const gen =
    overlap === undefined
      ? generateEvents({ tenantId, customers, seed, start, end })
      : sharedPopulationEvents({ tenantId, people: customers, seed, start, end, overlapShare: overlap }, truth ? (t) => truth.write(JSON.stringify({ customer_id: t.customer_id, person_id: t.person_id, source: t.source })) : undefined)
  try {
    return await emit(gen, values, tenantId, retry)
  } finally {
    truth?.close()
  }
}

/** Writes the events as JSONL (to --out or stdout), or with --publish publishes them. */
async function emit(gen: Iterable<GeneratedEvent>, values: ReturnType<typeof parse<typeof FLAGS>>['values'], tenantId: number, retry: RetryPolicy): Promise<number> {
  if (!values.publish) {
    const out: NodeJS.WritableStream = values.out ? fs.createWriteStream(values.out) : process.stdout
    let n = 0
    for (const e of gen) {
      if (!out.write(`${JSON.stringify(e.value)}\n`)) await new Promise<void>((r) => out.once('drain', () => r()))
      n++
    }
    if (values.out) {
      await new Promise<void>((r) => out.end(() => r()))
      process.stderr.write(`wrote ${n} events to ${values.out}\n`)
    }
    return 0
  }

  const config = loadConfig(process.env, configFlags(values, Object.keys(RUNTIME_FLAGS)))
  const sink = await openEventSink(config, createLogger({ level: 'warn' }), { apiUrl: values.api })
  const progress = createProgress({ label: `generate tenant ${tenantId} → ${sink.describe}` })
  const pending: Record<IngestKind, (OrderEvent | CustomerUpserted)[]> = { orders: [], customers: [] }
  const published: Record<IngestKind, number> = { orders: 0, customers: 0 }
  const publish = async (kind: IngestKind) => {
    await withRetry(() => sink.publish(kind, pending[kind]), retry, { onRetry: (info) => progress.note(`cdp generate: ${sink.describe}: ${describeRetry(info)}`) })
    published[kind] += pending[kind].length
  }
  const flush = async () => {
    await publish('customers')
    await publish('orders')
    progress.tick(pending.customers.length + pending.orders.length)
    pending.customers = []
    pending.orders = []
  }
  try {
    for (const e of gen) {
      pending[e.topic].push(e.value)
      if (pending.customers.length + pending.orders.length >= 5000) await flush()
    }
    await flush()
  } catch (err) {
    if (!(err instanceof RetriesExhaustedError)) throw err
    progress.done('stopped')
    const n = (x: number) => x.toLocaleString('en-US')
    process.stderr.write(
      [
        `cdp generate: stopped: the event sink stayed unreachable: ${err.message}`,
        `  published: ${n(published.customers + published.orders)} events (${n(published.customers)} customers, ${n(published.orders)} orders)`,
        '  the same options generate the same events with the same ids, so running the same command again is safe (what was published twice collapses in the projections)',
        '',
      ].join('\n'),
    )
    return 1
  } finally {
    progress.done()
    await sink.close()
  }
  return 0
}

function parseDate(s: string, flag: string): Date {
  const d = new Date(`${s}T00:00:00Z`)
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s) || Number.isNaN(d.getTime())) throw new UsageError(`${flag} must be a date YYYY-MM-DD`)
  return d
}

function startOfTodayUtc(): Date {
  const d = new Date()
  d.setUTCHours(0, 0, 0, 0)
  return d
}

/** Lines appended to a file synchronously, in blocks of about 64 KiB: memory stays small however many are written. */
class LineFile {
  private readonly fd: number
  private buffered: string[] = []
  private size = 0

  constructor(path: string) {
    this.fd = fs.openSync(path, 'w')
  }

  write(line: string): void {
    this.buffered.push(line)
    this.size += line.length + 1
    if (this.size >= 65_536) this.flush()
  }

  private flush(): void {
    if (this.buffered.length) fs.writeSync(this.fd, `${this.buffered.join('\n')}\n`)
    this.buffered = []
    this.size = 0
  }

  close(): void {
    this.flush()
    fs.closeSync(this.fd)
  }
}
