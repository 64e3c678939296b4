/**
 * The search-ads simulator: `createSearchAdsSimulator(options)` builds the Express app and its
 * state; `start(options)` also listens (default 127.0.0.1, a free port).
 */
import { listen, type ListenOptions, type RunningSimulator } from '../shared/http.ts'
import { createSearchAdsSimulator, DEFAULTS, type SearchAdsSimulatorOptions } from './app.ts'
import type { SearchAdsState } from './state.ts'

export { createSearchAdsSimulator, DEFAULTS, type SearchAdsSimulatorOptions } from './app.ts'
export { SearchAdsState, adsTime, type SeedAccount, type SeedRefreshToken } from './state.ts'

export interface StartOptions extends SearchAdsSimulatorOptions, ListenOptions {}

export interface RunningSearchAdsSimulator extends RunningSimulator<SearchAdsState> {
  /** The connector's base URL (token endpoint at `/oauth2/token`, API under `/{version}`). */
  url: string
  version: string
}

export async function start(options: StartOptions = {}): Promise<RunningSearchAdsSimulator> {
  const { app, state } = createSearchAdsSimulator(options)
  const { url, close } = await listen(app, options.port, options.host)
  return { url, version: options.version ?? DEFAULTS.version, requestLog: state.requestLog, state, app, close }
}

export { start as startSearchAdsSimulator }
