/**
 * The commerce-platform simulator: `createCommercePlatformSimulator(options)` builds the Express
 * app and its state; `start(options)` also listens (default 127.0.0.1, a free port).
 */
import { listen, type ListenOptions, type RunningSimulator } from '../shared/http.ts'
import { createCommercePlatformSimulator, type CommercePlatformSimulatorOptions } from './app.ts'
import type { CommercePlatformState } from './state.ts'

export { createCommercePlatformSimulator, DEFAULTS, type CommercePlatformSimulatorOptions } from './app.ts'
export { CommercePlatformState, orderIdOf, stableUuid, type Anomalies, type Resources, type SeedAppKey } from './state.ts'
export type { Faults } from '../shared/faults.ts'
export type { RequestLogEntry } from '../shared/request-log.ts'
export { listen } from '../shared/http.ts'

export interface StartOptions extends CommercePlatformSimulatorOptions, ListenOptions {}

export interface RunningCommercePlatformSimulator extends RunningSimulator<CommercePlatformState> {
  /** `http://host:port`: the connector's base URL (it appends `/{account_name}/{environment}`). */
  url: string
  accountName: string
  environment: string
}

export async function start(options: StartOptions = {}): Promise<RunningCommercePlatformSimulator> {
  const { app, state } = createCommercePlatformSimulator(options)
  const { url, close } = await listen(app, options.port, options.host)
  return { url, accountName: state.opts.accountName, environment: state.opts.environments[0]!, requestLog: state.requestLog, state, app, close }
}

export { start as startCommercePlatformSimulator }
