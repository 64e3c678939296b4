import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import express, { type Express } from 'express'
import type { Store } from '../../common/store/clickhouse.ts'
import { buildOpenApi, type OpenApiDocument } from '../../services/api/openapi.ts'
import { openApiPath } from '../../services/api/routes.ts'
import { fullApp } from './full-app.ts'
import { migratedStore } from '../helpers.ts'

/**
 * The OpenAPI document and the server agree on what exists: every route the real app mounts (all
 * optional routers included) is a documented operation, and every documented operation is
 * mounted, method and path alike.
 */

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> }
  handle?: { stack?: Layer[] }
  /** Router 2: true for a router mounted at `/` (`app.use(router)`). */
  slash?: boolean
  name?: string
}

/** `METHOD /path/{param}` of every route in the app's router stack, nested routers included. */
function mountedRoutes(app: Express): Set<string> {
  const out = new Set<string>()
  const walk = (stack: Layer[]) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const path of [layer.route.path].flat()) {
          for (const method of Object.keys(layer.route.methods)) out.add(`${method.toUpperCase()} ${openApiPath(path)}`)
        }
      } else if (layer.handle?.stack) {
        // Our routers carry full paths and are mounted at `/`; a prefix would have to be read here.
        if (!layer.slash) throw new Error(`a router (${layer.name}) is mounted under a path prefix: teach mountedRoutes to read it`)
        walk(layer.handle.stack)
      }
    }
  }
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack)
  return out
}

function documentedRoutes(doc: OpenApiDocument): Set<string> {
  return new Set(Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`)))
}

/** What one side has and the other lacks. */
function drift(app: Express, doc: OpenApiDocument) {
  const mounted = mountedRoutes(app)
  const documented = documentedRoutes(doc)
  return { undocumented: [...mounted].filter((r) => !documented.has(r)).sort(), unmounted: [...documented].filter((r) => !mounted.has(r)).sort() }
}

let store: Store
let app: Express
let doc: OpenApiDocument

beforeAll(async () => {
  store = await migratedStore()
  app = fullApp({ store })
  doc = buildOpenApi()
})
afterAll(async () => {
  await store?.close()
})

describe('mounted routes = documented operations', () => {
  it('every mounted route is documented and every documented operation is mounted', () => {
    expect(drift(app, doc)).toEqual({ undocumented: [], unmounted: [] })
    const routes = [...mountedRoutes(app)]
    expect(routes.length).toBeGreaterThanOrEqual(40)
    // aliases (a route answering on several paths) count as routes of their own
    expect(routes).toEqual(expect.arrayContaining(['GET /api/cdp/v2/analytics/demographics', 'POST /webhooks/social_ads', 'GET /api/v2/tenant-integrations/{id}', 'GET /docs']))
  })

  it('a route mounted without being documented is found', () => {
    const extra = express.Router()
    extra.get(['/api/v2/cdp/analytics/secret', '/api/v2/cdp/analytics/secret2'], (_req, res) => void res.end())
    extra.delete('/api/v2/cdp/process/:tenantId', (_req, res) => void res.end())
    // (after the 404 handler, so it would never answer; the walk reads what is mounted, wherever)
    const withExtra = fullApp({ store }).use(extra)
    expect(drift(withExtra, doc)).toEqual({
      undocumented: ['DELETE /api/v2/cdp/process/{tenantId}', 'GET /api/v2/cdp/analytics/secret', 'GET /api/v2/cdp/analytics/secret2'],
      unmounted: [],
    })
  })

  it('an operation documented without being mounted is found', () => {
    const more = structuredClone(doc)
    more.paths['/api/v2/cdp/process/{tenantId}']!.put = { ...more.paths['/api/v2/cdp/process/{tenantId}']!.post! }
    more.paths['/api/v2/cdp/nowhere'] = { get: { operationId: 'nowhere', summary: 'x', tags: [], responses: {} } }
    expect(drift(app, more)).toEqual({ undocumented: [], unmounted: ['GET /api/v2/cdp/nowhere', 'PUT /api/v2/cdp/process/{tenantId}'] })
  })
})
