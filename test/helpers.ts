import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { afterAll, expect, inject } from 'vitest'
import { createLogger } from '../common/logger.ts'
import { KafkaEventLog } from '../common/eventlog/kafka.ts'
import { EmbeddedEventLog } from '../common/eventlog/embedded.ts'
import { ConfluentSchemaRegistry, EmbeddedSchemaRegistry } from '../common/eventlog/schema-registry.ts'
import { groupLag, type EventLog } from '../common/eventlog/port.ts'
import { TOPICS } from '../common/topics.ts'
import type { EventCodec } from '../common/eventlog/codec.ts'
import { loadConfig, type Config } from '../common/config.ts'
import { migrate, openStore, type Store } from '../common/store/clickhouse.ts'
import { KAFKA_TEST_PARTITIONS } from './infra/global-setup.ts'

export const silentLogger = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' })

/** Folders tmpDir made in this test process: removed when it exits (CDP_KEEP_TEST_DIRS=1 keeps them to look at). */
const madeDirs: string[] = []
function removeMadeDirs(): void {
  if (process.env.CDP_KEEP_TEST_DIRS === '1') return
  for (const d of madeDirs.splice(0)) {
    try {
      fs.rmSync(d, { recursive: true, force: true })
    } catch {
      // still in use by a process of the test's; the OS's own /tmp cleanup takes it
    }
  }
}
// After the test file's own hooks (vitest runs after-hooks last registered first), and at exit.
try {
  afterAll(removeMadeDirs)
} catch {
  // imported outside a test file
}
process.once('exit', removeMadeDirs)

/**
 * A new empty folder under the OS's temporary directory, removed when the test process exits: a
 * chdb store or an event log of a test is tens to hundreds of MB, and a developer's machine that
 * kept every run's filled its disk.
 */
export function tmpDir(prefix = 'cdp-test-'): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  madeDirs.push(d)
  return d
}

/** A fresh embedded ClickHouse (chdb) in a temporary folder, with every migration applied. */
export async function migratedStore(): Promise<Store> {
  const store = await openStore({ database: 'cdp', chdbPath: tmpDir() })
  await migrate(store, silentLogger)
  return store
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`
}

/** What test/infra/global-setup.ts provides; only the integration project runs it (README, "Tests"). */
function infra(key: 'kafkaBrokers' | 'schemaRegistryUrl'): string {
  const value = inject(key)
  if (!value) throw new Error(`${key} is not provided: this test needs Kafka and the schema registry, so it belongs in an integration file (test/<lane>/<name>.int.test.ts)`)
  return value
}

export function kafkaBrokers(): string[] {
  return infra('kafkaBrokers').split(',')
}

export function registryUrl(): string {
  return infra('schemaRegistryUrl')
}

export function newKafkaLog(): KafkaEventLog {
  return new KafkaEventLog({ brokers: kafkaBrokers(), clientId: uniqueName('test'), logger: silentLogger })
}

export function newConfluentRegistry(): ConfluentSchemaRegistry {
  return new ConfluentSchemaRegistry({ url: registryUrl() })
}

export async function newEmbeddedLog(dir = tmpDir()): Promise<EmbeddedEventLog> {
  return EmbeddedEventLog.open(dir)
}

export function newEmbeddedRegistry(dir = tmpDir()): EmbeddedSchemaRegistry {
  return new EmbeddedSchemaRegistry(dir)
}

/** Config for a runtime under test: distributed = the suite's real Kafka and registry. */
export function testConfig(runtime: 'embedded' | 'distributed', overrides: Partial<Record<string, unknown>> = {}): Config {
  const ch = inject('clickhouseUrl')
  return loadConfig(
    {},
    {
      runtime,
      dataDir: tmpDir(),
      logLevel: 'silent',
      partitions: runtime === 'distributed' ? KAFKA_TEST_PARTITIONS : 4,
      ...(runtime === 'distributed' ? { kafkaBrokers: infra('kafkaBrokers'), schemaRegistryUrl: registryUrl() } : {}),
      ...(ch ? { clickhouseUrl: ch } : {}),
      ...overrides,
    },
  )
}

export async function waitFor<T>(fn: () => Promise<T | undefined | false>, opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000)
  let last: unknown
  while (Date.now() < deadline) {
    try {
      const v = await fn()
      if (v !== undefined && v !== false) return v as T
    } catch (e) {
      last = e
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 100))
  }
  throw new Error(`timed out waiting for ${opts.what ?? 'condition'}${last ? `: ${(last as Error).message}` : ''}`)
}

export type { EventLog }

/** Every record a topic holds now, decoded, with its key, in consumption order (a fresh group from the first offset). */
export async function readTopic<T>(log: EventLog, codec: EventCodec, topic: string): Promise<{ key: string | undefined; value: T }[]> {
  const group = uniqueName('read-topic')
  const out: { key: string | undefined; value: T }[] = []
  const h = await log.consume({
    groupId: group,
    topics: [topic],
    fromBeginning: true,
    onBatch: async (b) => {
      for (const r of b.records) out.push({ key: r.key?.toString(), value: await codec.decode<T>(topic, r.value) })
    },
  })
  await waitFor(async () => (await groupLag(log, group, topic)) === 0, { what: `${topic} read` })
  await h.stop()
  return out
}

/**
 * Waits until `group` has consumed everything on `topics` (default: the orders and customers
 * input topics), as `what` in the timeout's message.
 */
export async function caughtUp(log: EventLog, group: string, opts: { topics?: readonly string[]; timeoutMs?: number; what?: string } = {}): Promise<void> {
  const topics = opts.topics ?? [TOPICS.orders.name, TOPICS.customers.name]
  await waitFor(async () => {
    let lag = 0
    for (const t of topics) lag += await groupLag(log, group, t)
    return lag === 0
  }, { what: opts.what ?? `${group} caught up`, timeoutMs: opts.timeoutMs })
}

/** An `orders` projection row as tests write them by hand. */
export interface OrderRowLike {
  tenant_id: number
  customer_id: number
  placed_at: string
  total: number | string
  is_cancelled?: number
}

/**
 * The `order_times` / `order_cents` of a customer's feature row (schemas/clickhouse/008) for
 * hand-made `orders` rows, one row per order in its final state: its counting orders (not
 * cancelled, total above zero), ascending. Times are ClickHouse's `YYYY-MM-DD hh:mm:ss.sss` (UTC)
 * or ISO 8601 with a zone.
 */
export function orderHistoryOf(orders: readonly OrderRowLike[], tenant: number, customer: number): { order_times: number[]; order_cents: number[] } {
  const mine = orders
    .filter((o) => o.tenant_id === tenant && o.customer_id === customer && !o.is_cancelled && Number(o.total) > 0)
    .map((o) => ({ t: Date.parse(o.placed_at.includes('T') ? o.placed_at : `${o.placed_at.replace(' ', 'T')}Z`), c: Math.round(Number(o.total) * 100) }))
    .sort((a, b) => a.t - b.t || a.c - b.c)
  return { order_times: mine.map((o) => o.t), order_cents: mine.map((o) => o.c) }
}

/** The promise's rejection, which must be an instance of `type` (a domain error, say). */
export async function refusal<T extends Error>(p: Promise<unknown>, type: new (...args: never[]) => T): Promise<T> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(type)
  return err as T
}

/** Serves an Express app on a free loopback port: its base URL, the server and a close() that waits for it. */
export async function serve(app: import('express').Express): Promise<{ base: string; server: import('node:http').Server; close(): Promise<void> }> {
  const server = app.listen(0, '127.0.0.1')
  await new Promise((r) => server.once('listening', r))
  const { port } = server.address() as import('node:net').AddressInfo
  return { base: `http://127.0.0.1:${port}`, server, close: () => new Promise<void>((r) => server.close(() => r())) }
}
