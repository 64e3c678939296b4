import fs from 'node:fs'
import path from 'node:path'
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
  if (apiUrl) return httpSink(apiUrl, readAdminToken(config))
  const { log, codec } = await openEventLog(config, logger)
  return {
    describe: `${log.kind} event log`,
    publish: (kind, events) => publishEvents(log, codec, kind, events),
    close: () => log.close(),
  }
}

/** Where `cdp start` keeps the admin token it generated in development (docs/auth.md). */
export function adminTokenFile(config: Config): string {
  return path.resolve(config.dataDir, 'admin-token')
}

/** The admin token: CDP_ADMIN_TOKEN, else the file a development `cdp start` wrote. */
export function readAdminToken(config: Config): string | undefined {
  if (config.adminToken) return config.adminToken
  try {
    return fs.readFileSync(adminTokenFile(config), 'utf8').trim() || undefined
  } catch {
    return undefined
  }
}

function httpSink(apiUrl: string, token: string | undefined): EventSink {
  return {
    describe: `ingest API at ${apiUrl}`,
    async publish(kind, events) {
      for (let i = 0; i < events.length; i += 5000) {
        const res = await fetch(`${apiUrl}/api/v2/cdp/ingest/${kind}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
          body: JSON.stringify({ events: events.slice(i, i + 5000) }),
        })
        if (res.status === 401) throw new Error(`ingest API at ${apiUrl} refused the admin token (401): set CDP_ADMIN_TOKEN to the token of that server`)
        if (res.status !== 202) throw new Error(`ingest API answered ${res.status}: ${(await res.text()).slice(0, 500)}`)
      }
    },
    close: async () => {},
  }
}
