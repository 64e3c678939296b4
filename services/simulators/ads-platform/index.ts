/**
 * The ads platform simulator: `createAdsPlatformSimulator(options)` builds the Express app and its
 * state; `start(options)` also listens on a port (default: a free one) and returns what tests need.
 */
import type { AddressInfo } from 'node:net'
import type { Express } from 'express'
import { createAdsPlatformSimulator, DEFAULTS, type AdsPlatformSimulatorOptions } from './app.ts'
import type { RequestLogEntry } from './model.ts'
import type { AdsPlatformState } from './state.ts'

export { createAdsPlatformSimulator, DEFAULTS, type AdsPlatformSimulatorOptions } from './app.ts'
export { AdsPlatformState, type WebhookSettings } from './state.ts'
export { graphTime, READY, TOO_SMALL, SCOPES } from './model.ts'
export type { AudienceView, DeliveryStatus, Faults, LimitedOperation, RequestLogEntry, SeedAdAccount, SeedToken, WebhookDelivery } from './model.ts'
export { memberKey, type Member, type SimColumn } from './upload.ts'
export { deliveryStatusEvent, signBody } from './webhook.ts'

export interface StartOptions extends AdsPlatformSimulatorOptions {
  /** Default 0: a free port. */
  port?: number
  /** Default 127.0.0.1. */
  host?: string
}

export interface RunningAdsPlatformSimulator {
  /** `http://host:port`: the client's baseUrl (the version path is appended by the client). */
  url: string
  /** `url` + `/{version}`. */
  apiUrl: string
  version: string
  /** `<appId>|<appSecret>`, the `access_token` of `/debug_token`. */
  appAccessToken: string
  /** Live: the same array the simulator appends to. */
  requestLog: RequestLogEntry[]
  state: AdsPlatformState
  app: Express
  /** Waits for webhook deliveries in flight, then stops listening and drops open connections. */
  close(): Promise<void>
}

export async function start(options: StartOptions = {}): Promise<RunningAdsPlatformSimulator> {
  const { app, state } = createAdsPlatformSimulator(options)
  const host = options.host ?? '127.0.0.1'
  const server = await new Promise<import('node:http').Server>((resolve, reject) => {
    const s = app.listen(options.port ?? 0, host, (err?: Error) => (err ? reject(err) : resolve(s)))
  })
  const { port } = server.address() as AddressInfo
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  const version = options.version ?? DEFAULTS.version
  return {
    url,
    apiUrl: `${url}/${version}`,
    version,
    appAccessToken: state.appAccessToken,
    requestLog: state.requestLog,
    state,
    app,
    close: async () => {
      await state.flushWebhooks()
      await new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()))
        server.closeAllConnections()
      })
    },
  }
}

export { start as startAdsPlatformSimulator }
