import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import { Writable } from 'node:stream'
import { migrate, openStore, type Store } from '../../common/store/clickhouse.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { createLogger } from '../../common/logger.ts'
import { registry } from '../../common/runtime/metrics.ts'
import { createApp } from '../../services/api/app.ts'
import { serve, tmpDir } from '../helpers.ts'

/** Request ids, the access log and the HTTP metrics (services/api/request-observability.ts). */
let store: Store
let server: http.Server
let base: string
const lines: Record<string, unknown>[] = []
const TOKEN = 'admin-token-for-observability-test'

beforeAll(async () => {
  store = await openStore({ database: 'cdp', chdbPath: tmpDir() })
  await migrate(store, createLogger({ level: 'silent' }))
  const sink = new Writable({ write: (chunk, _e, cb) => (lines.push(...String(chunk).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)), cb()) })
  const logger = createLogger({ level: 'info', destination: sink })
  const app = createApp({ logger, log: {} as EventLog, codec: {} as EventCodec, readiness: [], analytics: { store, logger, now: () => Date.UTC(2025, 6, 1) } })
  ;({ server, base } = await serve(app))
}, 60_000)

afterAll(async () => {
  await new Promise((r) => server?.close(r))
  await store?.close()
})

describe('request observability', () => {
  it('echoes a plausible X-Request-Id, replaces anything else with a UUID, and logs each request once at info with its id and no headers', async () => {
    const given = await fetch(`${base}/api/v2/cdp/analytics/rfm?tenant_id=1&min_value=oops`, { headers: { 'x-request-id': 'trace-42.a', authorization: `Bearer ${TOKEN}` } })
    expect(given.status).toBe(400)
    expect(given.headers.get('x-request-id')).toBe('trace-42.a')
    const replaced = await fetch(`${base}/api/v2/cdp/analytics/rfm?tenant_id=1&min_value=oops`, { headers: { 'x-request-id': 'bad id with spaces <script>' } })
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    const none = await fetch(`${base}/nowhere`)
    expect(none.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    await new Promise((r) => setTimeout(r, 50))
    const access = lines.filter((l) => (l.req as { id?: string } | undefined)?.id === 'trace-42.a')
    expect(access).toHaveLength(1)
    expect(access[0]).toMatchObject({ level: 30, req: { id: 'trace-42.a', method: 'GET', path: '/api/v2/cdp/analytics/rfm' }, res: { status: 400 }, msg: 'GET /api/v2/cdp/analytics/rfm 400' })
    expect(JSON.stringify(lines)).not.toContain(TOKEN) // the bearer key never reaches the logs
    expect(JSON.stringify(lines)).not.toContain('min_value=oops') // nor the query (it may hold e-mails)
    // Probes stay out of the access log.
    await fetch(`${base}/health`)
    await new Promise((r) => setTimeout(r, 50))
    expect(lines.some((l) => (l.req as { path?: string } | undefined)?.path === '/health')).toBe(false)
  })

  it('counts requests and their latency by route pattern and status; build info; Node metrics under their standard names', async () => {
    await fetch(`${base}/api/cdp/v2/customers/123?tenant_id=1e30`)
    const text = await registry.metrics()
    expect(text).toMatch(/cdp_http_requests_total\{method="GET",route="\/api\/v2\/cdp\/analytics\/rfm",status="400"\} [1-9]/)
    expect(text).toMatch(/cdp_http_requests_total\{method="GET",route="\/api\/cdp\/v2\/customers\/:customerId",status="400"\} 1/) // the pattern, never the id
    expect(text).toMatch(/cdp_http_requests_total\{method="GET",route="unmatched",status="404"\} [1-9]/)
    expect(text).toMatch(/cdp_http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/api\/v2\/cdp\/analytics\/rfm",status="400"\}/)
    expect(text).toMatch(/^cdp_build_info\{version="\d+\.\d+\.\d+",node="v\d+/m)
    expect(text).toMatch(/^process_cpu_seconds_total /m)
    expect(text).not.toContain('cdp_process_process_')
  })
})
