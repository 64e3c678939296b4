/**
 * End to end: `cdp import` of a shop's orders through a running `cdp start` (embedded runtime)
 * that is SIGKILLed mid-import.
 *
 *   1. The first import retries for a few seconds, then stops with exit 1 and says how many
 *      records were acknowledged and which `--skip N` resumes; no stack trace.
 *   2. The resumed import (`--skip N`) starts while the server is still down, keeps retrying,
 *      and gets through once the server is back.
 *   3. ClickHouse then holds exactly the file's orders: each order id once, the file's total.
 *
 * Only invariants are asserted (never timings or batch splits). chdb admits one on-disk path per
 * process, so this process opens the child's ClickHouse only after every child has exited.
 */
import { afterEach, describe, expect, inject, it } from 'vitest'
import { cdp, killChildren, freePort, startServer } from '../cdp-process.ts'
import fs from 'node:fs'
import path from 'node:path'
import { EmbeddedEventLog } from '../../common/eventlog/embedded.ts'
import { openStore } from '../../common/store/clickhouse.ts'
import { TOPICS } from '../../common/topics.ts'
import { PROJECTION_GROUP } from '../../pipelines/projection/pipeline.ts'
import type { PartitionOffset } from '../../common/eventlog/port.ts'
import { tmpDir, waitFor } from '../helpers.ts'

afterEach(killChildren)

const ORDERS = TOPICS.orders.name
const ROWS = 4000
const BATCH = 20
const TENANT = 42
const COLUMNS = 'order_id=Invoice,occurred_at=Date,customer_id=Client,total=Amount'

/** A shop's orders export: its own column names, 4,000 invoices of 400 clients over 2023. */
function writeExport(file: string): { ids: string[]; cents: number } {
  const lines = ['Invoice,Date,Client,Amount,Channel']
  const ids: string[] = []
  let cents = 0
  for (let i = 1; i <= ROWS; i++) {
    const id = `INV-${String(i).padStart(6, '0')}`
    const c = 100 + ((i * 7919) % 50_000)
    const day = new Date(Date.UTC(2023, 0, 1) + (i % 365) * 86_400_000).toISOString().slice(0, 10)
    lines.push(`${id},${day},${1 + (i % 400)},${(c / 100).toFixed(2)},web`)
    ids.push(id)
    cents += c
  }
  fs.writeFileSync(file, `${lines.join('\n')}\n`)
  return { ids, cents }
}

/** The projection group's committed offsets, from its offsets file (atomically replaced on each commit). */
function committed(logDir: string): PartitionOffset[] {
  const file = path.join(logDir, 'groups', `${encodeURIComponent(PROJECTION_GROUP)}.json`)
  if (!fs.existsSync(file)) return []
  const g = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, Record<string, string>>
  return Object.entries(g[ORDERS] ?? {}).map(([p, offset]) => ({ partition: Number(p), offset }))
}

const sumOffsets = (o: PartitionOffset[]) => o.reduce((s, x) => s + Number(x.offset), 0)
const sorted = (o: PartitionOffset[]) => [...o].filter((x) => x.offset !== '0').sort((a, b) => a.partition - b.partition)

describe('cdp import survives a server killed mid-import', () => {
  it('reports what was acknowledged, resumes with --skip, and ends with exactly the file in ClickHouse', { timeout: 400_000 }, async () => {
    const dir = tmpDir('cdp-import-resume-')
    const dataDir = path.join(dir, 'data')
    const logDir = path.join(dataDir, 'log')
    const file = path.join(dir, 'shop-orders.csv')
    const { ids, cents } = writeExport(file)
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    const ch = inject('clickhouseUrl')
    const env = {
      CDP_RUNTIME: 'embedded',
      CDP_DATA_DIR: dataDir,
      CDP_API_PORT: String(port),
      CDP_METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
      ...(ch ? { CLICKHOUSE_URL: ch } : {}),
    }
    const importArgs = ['import', file, '--tenant', String(TENANT), '--kind', 'orders', '--columns', COLUMNS, '--currency', 'ars', '--batch-size', String(BATCH)]

    // 1. Import through the running server; SIGKILL the server a few batches in. The importer sends
    //    a batch only once the previous one is acknowledged, so with 5 batches durable in the log
    //    (the server's own count) at least 4 have been acknowledged.
    const first = await startServer('first server', env, url)
    const importA = cdp('first import', [...importArgs, '--retry-for', '3'], env)
    await waitFor(
      async () => {
        if (importA.exit) throw new Error(`the import ended before the server was killed: ${JSON.stringify(importA.exit)}\n${importA.log()}`)
        const metrics = await (await fetch(`${url}/metrics`)).text()
        const ingested = /^cdp_events_ingested_total\{[^}]*kind="orders"[^}]*\} (\d+)/m.exec(metrics)
        return Number(ingested?.[1] ?? 0) >= 5 * BATCH
      },
      { what: 'a few batches in the log', timeoutMs: 120_000, intervalMs: 5 },
    )
    first.proc.kill('SIGKILL')
    expect((await first.waitExit(30_000)).signal).toBe('SIGKILL')

    const a = await importA.waitExit(120_000)
    expect(a, importA.log()).toEqual({ code: 1, signal: null })
    const sa = JSON.parse(importA.out.trim().split('\n').pop()!)
    expect(sa).toMatchObject({ status: 'failed', tenant_id: TENANT, skipped: 0, rejected: 0, rejects_file: null })
    const n: number = sa.handled
    expect(n).toBeGreaterThanOrEqual(4 * BATCH)
    expect(n).toBeLessThan(ROWS)
    // Orders only, no rejects: the records handled are exactly the ones acknowledged.
    expect(sa.acknowledged).toBe(n)
    expect(sa.orders).toBe(n)
    expect(sa.resume_with).toBe(`cdp import ${[...importArgs.slice(1), '--retry-for', '3'].join(' ')} --skip ${n}`)
    expect(importA.err).toContain(`acknowledged: ${n.toLocaleString('en-US')} records published and confirmed`)
    expect(importA.err).toContain(`resume with: ${sa.resume_with}`)
    expect(importA.err).toContain('re-sending is idempotent')
    expect(importA.err).toMatch(/ECONNREFUSED|ECONNRESET|socket|other side closed|fetch failed/)
    expect(importA.err, 'no stack trace').not.toMatch(/\n\s+at \S+ \(/)
    expect(fs.existsSync(`${file}.rejects.jsonl`)).toBe(false)
    console.info(`[import-resume] first import stopped with ${n}/${ROWS} records acknowledged`)

    // 2. Resume while the server is still down (--api: the log's lock holder is gone), then restart it.
    const importB = cdp('resumed import', [...importArgs, '--skip', String(n), '--retry-for', '180', '--api', url], env)
    await waitFor(
      async () => {
        if (importB.exit) throw new Error(`the resumed import ended while the server was down: ${JSON.stringify(importB.exit)}\n${importB.log()}`)
        return /retry 1 in/.test(importB.err)
      },
      { what: 'the resumed import to retry', timeoutMs: 60_000 },
    )
    const second = await startServer('restarted server', env, url)
    const b = await importB.waitExit(240_000)
    expect(b, importB.log()).toEqual({ code: 0, signal: null })
    const sb = JSON.parse(importB.out.trim().split('\n').pop()!)
    expect(sb).toMatchObject({ status: 'done', skipped: n, accepted: ROWS - n, acknowledged: ROWS - n, orders: ROWS - n, rejected: 0 })
    expect(importB.err).toMatch(/acknowledged after \d+ retr/)

    // 3. Let the projection consume the whole log, with no producer left.
    await waitFor(async () => sumOffsets(committed(logDir)) >= ROWS, { what: 'the projection to commit the imported orders', timeoutMs: 120_000, intervalMs: 100 })
    second.proc.kill('SIGTERM')
    expect(await second.waitExit(60_000), second.log()).toEqual({ code: 0, signal: null })
    const log = await EmbeddedEventLog.open(logDir)
    let ends: PartitionOffset[]
    try {
      ends = await log.endOffsets(ORDERS)
    } finally {
      await log.close()
    }
    // Batches in flight at the kill may have reached the log without an acknowledgement: re-sent, they are twins.
    expect(sumOffsets(ends)).toBeGreaterThanOrEqual(ROWS)
    if (JSON.stringify(sorted(committed(logDir))) !== JSON.stringify(sorted(ends))) {
      console.info('[import-resume] the restarted server stopped before the end of the log: draining it with the features role')
      const third = await startServer('drain', env, url, 'features')
      await waitFor(async () => JSON.stringify(sorted(committed(logDir))) === JSON.stringify(sorted(ends)), {
        what: 'the projection to reach the end of the log',
        timeoutMs: 120_000,
        intervalMs: 100,
      })
      third.proc.kill('SIGTERM')
      expect(await third.waitExit(60_000), third.log()).toEqual({ code: 0, signal: null })
    }
    console.info(`[import-resume] ${sumOffsets(ends)} order records in the log for ${ROWS} orders`)

    const store = await openStore(ch ? { url: ch, database: 'cdp' } : { database: 'cdp', chdbPath: path.join(dataDir, 'clickhouse') })
    try {
      const q = async <T>(query: string) => (await (await store.query({ query, query_params: { t: TENANT }, format: 'JSONEachRow' })).json<T>())
      const [counts] = await q<{ orders: string; distinct_ids: string; cents: string; events: string }>(
        `SELECT count() AS orders, uniqExact(order_id) AS distinct_ids, toString(sum(toInt64(total * 100))) AS cents,
                (SELECT count() FROM order_events FINAL WHERE tenant_id = {t:UInt64}) AS events
         FROM orders FINAL WHERE tenant_id = {t:UInt64}`,
      )
      expect(Number(counts!.orders)).toBe(ROWS)
      expect(Number(counts!.distinct_ids)).toBe(ROWS)
      expect(Number(counts!.events)).toBe(ROWS)
      expect(Number(counts!.cents)).toBe(cents)
      const stored = (await q<{ order_id: string }>('SELECT order_id FROM orders FINAL WHERE tenant_id = {t:UInt64} ORDER BY order_id')).map((r) => r.order_id)
      expect(stored).toEqual(ids)
    } finally {
      await store.close()
    }
    fs.rmSync(dir, { recursive: true, force: true })
  })
})
