import path from 'node:path'
import type { Config } from '../common/config.ts'
import type { Logger } from '../common/logger.ts'
import { migrate, openStore, type Store } from '../common/store/clickhouse.ts'
import { EmbeddedEventLog } from '../common/eventlog/embedded.ts'
import { embeddedLogDir, storeOptions } from '../common/runtime/context.ts'

/** Administrative commands (apikey, keys) open the store themselves; chdb admits one process per data directory. */
export class StoreBusyError extends Error {
  override name = 'StoreBusyError'
}

/** The store as the runtime opens it (server or chdb), migrated; chdb only when no process holds the data directory. */
export async function openAdminStore(config: Config, logger: Logger): Promise<Store> {
  if (!config.clickhouseUrl) {
    const holder = EmbeddedEventLog.lockHolder(embeddedLogDir(config))
    if (holder) {
      throw new StoreBusyError(
        `the embedded store under ${path.resolve(config.dataDir)} is in use by process ${holder.pid} (cdp start${holder.apiUrl ? ` at ${holder.apiUrl}` : ''}); ` +
          'chdb allows one process per data directory: stop it, manage keys, then start it again (or use a ClickHouse server: CLICKHOUSE_URL)',
      )
    }
  }
  const store = await openStore(storeOptions(config))
  try {
    await migrate(store, logger)
  } catch (err) {
    await store.close().catch(() => {})
    throw err
  }
  return store
}


/** Runs `fn` with the admin store and closes it; a busy embedded store is a message on stderr and exit code 1. */
export async function withAdminStore(command: string, config: Config, logger: Logger, fn: (store: Store) => Promise<number>): Promise<number> {
  let store: Store
  try {
    store = await openAdminStore(config, logger)
  } catch (err) {
    if (!(err instanceof StoreBusyError)) throw err
    process.stderr.write(`cdp ${command}: ${err.message}\n`)
    return 1
  }
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}
