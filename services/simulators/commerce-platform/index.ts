/**
 * The commerce-platform simulator: `createCommercePlatformSimulator(options)` builds the Express
 * app and its state; `start(options)` also listens (default 127.0.0.1, a free port).
 */
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import type { Express } from 'express'
import { createCommercePlatformSimulator, type CommercePlatformSimulatorOptions } from './app.ts'
import type { RequestLogEntry } from './dataset.ts'
import type { CommercePlatformState } from './state.ts'

export { createCommercePlatformSimulator, DEFAULTS, type CommercePlatformSimulatorOptions } from './app.ts'
export { CommercePlatformState, orderIdOf, stableUuid, type Anomalies, type Resources, type SeedAppKey } from './state.ts'
export type { Faults, RequestLogEntry } from './dataset.ts'

export interface StartOptions extends CommercePlatformSimulatorOptions {
  /** Default 0: a free port. */
  port?: number
  host?: string
}

export interface RunningCommercePlatformSimulator {
  /** `http://host:port`: the connector's base URL (it appends `/{account_name}/{environment}`). */
  url: string
  accountName: string
  environment: string
  requestLog: RequestLogEntry[]
  state: CommercePlatformState
  app: Express
  close(): Promise<void>
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

export async function start(options: StartOptions = {}): Promise<RunningCommercePlatformSimulator> {
  const { app, state } = createCommercePlatformSimulator(options)
  const { url, close } = await listen(app, options.port, options.host)
  return { url, accountName: state.opts.accountName, environment: state.opts.environments[0]!, requestLog: state.requestLog, state, app, close }
}

export { start as startCommercePlatformSimulator }
