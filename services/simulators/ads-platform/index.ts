/**
 * The ads platform simulator: `createAdsPlatformSimulator(options)` builds the Express app and its
 * state; `start(options)` also listens on a port (default: a free one) and returns what tests need.
 */
import { listen, type ListenOptions, type RunningSimulator } from '../shared/http.ts'
import { createAdsPlatformSimulator, DEFAULTS, type AdsPlatformSimulatorOptions } from './app.ts'
import type { RequestLogEntry } from './model.ts'
import type { AdsPlatformState } from './state.ts'

export { createAdsPlatformSimulator, DEFAULTS, type AdsPlatformSimulatorOptions } from './app.ts'
export { AdsPlatformState, type WebhookSettings } from './state.ts'
export { graphTime, READY, TOO_SMALL, SCOPES } from './model.ts'
export type { AudienceView, DeliveryStatus, Faults, LimitedOperation, RequestLogEntry, SeedAdAccount, SeedToken, WebhookDelivery } from './model.ts'
export { memberKey, type Member, type SimColumn } from './upload.ts'
export { deliveryStatusEvent, signBody } from './webhook.ts'

export interface StartOptions extends AdsPlatformSimulatorOptions, ListenOptions {}

export interface RunningAdsPlatformSimulator extends RunningSimulator<AdsPlatformState, RequestLogEntry> {
  /** `http://host:port`: the client's baseUrl (the version path is appended by the client). */
  url: string
  /** `url` + `/{version}`. */
  apiUrl: string
  version: string
  /** `<appId>|<appSecret>`, the `access_token` of `/debug_token`. */
  appAccessToken: string
  /** Waits for webhook deliveries in flight, then stops listening and drops open connections. */
  close(): Promise<void>
}

export async function start(options: StartOptions = {}): Promise<RunningAdsPlatformSimulator> {
  const { app, state } = createAdsPlatformSimulator(options)
  const { url, close } = await listen(app, options.port, options.host)
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
      await close()
    },
  }
}

export { start as startAdsPlatformSimulator }
