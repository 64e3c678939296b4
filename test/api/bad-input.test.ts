import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import type { Store } from '../../common/store/clickhouse.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { createApp } from '../../services/api/app.ts'
import { createApiServer, MAX_HEADER_BYTES } from '../../services/api/errors.ts'
import { ANALYTICS_ENDPOINTS } from '../../services/api/analytics/endpoints.ts'
import { silentLogger, migratedStore } from '../helpers.ts'

/**
 * Bad input is refused with a 4xx and the common error body, never a 5xx: numbers beyond what the
 * store binds exactly (2^53, Decimal(15,2)), URLs over Node's 16 KB header limit, methods the
 * service never serves.
 */
let store: Store
let server: http.Server
let base: string

beforeAll(async () => {
  store = await migratedStore()
  const app = createApp({ logger: silentLogger, log: {} as EventLog, codec: {} as EventCodec, readiness: [], analytics: { store, logger: silentLogger, now: () => Date.UTC(2025, 6, 1) } })
  server = createApiServer(app)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}, 60_000)

afterAll(async () => {
  await new Promise((r) => server?.close(r))
  await store?.close()
})

const commonBody = (b: unknown) => expect(b).toMatchObject({ success: false, error: expect.any(String) })

describe('bad input gets a 4xx with the common body', () => {
  const paths = [...ANALYTICS_ENDPOINTS.map((e) => e.path), '/api/cdp/v2/customers/5']
  const bad = [
    ['min_value', '1e16'], ['max_value', '1e20'], ['min_value', '-1e14'], ['offset', '1e20'], ['tenant_id', '1e20'], ['tenant_id', '9007199254740993'],
    ['customer_ids', '1,1e17'], ['days_inactive', '1e30'],
  ] as const
  it.each(paths)('%s: numbers beyond 2^53 or Decimal(15,2) are 400, never 500', async (path) => {
    for (const [k, v] of bad) {
      const res = await fetch(`${base}${path}?tenant_id=1&${k}=${v}`)
      expect([res.status, `${path} ${k}=${v}`]).toEqual([expect.toSatisfy((s: number) => s === 400 || s === 422), `${path} ${k}=${v}`])
      commonBody(await res.json())
    }
  })

  it('the issue\'s example: /analytics/clv?tenant_id=1&max_value=1e20 is 400 Invalid query parameters naming the field', async () => {
    const res = await fetch(`${base}/api/v2/cdp/analytics/clv?tenant_id=1&max_value=1e20`)
    expect(res.status).toBe(400)
    const body = (await res.json()) as { error: string; details: { errors: { path: string }[] } }
    expect(body.error).toBe('Invalid query parameters')
    expect(body.details.errors.map((e) => e.path)).toEqual(['max_value'])
  })

  it('the largest money and id values still bind: 200 or 404, never 5xx', async () => {
    for (const q of ['min_value=9999999999999.99', 'max_value=-9999999999999.99', `offset=${Number.MAX_SAFE_INTEGER}`, `customer_ids=${Number.MAX_SAFE_INTEGER}`]) {
      const res = await fetch(`${base}/api/v2/cdp/analytics/rfm?tenant_id=1&${q}`)
      expect(res.status, q).toBeLessThan(500)
    }
  })

  it('a list parameter takes the 1,000 values the document allows, repeated (past the parser default of 20), with brackets or comma-separated; the 1,001st is a 400 saying so', async () => {
    const repeated = (n: number, key: string, id = 7) => Array.from({ length: n }, () => `${key}=${id}`).join('&')
    // 1,000 of the largest ids, repeated: about 30 KB of URL, within what the service reads.
    for (const q of [repeated(21, 'customer_ids'), repeated(1000, 'customer_ids', Number.MAX_SAFE_INTEGER), repeated(1000, 'customer_ids[]'), `customer_ids=${Array(1000).fill(7).join(',')}`]) {
      const res = await fetch(`${base}/api/v2/cdp/analytics/rfm?tenant_id=1&${q}`)
      expect([200, 404], q.slice(0, 40)).toContain(res.status)
    }
    for (const q of [`customer_ids=${Array(1001).fill(7).join(',')}`, `${repeated(600, 'customer_ids')}&customer_ids=${Array(401).fill(7).join(',')}`]) {
      const res = await fetch(`${base}/api/v2/cdp/analytics/rfm?tenant_id=1&${q}`)
      expect(res.status).toBe(400)
      const body = (await res.json()) as { details: { errors: { path: string; message: string }[] } }
      expect(body.details.errors).toEqual([expect.objectContaining({ path: 'customer_ids', message: expect.stringMatching(/1000/) })])
    }
  })

  it('a URL over the 64 KB the service reads gets 431 with the common JSON body, not an empty answer', async () => {
    const res = await fetch(`${base}/api/v2/cdp/analytics/rfm?tenant_id=1&email_domain=${'a'.repeat(MAX_HEADER_BYTES + 1000)}`)
    expect(res.status).toBe(431)
    expect(res.headers.get('content-type')).toContain('application/json')
    commonBody(await res.json())
  })

  it('a request line Node cannot parse gets 400 with the common JSON body', async () => {
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'))
      let data = ''
      socket.on('data', (d) => (data += d))
      socket.on('end', () => resolve(data))
      socket.on('error', reject)
    })
    expect(raw).toMatch(/^HTTP\/1\.1 400 /)
    commonBody(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)))
  })

  it.each(['TRACE', 'PROPFIND'])('%s gets 405 with Allow and the common body, on any path', async (method) => {
    for (const path of ['/health', '/api/v2/cdp/analytics/rfm?tenant_id=1', '/nowhere']) {
      const res = await new Promise<{ status: number; allow?: string; body: string }>((resolve, reject) => {
        const req = http.request(`${base}${path}`, { method }, (r) => {
          let body = ''
          r.on('data', (d) => (body += d))
          r.on('end', () => resolve({ status: r.statusCode!, allow: r.headers.allow, body }))
        })
        req.on('error', reject)
        req.end()
      })
      expect(res.status).toBe(405)
      expect(res.allow).toBe('GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS')
      commonBody(JSON.parse(res.body))
    }
  })
})
