import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import express, { type Response, type Router } from 'express'

/**
 * Serves the built console (dist/, from `vite build`: `npm install` runs it, and
 * `npm run build:console`) at /console: hashed assets cached for a year, every other
 * /console path answered with the page itself (the console routes in the browser). The page reads
 * the public API with a session cookie (docs/console.md); nothing here reads data.
 */
export const CONSOLE_DIST = fileURLToPath(new URL('./dist', import.meta.url))

/** What the page may load: its own scripts and styles (Plot sets inline style attributes), its own API. */
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

function secure(res: Response): void {
  res.setHeader('Content-Security-Policy', CSP)
  res.setHeader('X-Content-Type-Options', 'nosniff')
  res.setHeader('Referrer-Policy', 'same-origin')
}

export function consoleRouter(opts: { dist?: string } = {}): Router {
  const dist = opts.dist ?? CONSOLE_DIST
  const router = express.Router()
  const index = path.join(dist, 'index.html')
  router.get(['/console', '/console/'], (_req, res, next) => (fs.existsSync(index) ? next() : notBuilt(res)))
  router.use('/console/assets', (_req, res, next) => {
    secure(res)
    next()
  }, express.static(path.join(dist, 'assets'), { immutable: true, maxAge: '365d', index: false, fallthrough: false }))
  // The page for every other path under /console (and /console itself): the console's own router reads the path.
  router.get(['/console', '/console/{*rest}'], (_req, res) => {
    if (!fs.existsSync(index)) return notBuilt(res)
    secure(res)
    res.setHeader('Cache-Control', 'no-cache')
    res.sendFile(index)
  })
  return router
}

function notBuilt(res: Response): void {
  res.status(503).json({ success: false, error: 'Console not built', details: 'run `npm run build:console` (npm install runs it)' })
}
