/**
 * An analytics body worker thread (body-workers.ts has the pool and the protocol): it keeps each
 * tenant's summary as published by the main thread (the customer columns in shared memory, the
 * stored parts copied) and computes endpoint bodies from it. It has no store of its own: the main
 * thread runs the few live queries a body makes (the rows of a page, segment movements) and sends
 * their rows back.
 */
import { parentPort, workerData } from 'node:worker_threads'
import type { Store } from '../../../common/store/clickhouse.ts'
import { createLogger } from '../../../common/logger.ts'
import { ResponseCache } from './cache.ts'
import { columnsOfMessage, type CustomerColumns } from './customer-columns.ts'
import { NO_CONTENT, type AnalyticsContext } from './endpoint.ts'
import { ANALYTICS_ENDPOINTS } from './endpoints.ts'
import { collectColumnarCount, prepareColumns, type SummarySource } from './summary.ts'
import { LIVE, type QueryArgs, type WorkerMessage, type WorkerReply, type WorkerRequest } from './body-workers.ts'

interface Kept {
  referenceMs: number
  values: Map<string, unknown>
  columns: CustomerColumns
}

const tenants = new Map<number, Kept>()
const logger = createLogger({ level: (workerData as { logLevel?: string } | undefined)?.logLevel ?? 'info', name: 'analytics-worker' })
const summaries: SummarySource = {
  lookup: (t, name) => tenants.get(t)?.values.get(name),
  asOf: (t) => tenants.get(t)?.referenceMs ?? null,
  columns: (t) => tenants.get(t)?.columns,
}
class LiveQueryNeeded extends Error {
  constructor(readonly query: string) {
    super(LIVE)
  }
}
const asked = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
let nextQuery = 1
/** A query's result read on the main thread (which holds the store) and sent here. */
function ask(args: QueryArgs, read: 'json' | 'text'): Promise<unknown> {
  const qid = nextQuery++
  return new Promise((resolve, reject) => {
    asked.set(qid, { resolve, reject })
    port.postMessage({ query: qid, args, read } satisfies WorkerMessage)
  })
}
/**
 * The store as a body sees it: a query runs on the main thread and its rows come back (what
 * `select` reads: json, or text); anything else (a stream, an insert) fails with LIVE, and the
 * main thread answers that body itself.
 */
const store = new Proxy({}, {
  get: (_, method) => (method === 'then' || typeof method === 'symbol' ? undefined : (args?: QueryArgs & { table?: string }) => {
    if (method === 'query' && args) return Promise.resolve({ json: () => ask(args, 'json'), text: () => ask(args, 'text') })
    return Promise.reject(new LiveQueryNeeded(`${String(method)}: ${(args?.query ?? args?.table ?? '').replace(/\s+/g, ' ').slice(0, 200)}`))
  }),
}) as Store
const cache = new ResponseCache(Date.now, 0)
const port = parentPort!

port.on('message', (m: WorkerRequest) => {
  if (m.kind === 'rows') {
    const waiting = asked.get(m.query)
    asked.delete(m.query)
    if (m.error !== undefined) waiting?.reject(new Error(m.error))
    else waiting?.resolve(m.value)
  } else if (m.kind === 'publish') {
    const columns = columnsOfMessage(m.columns)
    for (const ep of ANALYTICS_ENDPOINTS) {
      for (const [name, revive] of Object.entries(ep.revive ?? {})) if (m.values.has(name)) m.values.set(name, revive(m.values.get(name)))
    }
    tenants.set(m.tenantId, { referenceMs: m.referenceMs, values: m.values, columns })
    const failed = (err: unknown) => logger.warn({ err }, 'preparing customer columns failed; requests prepare what they need')
    void prepareColumns(columns, ANALYTICS_ENDPOINTS, m.referenceMs, failed).then(() => {
      if (tenants.get(m.tenantId)?.columns === columns) port.postMessage({ ready: m.publication, tenantId: m.tenantId } satisfies WorkerMessage)
    })
  } else if (m.kind === 'drop') tenants.delete(m.tenantId)
  else void answer(m)
})

async function answer(m: Extract<WorkerRequest, { kind: 'body' }>): Promise<void> {
  let reply: WorkerReply
  try {
    const ep = ANALYTICS_ENDPOINTS.find((e) => e.path === m.path)
    if (!ep || !tenants.has(m.tenantId)) reply = { id: m.id, outcome: 'live' }
    else {
      const ctx: AnalyticsContext = { store, logger, now: () => m.nowMs, cache, summaries }
      const body = await ep.body(ctx, m.query as never)
      reply = body === NO_CONTENT ? { id: m.id, outcome: 'no_content' } : { id: m.id, outcome: 'body', body }
    }
  } catch (err) {
    const status = (err as { status?: unknown })?.status
    reply = err instanceof LiveQueryNeeded
      ? { id: m.id, outcome: 'live', needs: err.query }
      : typeof status === 'number' && status >= 400 && status < 500
        ? { id: m.id, outcome: 'refused', status, message: String((err as Error).message) }
        : { id: m.id, outcome: 'failed', error: String((err as Error)?.message ?? err) }
  }
  reply.columnar = collectColumnarCount()
  try {
    port.postMessage(reply)
  } catch (err) {
    port.postMessage({ id: m.id, outcome: 'failed', error: `the body could not be sent: ${String((err as Error).message)}` } satisfies WorkerReply)
  }
}
