/**
 * The search-ads simulator: `createSearchAdsSimulator(options)` builds the Express app and its
 * state; `start(options)` also listens (default 127.0.0.1, a free port).
 */
import type { Express } from 'express'
import { listen } from '../commerce-platform/index.ts'
import type { RequestLogEntry } from '../commerce-platform/dataset.ts'
import { createSearchAdsSimulator, DEFAULTS, type SearchAdsSimulatorOptions } from './app.ts'
import type { SearchAdsState } from './state.ts'

export { createSearchAdsSimulator, DEFAULTS, type SearchAdsSimulatorOptions } from './app.ts'
export { SearchAdsState, adsTime, type SeedAccount, type SeedRefreshToken } from './state.ts'

export interface StartOptions extends SearchAdsSimulatorOptions {
  port?: number
  host?: string
}

export interface RunningSearchAdsSimulator {
  /** The connector's base URL (token endpoint at `/oauth2/token`, API under `/{version}`). */
  url: string
  version: string
  requestLog: RequestLogEntry[]
  state: SearchAdsState
  app: Express
  close(): Promise<void>
}

export async function start(options: StartOptions = {}): Promise<RunningSearchAdsSimulator> {
  const { app, state } = createSearchAdsSimulator(options)
  const { url, close } = await listen(app, options.port, options.host)
  return { url, version: options.version ?? DEFAULTS.version, requestLog: state.requestLog, state, app, close }
}

export { start as startSearchAdsSimulator }
