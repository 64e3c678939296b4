/**
 * The marketplace simulator: `createMarketplaceSimulator(options)` builds the Express app and its
 * state; `start(options)` also listens (default 127.0.0.1, a free port).
 */
import { listen, type ListenOptions, type RunningSimulator } from '../shared/http.ts'
import { createMarketplaceSimulator, type MarketplaceSimulatorOptions } from './app.ts'
import type { MarketplaceState } from './state.ts'

export { createMarketplaceSimulator, DEFAULTS, type MarketplaceSimulatorOptions } from './app.ts'
export { MarketplaceState, localIso, orderIdOf, type SeedClient, type SellerOptions } from './state.ts'

export interface StartOptions extends MarketplaceSimulatorOptions, ListenOptions {}

export interface RunningMarketplaceSimulator extends RunningSimulator<MarketplaceState> {
  /** The connector's base URL. */
  url: string
}

export async function start(options: StartOptions = {}): Promise<RunningMarketplaceSimulator> {
  const { app, state } = createMarketplaceSimulator(options)
  const { url, close } = await listen(app, options.port, options.host)
  return { url, requestLog: state.requestLog, state, app, close }
}

export { start as startMarketplaceSimulator }
