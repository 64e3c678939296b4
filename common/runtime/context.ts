import path from 'node:path'
import type { Config } from '../config.ts'
import type { Logger } from '../logger.ts'
import type { EventLog } from '../eventlog/port.ts'
import { EmbeddedEventLog } from '../eventlog/embedded.ts'
import { KafkaEventLog } from '../eventlog/kafka.ts'
import { ConfluentSchemaRegistry, EmbeddedSchemaRegistry, type SchemaRegistryPort } from '../eventlog/schema-registry.ts'
import { EventCodec } from '../eventlog/codec.ts'
import { ALL_TOPICS, TOPICS } from '../topics.ts'
import { migrate, openStore, type Store, type StoreOptions } from '../store/clickhouse.ts'
import { maskUrlPassword } from '../config.ts'

/** The adapters a process works with, chosen once from the config. */
export interface Runtime {
  config: Config
  logger: Logger
  log: EventLog
  codec: EventCodec
  store: Store
  close(): Promise<void>
}

export function embeddedLogDir(config: Config): string {
  return path.resolve(config.dataDir, 'log')
}

async function openLogAdapter(config: Config, logger: Logger, opts: { apiUrl?: string }): Promise<{ log: EventLog; registry: SchemaRegistryPort }> {
  if (config.runtime === 'distributed') {
    return {
      log: new KafkaEventLog({ brokers: config.kafkaBrokers!, clientId: config.kafkaClientId, logger, sessionTimeoutMs: config.kafkaSessionTimeoutMs }),
      registry: new ConfluentSchemaRegistry({ url: config.schemaRegistryUrl!, username: config.schemaRegistryUsername, password: config.schemaRegistryPassword, timeoutMs: config.schemaRegistryTimeoutMs }),
    }
  }
  const dir = embeddedLogDir(config)
  return { log: await EmbeddedEventLog.open(dir, opts), registry: new EmbeddedSchemaRegistry(dir) }
}

/** Opens the event log with its topics created and every topic schema registered (BACKWARD). */
export async function openEventLog(config: Config, logger: Logger, opts: { apiUrl?: string } = {}): Promise<{ log: EventLog; codec: EventCodec }> {
  const { log, registry } = await openLogAdapter(config, logger, opts)
  try {
    await log.createTopics(ALL_TOPICS.map((t) => ({ name: t.name, partitions: config.partitions, compacted: t.compacted })))
    return { log, codec: await EventCodec.create(registry) }
  } catch (err) {
    await log.close().catch(() => {})
    throw err
  }
}

/**
 * The partition count of the keyed input topics as they are, which may differ from
 * CDP_PARTITIONS: topics created earlier (or by an operator) keep theirs. The feature consumer
 * works out which partition holds a customer from it, so it must be the topics' own.
 */
export async function inputPartitions(log: EventLog, config: Config, logger: Logger): Promise<number> {
  const keyed = [TOPICS.orders.name, TOPICS.customers.name, TOPICS.profileChanges.name]
  const counts = await Promise.all(keyed.map(async (t) => (await log.endOffsets(t)).length))
  if (new Set(counts).size > 1) {
    throw new Error(`the keyed input topics have different partition counts (${keyed.map((t, i) => `${t}: ${counts[i]}`).join(', ')}); they must be equal, as a customer's records and its profile's meet by key`)
  }
  const n = counts[0]!
  if (n !== config.partitions) logger.warn({ topic_partitions: n, configured: config.partitions }, 'the input topics exist with another partition count than CDP_PARTITIONS; using the topics\' count')
  return n
}

/** The store of a configuration: its ClickHouse server, else chdb under the data directory. */
export function storeOptions(config: Config): StoreOptions {
  return {
    url: config.clickhouseUrl,
    username: config.clickhouseUsername,
    password: config.clickhousePassword,
    database: config.clickhouseDatabase,
    chdbPath: path.resolve(config.dataDir, 'clickhouse'),
    mergeNice: config.chdbMergeNice,
  }
}

/**
 * Opens the event log (topics created, schemas registered) and the store (migrated).
 * The composition roots (cli/start.ts, the tests, the benchmark) all come through here.
 */
export async function openRuntime(config: Config, logger: Logger, opts: { apiUrl?: string; store?: Store } = {}): Promise<Runtime> {
  const { log, codec } = await openEventLog(config, logger, opts)
  try {
    const store =
      opts.store ??
      (await openStore(storeOptions(config)))
    await migrate(store, logger)
    const partitions = await inputPartitions(log, config, logger)
    logger.info(
      { runtime: config.runtime, log: log.kind, store: config.clickhouseUrl ? maskUrlPassword(config.clickhouseUrl) : 'chdb' },
      'runtime opened',
    )
    return {
      config: partitions === config.partitions ? config : { ...config, partitions },
      logger,
      log,
      codec,
      store,
      close: async () => {
        await log.close()
        if (!opts.store) await store.close()
      },
    }
  } catch (err) {
    await log.close().catch(() => {})
    throw err
  }
}
