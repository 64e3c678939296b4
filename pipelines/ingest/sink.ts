import type { Config } from '../../common/config.ts'
import type { Logger } from '../../common/logger.ts'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { EmbeddedEventLog } from '../../common/eventlog/embedded.ts'
import { embeddedLogDir, openEventLog } from '../../common/runtime/context.ts'
import { publishEvents, type IngestKind } from './publisher.ts'

/** Where the importer and the generator write: straight into the log, or through a running API. */
export interface EventSink {
  describe: string
  publish(kind: IngestKind, events: (OrderEvent | CustomerUpserted)[]): Promise<void>
  close(): Promise<void>
}

/**
 * Opens the log for writing. The embedded log belongs to one process: when `cdp start` holds it,
 * events go through that process's ingest endpoint instead (same validation, same durability).
 */
export async function openEventSink(config: Config, logger: Logger, opts: { apiUrl?: string } = {}): Promise<EventSink> {
  const apiUrl = opts.apiUrl ?? (config.runtime === 'embedded' ? EmbeddedEventLog.lockHolder(embeddedLogDir(config))?.apiUrl : undefined)
  if (apiUrl) return httpSink(apiUrl)
  const { log, codec } = await openEventLog(config, logger)
  return {
    describe: `${log.kind} event log`,
    publish: (kind, events) => publishEvents(log, codec, kind, events),
    close: () => log.close(),
  }
}

function httpSink(apiUrl: string): EventSink {
  return {
    describe: `ingest API at ${apiUrl}`,
    async publish(kind, events) {
      for (let i = 0; i < events.length; i += 5000) {
        const res = await fetch(`${apiUrl}/api/v2/cdp/ingest/${kind}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ events: events.slice(i, i + 5000) }),
        })
        if (res.status !== 202) throw new Error(`ingest API answered ${res.status}: ${(await res.text()).slice(0, 500)}`)
      }
    },
    close: async () => {},
  }
}
