import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { createApp } from '../../services/api/app.ts'
import { TOPICS } from '../../common/topics.ts'
import type { OrderEvent } from '../../common/events.ts'
import { silentLogger, testConfig, uniqueName, waitFor } from '../helpers.ts'
import { readDocumented } from './documented.ts'

let rt: Runtime
let server: http.Server
let base: string

beforeAll(async () => {
  rt = await openRuntime(testConfig('embedded'), silentLogger)
  const app = createApp({ logger: silentLogger, log: rt.log, codec: rt.codec, readiness: [{ name: 'store', check: async () => (await rt.store.ping()).success }] })
  server = http.createServer(app)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()))
  await rt.close()
})

/** The answer, checked against its documented schema (documented.ts). */
const post = async (path: string, body: unknown) =>
  readDocumented('POST', await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) }))

const goodOrder = { tenant_id: 42, customer_id: 7, order_id: 'A-1', currency: 'ARS', total: 150.5, occurred_at: '2025-03-01T12:00:00Z', items: [{ sku: 'X', quantity: 2, unit_price: '75.25' }] }

describe('ingest endpoint', () => {
  it('answers 202 once the events are in the log, with their ids, and the log holds them decoded', async () => {
    const res = await post('/api/v2/cdp/ingest/orders', { events: [goodOrder, { ...goodOrder, order_id: 'A-2', items: [] }] })
    expect(res.status).toBe(202)
    const body = res.body as { success: boolean; data: { accepted: number; event_ids: string[] } }
    expect(body.success).toBe(true)
    expect(body.data.accepted).toBe(2)
    expect(body.data.event_ids).toHaveLength(2)
    const seen: OrderEvent[] = []
    const h = await rt.log.consume({
      groupId: uniqueName('read'),
      topics: [TOPICS.orders.name],
      onBatch: async (b) => {
        for (const r of b.records) {
          expect(r.key!.toString()).toBe('42:7')
          seen.push(await rt.codec.decode<OrderEvent>(r.topic, r.value))
        }
      },
    })
    await waitFor(async () => seen.length >= 2)
    await h.stop()
    const a1 = seen.find((e) => e.order_id === 'A-1')!
    expect(a1.total).toBe('150.50')
    expect(a1.occurred_at).toBe(Date.UTC(2025, 2, 1, 12))
    expect(a1.placed_at).toBe(a1.occurred_at)
    expect(a1.source).toBe('http')
    expect(a1.status).toBe('paid')
    expect(a1.event_id).toBe(body.data.event_ids[0])
  })

  it('rejects the whole batch with 400 and field errors by index when one event is bad', async () => {
    const before = (await rt.log.endOffsets(TOPICS.orders.name)).reduce((s, p) => s + Number(p.offset), 0)
    const res = await post('/api/v2/cdp/ingest/orders', { events: [goodOrder, { ...goodOrder, event_type: 'placed', total: -3, items: [] }, { ...goodOrder, customer_id: undefined }] })
    expect(res.status).toBe(400)
    const body = res.body as { success: boolean; error: string; details: { errors: { index: number; path: string; code: string }[] } }
    expect(body.success).toBe(false)
    expect(body.error).toBe('Invalid events')
    expect(body.details.errors.map((e) => [e.index, e.path, e.code])).toEqual([
      [1, 'total', 'negative_total'],
      [2, 'customer_id', 'required'],
    ])
    const after = (await rt.log.endOffsets(TOPICS.orders.name)).reduce((s, p) => s + Number(p.offset), 0)
    expect(after).toBe(before)
  })

  it('refuses fields the events do not have (a password, a typo, an unknown item field) instead of dropping them, and writes nothing', async () => {
    const before = (await rt.log.endOffsets(TOPICS.customers.name)).reduce((s, p) => s + Number(p.offset), 0)
    const customer = { tenant_id: 42, customer_id: 8, occurred_at: '2025-03-01T12:00:00Z', email: 'a@b.test', country: 'AR' }
    const res = await post('/api/v2/cdp/ingest/customers', { events: [customer, { ...customer, customer_id: 9, password: 'hunter2', emial: 'x' }, { ...customer, customer_id: 10, country: 'XX' }] })
    expect(res.status).toBe(400)
    const body = res.body as { details: { errors: { index: number; path: string; code: string; message: string }[] } }
    expect(body.details.errors.map((e) => [e.index, e.path, e.code])).toEqual([
      [1, 'password', 'unknown_field'],
      [1, 'emial', 'unknown_field'],
      [2, 'country', 'invalid_country'],
    ])
    expect(JSON.stringify(body)).not.toContain('hunter2') // the refused value is never echoed
    expect((await rt.log.endOffsets(TOPICS.customers.name)).reduce((s, p) => s + Number(p.offset), 0)).toBe(before)
    const order = await post('/api/v2/cdp/ingest/orders', { events: [{ ...goodOrder, items: [{ sku: 'X', quantity: 2, unit_price: '75.25', colour: 'red' }] }] })
    expect(order.status).toBe(400)
    expect((order.body as typeof body).details.errors.map((e) => [e.index, e.path, e.code])).toEqual([[0, 'items.0.colour', 'unknown_field']])
  })

  it('answers malformed JSON, an empty batch and unknown routes with the common error body', async () => {
    const bad = await post('/api/v2/cdp/ingest/customers', '{"events": [')
    expect(bad.status).toBe(400)
    expect(bad.body).toMatchObject({ success: false, error: 'Invalid JSON' })
    const empty = await post('/api/v2/cdp/ingest/customers', { events: [] })
    expect(empty.status).toBe(400)
    expect(empty.body).toMatchObject({ success: false, error: 'Invalid request body' })
    const missing = await fetch(`${base}/nope`)
    expect(missing.status).toBe(404)
    expect(await missing.json()).toEqual({ success: false, error: 'Not found', details: 'no route for GET /nope' })
  })

  it('serves health, readiness and Prometheus metrics', async () => {
    expect((await readDocumented('GET', await fetch(`${base}/health`))).status).toBe(200)
    const ready = await readDocumented('GET', await fetch(`${base}/ready`))
    expect(ready.status).toBe(200)
    expect(ready.body).toEqual({ ready: true, checks: { store: true } })
    const metrics = (await readDocumented('GET', await fetch(`${base}/metrics`))).body
    expect(metrics).toMatch(/cdp_events_ingested_total\{kind="orders",source="http"\} 2/)
  })
})
