import fs from 'node:fs'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { createClient, type ClickHouseClient } from '@clickhouse/client'
import type { Logger } from '../logger.ts'

export type Store = ClickHouseClient

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../schemas/clickhouse')

/** Settings every session gets: ISO timestamps in, UTC out. */
const SESSION_SETTINGS = {
  date_time_input_format: 'best_effort',
  output_format_json_quote_64bit_integers: 0,
  output_format_json_quote_decimals: 1,
} as const

export interface StoreOptions {
  /** ClickHouse server over HTTP; absent means the embedded engine (chdb) under `chdbPath`. */
  url?: string
  username?: string
  password?: string
  database: string
  chdbPath?: string
}

/**
 * The store port: an @clickhouse/client, talking to a server over HTTP or to chdb in-process.
 * The same SQL runs on both; nothing above this function knows which one it has.
 */
export async function openStore(opts: StoreOptions): Promise<Store> {
  if (opts.url) {
    const bootstrap = createClient({ url: opts.url, username: opts.username, password: opts.password })
    await bootstrap.command({ query: `CREATE DATABASE IF NOT EXISTS ${quoteIdent(opts.database)}` })
    await bootstrap.close()
    return createClient({
      url: opts.url,
      username: opts.username,
      password: opts.password,
      database: opts.database,
      clickhouse_settings: SESSION_SETTINGS,
      request_timeout: 300_000,
    })
  }
  const { createChdbConnection } = await import('chdb/connection')
  const chdbPath = opts.chdbPath ?? ':memory:'
  if (chdbPath !== ':memory:') fs.mkdirSync(chdbPath, { recursive: true })
  const connection = createChdbConnection({ path: chdbPath })
  const client = createClient({
    connection,
    clickhouse_settings: SESSION_SETTINGS,
  } as never) as ClickHouseClient
  await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${quoteIdent(opts.database)}` })
  await client.command({ query: `USE ${quoteIdent(opts.database)}` })
  rawInserts.set(client, { database: opts.database, rawInsert: (p) => (connection as unknown as { chdb: RawInserter }).chdb.rawInsert(p) })
  return client
}

interface RawInserter {
  rawInsert(p: { table: string; columns?: string[]; values: string; format: 'JSONEachRow' | 'JSONCompactEachRow'; settings?: Record<string, string> }): Promise<unknown>
}
/** The chdb stores' zero-copy insert (chdb's own parser over one buffer), by client. */
const rawInserts = new WeakMap<Store, RawInserter & { database: string }>()

/**
 * Inserts rows as JSON. On chdb the rows are serialised here into one buffer that chdb's
 * multithreaded parser reads in place (its `rawInsert`), instead of the client's per-row stream
 * concatenated into the SQL text: about a third less time for the projection's batches
 * (docs/analytics-performance.md, "Ingest"). Rows that share one set of keys in one order (rows
 * built by one function) go as JSONCompactEachRow, their values only: about half the bytes and
 * half chdb's parsing time of JSONEachRow. On a server, the client's ordinary insert.
 */
export async function insertJsonRows(store: Store, table: string, rows: readonly object[]): Promise<void> {
  if (!rows.length) return
  const raw = rawInsertFor(store, table)
  if (!raw) {
    await store.insert({ table, values: rows as object[], format: 'JSONEachRow' })
    return
  }
  const compact = compactJsonLines(rows)
  if (compact) {
    await raw.rawInsert({ table: raw.table, columns: compact.columns, values: compact.body, format: 'JSONCompactEachRow', settings: RAW_SETTINGS })
    return
  }
  let body = ''
  for (const r of rows) body += JSON.stringify(r) + '\n'
  await raw.rawInsert({ table: raw.table, values: body, format: 'JSONEachRow', settings: RAW_SETTINGS })
}

const RAW_SETTINGS = { date_time_input_format: 'best_effort' }

/** chdb's raw insert into `table` (qualified), or null on a server or for a name it does not take (plain identifiers only). */
function rawInsertFor(store: Store, table: string): (RawInserter & { table: string }) | null {
  const raw = rawInserts.get(store)
  if (!raw || !/^\w+$/.test(raw.database) || !/^\w+$/.test(table)) return null
  return { rawInsert: raw.rawInsert, table: `${raw.database}.${table}` }
}

/**
 * Inserts rows given as arrays of values in `columns`' order (JSONCompactEachRow): for writers of
 * many rows of one shape, which then need no object per row. chdb's raw insert as above; on a
 * server, the client's insert with the same format.
 */
export async function insertValueRows(store: Store, table: string, columns: readonly string[], rows: readonly unknown[][]): Promise<void> {
  if (!rows.length) return
  const raw = rawInsertFor(store, table)
  if (!raw) {
    await store.insert({ table, values: rows as unknown[][], columns: columns as [string, ...string[]], format: 'JSONCompactEachRow' })
    return
  }
  let body = ''
  for (const r of rows) body += JSON.stringify(r) + '\n'
  await raw.rawInsert({ table: raw.table, columns: [...columns], values: body, format: 'JSONCompactEachRow', settings: RAW_SETTINGS })
}

/**
 * The rows as JSONCompactEachRow lines under the first row's keys, or null when a row has other
 * keys, another key order, or an undefined value (JSONEachRow leaves that column to its default;
 * an array would send null).
 */
export function compactJsonLines(rows: readonly object[]): { columns: string[]; body: string } | null {
  const columns = Object.keys(rows[0]!)
  if (!columns.every((c) => /^\w+$/.test(c))) return null
  const n = columns.length
  const values: unknown[] = new Array(n)
  let body = ''
  for (const row of rows) {
    let k = 0
    for (const key in row) {
      const v = (row as Record<string, unknown>)[key]
      if (k >= n || key !== columns[k] || v === undefined) return null
      values[k++] = v
    }
    if (k !== n) return null
    body += JSON.stringify(values) + '\n'
  }
  return { columns, body }
}

export function quoteIdent(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`invalid identifier ${name}`)
  return `\`${name}\``
}

export interface Migration {
  version: number
  name: string
  statements: string[]
  checksum: string
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d+_.+\.sql$/.test(f))
    .sort()
    .map((f) => {
      const sql = fs.readFileSync(path.join(dir, f), 'utf8')
      return {
        version: Number(f.split('_')[0]),
        name: f,
        checksum: createHash('sha256').update(sql).digest('hex'),
        statements: splitStatements(sql),
      }
    })
}

/** Splits a migration file on `;` at line ends, after dropping `--` comments. */
export function splitStatements(sql: string): string[] {
  return sql
    .split('\n')
    .map((l) => l.replace(/--.*$/, ''))
    .join('\n')
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter(Boolean)
}

export class MigrationChecksumError extends Error {}

/**
 * Applies migrations not yet recorded in `schema_migrations`, in order. Statements are
 * idempotent (IF NOT EXISTS), so a migration interrupted half-way is simply run again.
 * An applied migration whose file changed is an error: migrations are append-only.
 */
export async function migrate(store: Store, logger?: Logger, dir = MIGRATIONS_DIR): Promise<number[]> {
  await store.command({
    query: `CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, checksum String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3))
            ENGINE = ReplacingMergeTree ORDER BY version`,
  })
  const rs = await store.query({ query: 'SELECT version, checksum FROM schema_migrations FINAL', format: 'JSONEachRow' })
  const applied = new Map((await rs.json<{ version: number; checksum: string }>()).map((r) => [Number(r.version), r.checksum]))
  const done: number[] = []
  for (const m of loadMigrations(dir)) {
    const prev = applied.get(m.version)
    if (prev !== undefined) {
      if (prev !== m.checksum) throw new MigrationChecksumError(`migration ${m.name} changed after it was applied; add a new migration instead`)
      continue
    }
    for (const statement of m.statements) await store.command({ query: statement })
    await store.insert({ table: 'schema_migrations', values: [{ version: m.version, name: m.name, checksum: m.checksum }], format: 'JSONEachRow' })
    logger?.info({ migration: m.name }, 'migration applied')
    done.push(m.version)
  }
  return done
}

/** Tables rebuilt from the event log by `cdp replay`. */
export const PROJECTION_TABLES = ['order_events', 'orders', 'customers'] as const

export async function truncateProjections(store: Store, tables: readonly string[] = PROJECTION_TABLES): Promise<void> {
  for (const t of tables) await store.command({ query: `TRUNCATE TABLE IF EXISTS ${quoteIdent(t)}` })
}
