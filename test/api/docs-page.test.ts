import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { ApiKeyStore } from '../../common/store/api-keys.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import { createApp } from '../../services/api/app.ts'
import { readDocumented } from './documented.ts'
import { silentLogger } from '../helpers.ts'

/** /docs is Swagger UI served by this process: every asset it loads comes from here, nothing from the network. */

const CONTENT_TYPES: Record<string, RegExp> = { css: /^text\/css/, js: /^(application|text)\/javascript/, png: /^image\/png$/ }
const dist = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))

let server: http.Server
let base = ''

beforeAll(async () => {
  // With authentication on: the page and its assets must stay public.
  const app = createApp({ logger: silentLogger, log: {} as EventLog, codec: {} as EventCodec, readiness: [], auth: { adminToken: 'docs-admin-token-0123456789', keys: new ApiKeyStore({} as Store) } })
  server = http.createServer(app)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()))
})

const urlsIn = (html: string) => [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)

describe('GET /docs', () => {
  it('is Swagger UI whose every script, style and icon is served locally with its content type', async () => {
    const page = await readDocumented('GET', await fetch(`${base}/docs`))
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toMatch(/^text\/html/)
    const html = page.body as string
    expect(html).toMatch(/^<!doctype html>/i)
    expect(html).toContain('<div id="swagger-ui">')
    expect(html).not.toMatch(/<script>|<style>|\son\w+=/i) // no inline script, style or handler: the CSP forbids them
    const urls = urlsIn(html).filter((u) => u !== '/openapi.json')
    expect(urls).toEqual(expect.arrayContaining(['/docs/assets/swagger-ui.css', '/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-initializer.js']))
    for (const u of urls) {
      expect(u, 'a local path, not another host').toMatch(/^\/docs\/assets\/[\w.-]+$/)
      const res = await fetch(`${base}${u}`)
      expect(res.status, u).toBe(200)
      expect(res.headers.get('content-type'), u).toMatch(CONTENT_TYPES[u.split('.').at(-1)!]!)
      expect((await res.arrayBuffer()).byteLength, u).toBeGreaterThan(0)
    }
    // the package's own file, byte for byte
    const bundle = Buffer.from(await (await fetch(`${base}/docs/assets/swagger-ui-bundle.js`)).arrayBuffer())
    expect(bundle.equals(readFileSync(path.join(dist, 'swagger-ui-bundle.js')))).toBe(true)
  })

  it('starts Swagger UI on this service’s document, asking no other host', async () => {
    const init = await (await fetch(`${base}/docs/assets/swagger-initializer.js`)).text()
    expect(init).toContain("url: '/openapi.json'")
    expect(init).toContain('validatorUrl: null')
    expect(init).not.toMatch(/https?:\/\//)
    const doc = await readDocumented('GET', await fetch(`${base}/openapi.json`))
    expect(doc.status).toBe(200)
    // "Try it out" sends the key entered under "Authorize": the scheme is in the document
    expect(doc.body.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' })
  })

  it('sends a Content-Security-Policy that allows only this origin’s scripts and styles', async () => {
    const csp = (await fetch(`${base}/docs`)).headers.get('content-security-policy') ?? ''
    const directives = Object.fromEntries(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([k, ...v]) => [k, v]))
    expect(directives['default-src']).toEqual(["'none'"])
    expect(directives['script-src']).toEqual(["'self'"])
    expect(directives['style-src']).toContain("'self'")
    expect(directives['connect-src']).toEqual(["'self'"])
    expect(csp).not.toMatch(/https?:|\*/)
  })

  it('serves only the listed assets', async () => {
    for (const u of ['/docs/assets/index.html', '/docs/assets/swagger-initializer.js/x', '/docs/assets/../package.json', '/docs/assets/swagger-ui.js.map']) {
      const res = await fetch(`${base}${u}`)
      expect([401, 404], u).toContain(res.status)
    }
    expect((await fetch(`${base}/docs/assets/swagger-ui.css`, { method: 'POST' })).status).not.toBe(200)
  })
})
