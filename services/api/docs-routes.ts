import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import express, { type RequestHandler, type Router } from 'express'
import { z } from 'zod'
import { json, route, type Operation, type RouteGroup } from './routes.ts'

/**
 * GET /openapi.json (the document) and GET /docs (Swagger UI on it, with "Try it out" once an API
 * key is entered under "Authorize"). Swagger UI's files come from the swagger-ui-dist package of
 * this installation and the initializer from docs-assets/, all under /docs/assets: no CDN, works
 * offline. Public, like /health (auth.ts isPublicPath).
 */

const SWAGGER_DIST = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
const OWN_ASSETS = fileURLToPath(new URL('./docs-assets/', import.meta.url))

/** The files the page loads, and where each lives; nothing else of the package is served. */
export const DOCS_ASSETS: Readonly<Record<string, string>> = {
  'swagger-ui.css': SWAGGER_DIST,
  'swagger-ui-bundle.js': SWAGGER_DIST,
  'favicon-32x32.png': SWAGGER_DIST,
  'favicon-16x16.png': SWAGGER_DIST,
  'swagger-initializer.js': OWN_ASSETS,
}
const ASSETS_PATH = '/docs/assets'

/** Only this origin's scripts and styles (Swagger UI sets inline styles, and draws icons from data: URIs). */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>CDP query service — API reference</title>
<link rel="stylesheet" href="${ASSETS_PATH}/swagger-ui.css">
<link rel="icon" type="image/png" href="${ASSETS_PATH}/favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="${ASSETS_PATH}/favicon-16x16.png" sizes="16x16">
</head>
<body>
<noscript>This page needs JavaScript; the document itself is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<div id="swagger-ui"></div>
<script src="${ASSETS_PATH}/swagger-ui-bundle.js"></script>
<script src="${ASSETS_PATH}/swagger-initializer.js"></script>
</body>
</html>
`

const openapiJson: Operation = {
  method: 'get',
  path: '/openapi.json',
  operationId: 'openApiDocument',
  summary: 'This OpenAPI 3.1 document',
  public: true,
  responses: {
    200: json(
      'The document (large and open: its top-level keys are described, the rest passes)',
      z.object({ openapi: z.literal('3.1.0'), info: z.object({ title: z.string(), version: z.string() }).catchall(z.unknown()), paths: z.record(z.string(), z.unknown()) }).catchall(z.unknown()),
    ),
  },
}

const docsPage: Operation = {
  method: 'get',
  path: '/docs',
  operationId: 'apiReference',
  summary: 'Swagger UI on this document',
  description: `An HTML page loading Swagger UI from ${ASSETS_PATH}/ (served by this process), with a Content-Security-Policy that allows only this origin.`,
  public: true,
  responses: { 200: { description: 'The page', content: { 'text/html': z.string() }, headers: { 'Content-Security-Policy': DOCS_CSP } } },
}

export const DOCS_ROUTES: RouteGroup = {
  tag: { name: 'Documentation', description: 'This document and its interactive page (no token needed).' },
  operations: [openapiJson, docsPage],
}

/** GET (and HEAD) of the listed assets under /docs/assets; anything else falls through (404). */
const assets: RequestHandler = (req, res, next) => {
  const name = req.path.slice(1)
  const dir = Object.hasOwn(DOCS_ASSETS, name) ? DOCS_ASSETS[name] : undefined
  if (!dir || (req.method !== 'GET' && req.method !== 'HEAD')) return next()
  res.set('X-Content-Type-Options', 'nosniff')
  res.sendFile(name, { root: dir, maxAge: '1h' }, (err) => err && next(err))
}

export function docsRouter(document: () => object): Router {
  const router = express.Router()
  let body: string | undefined
  router.use(ASSETS_PATH, assets)
  route(router, openapiJson, (_req, res) => {
    res.set('Cache-Control', 'no-cache')
    res.type('json').send((body ??= JSON.stringify(document())))
  })
  route(router, docsPage, (_req, res) => {
    res.set('Content-Security-Policy', DOCS_CSP)
    res.set('X-Content-Type-Options', 'nosniff')
    res.set('Cache-Control', 'no-cache')
    res.type('html').send(PAGE)
  })
  return router
}
