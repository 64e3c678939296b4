/**
 * Retries and resume bookkeeping of `cdp import`, without a product process: the backoff
 * schedule, which failures are retried, the HTTP sink against a small local HTTP server that
 * fails the way a restarting ingest API does (503, dropped sockets, refused connections), and
 * the invariant behind `--skip N`: a failed import followed by a resumed one publishes every
 * record, and writes every reject exactly once.
 */
import http from 'node:http'
import net from 'node:net'
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { SinkError, openEventSink } from '../../pipelines/ingest/sink.ts'
import {
  DEFAULT_RETRY_POLICY,
  RetriesExhaustedError,
  isRetriableError as isRetriableSinkError,
  retryDelayMs,
  withRetry,
  type RetryPolicy,
} from '../../common/retry.ts'
import { readRecords } from '../../pipelines/ingest/file-reader.ts'
import { createProgress } from '../../common/progress.ts'
import { SchemaMismatchError } from '../../common/eventlog/codec.ts'
import { importRecords, type ImportOptions, type ImportResult } from '../../pipelines/ingest/importer.ts'
import { failureReport, resumeCommand, shellQuote } from '../../cli/commands/import.ts'
import { silentLogger, testConfig, tmpDir } from '../helpers.ts'

const FAST: RetryPolicy = { retryForMs: 5_000, initialDelayMs: 5, maxDelayMs: 40 }

function options(over: Partial<ImportOptions> = {}): ImportOptions {
  return { tenant: 3, columns: new Map(), skip: 0, batchSize: 10, retry: FAST, now: Date.UTC(2030, 0, 1), knownKeys: new Set(), currency: 'ARS', ...over }
}

/** A fake clock whose sleep advances it. */
function clock() {
  let t = 1_000
  const sleeps: number[] = []
  return { now: () => t, sleep: async (ms: number) => void (sleeps.push(ms), (t += ms)), sleeps }
}

describe('backoff', () => {
  it('waits 0.5 s, doubling, capped at 8 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((a) => retryDelayMs(a))).toEqual([500, 1000, 2000, 4000, 8000, 8000, 8000])
    expect(DEFAULT_RETRY_POLICY.retryForMs).toBe(60_000)
  })

  it('retries retriable failures until success', async () => {
    const c = clock()
    let calls = 0
    const seen: number[] = []
    const v = await withRetry(
      async () => {
        if (++calls < 4) throw new SinkError('503', true)
        return 'ok'
      },
      DEFAULT_RETRY_POLICY,
      { ...c, onRetry: (i) => seen.push(i.attempt) },
    )
    expect(v).toBe('ok')
    expect(c.sleeps).toEqual([500, 1000, 2000])
    expect(seen).toEqual([1, 2, 3])
  })

  it('gives up at the deadline, shortening the last wait; a non-retriable failure is not retried', async () => {
    const c = clock()
    const fail = async () => {
      throw new SinkError('ingest API answered 503', true)
    }
    const err = await withRetry(fail, { ...DEFAULT_RETRY_POLICY, retryForMs: 10_000 }, c).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RetriesExhaustedError)
    expect(c.sleeps).toEqual([500, 1000, 2000, 4000, 2500])
    expect(err).toMatchObject({ attempts: 6, elapsedMs: 10_000, message: 'gave up after 6 attempts in 10 s: ingest API answered 503' })

    let calls = 0
    await expect(
      withRetry(async () => {
        calls++
        throw new SinkError('refused the admin token (401)', false)
      }, DEFAULT_RETRY_POLICY, clock()),
    ).rejects.toThrow('401')
    expect(calls).toBe(1)
    // --retry-for 0: one attempt only.
    const once = clock()
    await expect(withRetry(fail, { ...DEFAULT_RETRY_POLICY, retryForMs: 0 }, once)).rejects.toBeInstanceOf(RetriesExhaustedError)
    expect(once.sleeps).toEqual([])
  })
})

describe('which failures are retried', () => {
  it('a refused connection (real), a dropped socket, 5xx, timeouts and transient Kafka errors are; the rest is not', async () => {
    const port = await closedPort()
    const refused = await fetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e)
    expect(isRetriableSinkError(refused)).toBe(true)

    const kafka = (name: string, extra: object = {}) => Object.assign(new Error('x'), { name }, extra)
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })
    expect(isRetriableSinkError(new TypeError('fetch failed', { cause: reset }))).toBe(true)
    expect(isRetriableSinkError(new Error('socket hang up'))).toBe(true)
    expect(isRetriableSinkError(new SinkError('ingest API answered 503', true))).toBe(true)
    expect(isRetriableSinkError(new DOMException('timed out', 'TimeoutError'))).toBe(true)
    expect(isRetriableSinkError(kafka('KafkaJSNumberOfRetriesExceeded', { retriable: false, cause: kafka('KafkaJSConnectionError') }))).toBe(true)
    expect(isRetriableSinkError(kafka('KafkaJSProtocolError', { retriable: true }))).toBe(true)

    expect(isRetriableSinkError(new SinkError('refused the admin token (401)', false))).toBe(false)
    expect(isRetriableSinkError(new SinkError('ingest API answered 400', false))).toBe(false)
    expect(isRetriableSinkError(kafka('KafkaJSProtocolError', { retriable: false }))).toBe(false)
    expect(isRetriableSinkError(new SchemaMismatchError('bad record'))).toBe(false)
    expect(isRetriableSinkError(new Error('boom'))).toBe(false)
    expect(isRetriableSinkError('boom')).toBe(false)
  })
})

// ---------------------------------------------------------------------------------------------
// A stand-in for the ingest endpoint that fails on demand.

type Behaviour = 'accept' | 'unavailable' | 'drop' | 'bad-request' | 'refuse-O1x'
interface FakeIngest {
  url: string
  /** What the next requests get (the last entry repeats). */
  plan: Behaviour[]
  /** Order ids of accepted batches, in order. */
  accepted: string[]
  customers: number[]
  requests: number
  close(): Promise<void>
}

const servers: FakeIngest[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close()
})

async function fakeIngest(plan: Behaviour[]): Promise<FakeIngest> {
  const state: FakeIngest = { url: '', plan, accepted: [], customers: [], requests: 0, close: async () => {} }
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (d) => (body += d))
    req.on('end', () => {
      const settings = /^\/api\/v2\/cdp\/tenants\/(\d+)\/settings$/.exec(req.url!)
      if (req.method === 'GET' && settings) {
        if (settings[1] === '404') return res.writeHead(404).end('{"success":false}')
        return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ success: true, data: { tenant_id: Number(settings[1]), currency: 'GBP' } }))
      }
      state.requests++
      const b = state.plan.length > 1 ? state.plan.shift()! : state.plan[0]!
      if (b === 'drop') return req.socket.destroy()
      if (b === 'unavailable') return res.writeHead(503).end('restarting')
      if (b === 'bad-request') return res.writeHead(400).end('{"success":false}')
      const events = (JSON.parse(body) as { events: { order_id?: string; customer_id: number }[] }).events
      if (b === 'refuse-O1x') {
        // Like the real endpoint's rules that need the server's state (currency_mismatch, invalid_refund).
        const errors = events.flatMap((e, index) => (/^O1\d$/.test(e.order_id ?? '') ? [{ index, path: 'currency', code: 'currency_mismatch', message: 'not the tenant currency' }] : []))
        if (errors.length) return res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ success: false, error: 'Invalid events', details: { errors } }))
      }
      if (req.url!.endsWith('/orders')) state.accepted.push(...events.map((e) => e.order_id!))
      else state.customers.push(...events.map((e) => e.customer_id))
      res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ success: true, data: { accepted: events.length } }))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  state.url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`
  state.close = () => new Promise<void>((r) => server.close(() => r()))
  servers.push(state)
  return state
}

async function closedPort(): Promise<number> {
  const s = net.createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as net.AddressInfo).port
  await new Promise<void>((r) => s.close(() => r()))
  return port
}

/** 100 orders with a reject every 7th record: the file both runs import. */
function ordersFile(): { file: string; ids: string[]; rejectLines: number[] } {
  const dir = tmpDir()
  const file = path.join(dir, 'orders.csv')
  const rows = ['order_id,customer_id,occurred_at,total']
  const ids: string[] = []
  const rejectLines: number[] = []
  for (let i = 1; i <= 100; i++) {
    if (i % 7 === 0) {
      rows.push(`R${i},${i},2024-01-01`) // short row
      rejectLines.push(i + 1)
    } else {
      rows.push(`O${i},${i},2024-01-01,${i}.50`)
      ids.push(`O${i}`)
    }
  }
  fs.writeFileSync(file, `${rows.join('\n')}\n`)
  return { file, ids, rejectLines }
}

async function runImport(file: string, apiUrl: string, over: Partial<ImportOptions> = {}) {
  const sink = await openEventSink(testConfig('embedded'), silentLogger, { apiUrl })
  const rejects: string[] = []
  const notes: string[] = []
  const result = await importRecords(readRecords(file), options(over), {
    sink,
    writeRejects: async (l) => void rejects.push(l),
    onRetry: (m) => notes.push(m),
  })
  const rejected = rejects.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { line: number })
  return { result, rejected, notes }
}

describe('HTTP sink: retries and resume', () => {
  it('rides out a restart: 503s and a dropped connection are retried, nothing is lost', async () => {
    const api = await fakeIngest(['accept', 'unavailable', 'drop', 'unavailable', 'accept'])
    const { file, ids } = ordersFile()
    const { result, notes } = await runImport(file, api.url)
    expect(result.failure).toBeUndefined()
    expect(result).toMatchObject({ read: 100, accepted: ids.length, acknowledged: ids.length, rejected: 100 - ids.length, handled: 100 })
    expect(new Set(api.accepted)).toEqual(new Set(ids))
    expect(notes.filter((n) => /; retry \d/.test(n))).toHaveLength(3)
    expect(notes).toContain(`batch of 10 orders acknowledged after 3 retries`)
  })

  it('gives up after --retry-for; resuming with --skip handled publishes the rest and writes each reject once', async () => {
    const { file, ids, rejectLines } = ordersFile()
    // Three batches get through, then the server stays down.
    const down = await fakeIngest(['accept', 'accept', 'accept', 'unavailable'])
    const first = await runImport(file, down.url, { retry: { ...FAST, retryForMs: 100 } })
    expect(first.result.failure?.stage).toBe('publish')
    expect(first.result.failure?.error).toBeInstanceOf(RetriesExhaustedError)
    expect(first.result.acknowledged).toBe(30)
    expect(down.accepted).toHaveLength(30)
    // Handled = every record up to the last acknowledged batch; its rejects are written, no later ones.
    const handled = first.result.handled
    expect(handled).toBeGreaterThanOrEqual(30)
    expect(handled).toBeLessThan(100)
    const acknowledgedIds = new Set(down.accepted)
    expect(ids.slice(0, acknowledgedIds.size)).toEqual([...acknowledgedIds])
    expect(first.rejected.map((r) => r.line)).toEqual(rejectLines.filter((l) => l - 1 <= handled))

    const up = await fakeIngest(['accept'])
    const second = await runImport(file, up.url, { skip: handled })
    expect(second.result.failure).toBeUndefined()
    expect(second.result.skipped).toBe(handled)
    // Together: every order published (none twice here, as the failed window was never acknowledged),
    // every reject written exactly once.
    expect([...down.accepted, ...up.accepted].sort()).toEqual([...ids].sort())
    expect([...first.rejected, ...second.rejected].map((r) => r.line)).toEqual(rejectLines)
    expect(first.result.acknowledged + second.result.acknowledged).toBe(ids.length)
  })

  it('a batch the server refuses (400) stops at once, with the same resume bookkeeping', async () => {
    const { file } = ordersFile()
    const api = await fakeIngest(['accept', 'bad-request'])
    const { result } = await runImport(file, api.url)
    expect(api.requests).toBe(2)
    expect(result.failure?.stage).toBe('publish')
    expect(result.failure?.error).toBeInstanceOf(SinkError)
    expect(result.acknowledged).toBe(10)
  })

  it('events the ingest API refuses become rejects (in line order) and the rest of their batch is sent again', async () => {
    const { file, ids, rejectLines } = ordersFile()
    const api = await fakeIngest(['refuse-O1x'])
    const { result, rejected } = await runImport(file, api.url)
    const refusedIds = ids.filter((id) => /^O1\d$/.test(id))
    expect(refusedIds.length).toBeGreaterThan(0)
    expect(result.failure).toBeUndefined()
    expect(result).toMatchObject({ acknowledged: ids.length - refusedIds.length, accepted: ids.length - refusedIds.length, rejected: 100 - ids.length + refusedIds.length, handled: 100 })
    expect(api.accepted.sort()).toEqual(ids.filter((id) => !refusedIds.includes(id)).sort())
    const lines = rejected.map((r) => r.line)
    expect(lines).toEqual([...lines].sort((x, y) => x - y))
    expect(lines).toEqual([...rejectLines, ...refusedIds.map((id) => Number(id.slice(1)) + 1)].sort((x, y) => x - y))
    expect(rejected.find((r) => r.line === 11)).toEqual({ line: 11, raw: 'O10,10,2024-01-01,10.50', errors: [{ path: 'currency', code: 'currency_mismatch', message: 'not the tenant currency' }] })
  })

  it("asks the ingest API for the tenant's currency (null for a tenant it does not know)", async () => {
    const api = await fakeIngest(['accept'])
    const sink = await openEventSink(testConfig('embedded'), silentLogger, { apiUrl: api.url })
    expect(await sink.tenantCurrency!(3)).toBe('GBP')
    expect(await sink.tenantCurrency!(404)).toBeNull()
  })

  it('a refused connection is retried too, and reported by its code', async () => {
    const port = await closedPort()
    const { file } = ordersFile()
    const { result, notes } = await runImport(file, `http://127.0.0.1:${port}`, { retry: { ...FAST, retryForMs: 60 } })
    expect(result.failure?.error).toBeInstanceOf(RetriesExhaustedError)
    expect(result).toMatchObject({ acknowledged: 0, handled: 0 })
    expect(notes[0]).toMatch(/^fetch failed \(ECONNREFUSED\); retry 1 in /)
  })
})

describe('what a failed import prints', () => {
  it('the resume command: same arguments, --skip N instead of any earlier one, quoted for a shell', () => {
    expect(resumeCommand(['orders.csv', '--tenant', '7', '--skip', '10', '--columns', 'order_id=No'], 250)).toBe(
      'cdp import orders.csv --tenant 7 --columns order_id=No --skip 250',
    )
    expect(resumeCommand(['my shop.csv', '--skip=5', '--tenant=7'], 0)).toBe(`cdp import 'my shop.csv' --tenant=7 --skip 0`)
    expect(shellQuote("it's")).toBe(`'it'\\''s'`)
  })

  it('says what was acknowledged, where to resume and that re-sending is idempotent', () => {
    const result: ImportResult = {
      read: 1200, skipped: 0, accepted: 1150, rejected: 3, acknowledged: 1000, orders: 1000, customers: 0, handled: 1003, unknownKeys: [], missingCurrency: 0,
      failure: { stage: 'publish', error: new RetriesExhaustedError(12, 60_000, new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8080'), { code: 'ECONNREFUSED' }) })) },
    }
    const text = failureReport('orders.csv', result, 'cdp import orders.csv --tenant 7 --skip 1003', 'orders.csv.rejects.jsonl')
    expect(text).toContain('stopped: the event sink stayed unreachable: gave up after 12 attempts in 60 s: fetch failed (ECONNREFUSED)')
    expect(text).toContain('acknowledged: 1,000 records published and confirmed')
    expect(text).toContain('the first 1,003 of the 1,200 records read are acknowledged or in orders.csv.rejects.jsonl')
    expect(text).toContain('resume with: cdp import orders.csv --tenant 7 --skip 1003')
    expect(text).toContain('re-sending is idempotent')
    expect(text).not.toMatch(/\n\s+at /) // no stack trace
  })
})

describe('progress', () => {
  const stream = (isTTY: boolean) => {
    let out = ''
    return { s: { isTTY, columns: 80, write: (t: string) => ((out += t), true) } as unknown as NodeJS.WriteStream, out: () => out }
  }

  it('prints notes on their own line and says how the work ended', () => {
    const plain = stream(false)
    let t = 0
    const p = createProgress({ label: 'import x', total: 10, stream: plain.s, now: () => t })
    p.tick(4)
    p.note('retrying')
    t = 1500
    p.done('stopped')
    expect(plain.out()).toBe('retrying\nimport x stopped: 4 in 1.5s (3/s)\n')

    const tty = stream(true)
    const q = createProgress({ label: 'import x', total: 10, stream: tty.s, now: () => t })
    q.note('retrying')
    expect(tty.out()).toBe('\r\x1b[Kretrying\n\rimport x [--------------------] 0% 0/10 0/s\x1b[K')
  })
})
