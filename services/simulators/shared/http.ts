/** HTTP plumbing the simulators share: the bare Express app, listening, query parameters, admin basics. */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express, { type Express, type Request } from 'express'
import type { PlatformState } from './platform-state.ts'
import type { LoggedRequest, RequestLogEntry } from './request-log.ts'

/** Where a simulator's `start` listens. */
export interface ListenOptions {
  /** Default 0: a free port. */
  port?: number
  /** Default 127.0.0.1. */
  host?: string
}

/** What a simulator's `start` returns. */
export interface RunningSimulator<State, Entry extends LoggedRequest = RequestLogEntry> {
  /** `http://host:port` */
  url: string
  /** Live: the same array the simulator appends to. */
  requestLog: Entry[]
  state: State
  app: Express
  /** Stops listening and drops open connections. */
  close(): Promise<void>
}

/** An Express app without the headers a real platform would not send (X-Powered-By, ETag). */
export function createSimulatorApp(): Express {
  const app = express()
  app.disable('x-powered-by')
  app.disable('etag')
  return app
}

/** Listens on host:port and returns the URL and a close that drops open connections. */
export async function listen(app: Express, port = 0, host = '127.0.0.1'): Promise<{ url: string; close(): Promise<void> }> {
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(port, host, (err?: Error) => (err ? reject(err) : resolve(s)))
  })
  const { port: p } = server.address() as AddressInfo
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${p}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()))
        server.closeAllConnections()
      }),
  }
}

/** Parses an ISO 8601 query value; undefined when absent; NaN marks an invalid one. */
export function timeParam(v: unknown): number | undefined {
  if (v === undefined || v === '') return undefined
  if (typeof v !== 'string') return Number.NaN
  const withZone = /^\d{4}-\d{2}-\d{2}$/.test(v) ? `${v}T00:00:00Z` : /[zZ]|[+-]\d{2}:?\d{2}$/.test(v) ? v : `${v}Z`
  return Date.parse(withZone)
}

/** The time bounds named `fromKey` and `toKey` in the query (either may be absent), or null when one is not a timestamp. */
export function timeRangeParams(req: Request, fromKey: string, toKey: string): { from?: number; to?: number } | null {
  const from = timeParam(req.query[fromKey])
  const to = timeParam(req.query[toKey])
  return Number.isNaN(from) || Number.isNaN(to) ? null : { from, to }
}

/**
 * The admin endpoints every platform simulator has, under `/_sim/`: `GET /state` (the snapshot),
 * `GET /requests` (the request log), `PUT /faults`, `GET /truth` (who is who in a population
 * shared between simulators; 404 without one). The simulator adds its own to the router.
 */
export function platformAdminRouter(state: PlatformState & { snapshot(): unknown; truth?(): unknown[] | null }): express.Router {
  const admin = express.Router()
  admin.use(express.json())
  admin.get('/state', (_req, res) => void res.json(state.snapshot()))
  admin.get('/truth', (_req, res) => {
    const truth = state.truth?.() ?? null
    if (!truth) return void res.status(404).json({ error: 'this simulator serves no shared population (start it with overlap)' })
    res.json({ data: truth })
  })
  admin.get('/requests', (_req, res) => void res.json({ data: state.requestLog }))
  admin.put('/faults', (req, res) => {
    state.setFaults(req.body ?? {})
    res.json(state.faults)
  })
  return admin
}
