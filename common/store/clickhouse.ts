import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { createClient, type ClickHouseClient } from '@clickhouse/client'
import type { Logger } from '../logger.ts'
import type { LRUCache } from 'lru-cache'
import { lruCache } from '../lru.ts'
import { WRITE_BUFFERS } from '../buffer-pool.ts'
import { parseNative, NativeUnsupported } from './native-format.ts'
import { ByteWriter, encodeRowsOrNull, encodersFor, RowBinaryUnsupported, RowEncoder, type Encoder } from './row-binary.ts'

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
  /**
   * chdb: the Linux nice value of its merge threads (ClickHouse's `os_threads_nice_value_merge_mutate`,
   * 0–19; default MERGE_THREADS_NICE). Merges then take the CPU that inserts and queries leave.
   */
  mergeNice?: number
}

/**
 * chdb's merge threads run at this nice value unless told otherwise. At 0, on two cores, the
 * background merges of the projection's parts took the CPU the ingest needed: up to 2.7 of the
 * 14 CPU-seconds of a million events, and the pipeline's rate fell with them. Niced, they run in
 * the gaps and catch up once the backlog is in (docs/analytics-performance.md, "Ingest"). ClickHouse
 * applies it only with the CAP_SYS_NICE capability (root has it), and does nothing otherwise.
 */
export const MERGE_THREADS_NICE = 10

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
  const connection = await withEngineArgs(chdbPath, [`--os_threads_nice_value_merge_mutate=${opts.mergeNice ?? MERGE_THREADS_NICE}`], () => createChdbConnection({ path: chdbPath }))
  const client = createClient({
    connection,
    clickhouse_settings: SESSION_SETTINGS,
  } as never) as ClickHouseClient
  await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${quoteIdent(opts.database)}` })
  await client.command({ query: `USE ${quoteIdent(opts.database)}` })
  // Rows are handed to chdb as files (fileInsert): a folder of this store's, removed when it closes.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdp-chdb-insert-'))
  const chdb = (connection as unknown as { chdb: { queryAsync(sql: string): Promise<{ text(): string; bytes(): Uint8Array }> } }).chdb
  fileInserts.set(client, { database: opts.database, dir, run: (sql) => chdb.queryAsync(sql), types: lruCache({ max: 256 }) })
  const close = client.close.bind(client)
  client.close = async () => {
    try {
      await close()
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  return client
}

/**
 * `connect()` with chdb's engine started with these server settings (`clickhouse local` arguments).
 * The engine takes them only when it starts, at the first connection to a data directory, and the
 * clickhouse-js connection passes none: a chdb session opened with them just before starts it so,
 * and the connection keeps the engine once the session is closed. An engine already running for
 * this directory keeps its own settings. In memory (tests) there is no directory to start it on.
 */
async function withEngineArgs<T>(chdbPath: string, args: string[], connect: () => T): Promise<T> {
  if (chdbPath === ':memory:') return connect()
  const { Session } = await import('chdb')
  const starter = new Session(chdbPath, { connectionArgs: args })
  try {
    return connect()
  } finally {
    starter.close()
  }
}

/** Where a chdb store's inserts put their rows, by client. */
const fileInserts = new WeakMap<Store, ChdbFiles>()
interface ChdbFiles {
  database: string
  dir: string
  /** A statement on chdb's session, started at once (the client's command starts it a turn of the event loop later). */
  run(sql: string): Promise<{ text(): string; bytes(): Uint8Array }>
  /**
   * Each table's column types, read once (system.columns): what RowBinary needs to encode a value.
   * Bounded: every recompute inserts into a staging table of its own name.
   */
  types: LRUCache<string, Promise<Map<string, string>>>
}
let fileSeq = 0

/**
 * Inserts rows given as objects (JSONEachRow on a server). On chdb, rows that share one set of
 * keys in one order (rows built by one function) go as their values, as insertValueRows sends
 * them; rows of mixed shapes go as JSONEachRow, each leaving out what it does not set.
 */
export async function insertJsonRows(store: Store, table: string, rows: readonly object[], opts: InsertOptions = {}): Promise<void> {
  if (!rows.length) return
  const chdb = fileInsertFor(store, table, opts)
  if (!chdb) {
    await store.insert({ table, values: rows as object[], format: 'JSONEachRow', clickhouse_settings: opts.settings })
    return
  }
  const compact = compactValues(rows)
  if (compact) return chdbInsertValues(chdb, compact.columns, compact.values)
  let body = ''
  for (const r of rows) body += JSON.stringify(r) + '\n'
  await fileInsert(chdb, null, body, 'JSONEachRow')
}

/** An insert's own ClickHouse settings (numbers and flags), on a server and on chdb alike. */
export interface InsertOptions {
  settings?: Record<string, number | boolean>
}

/**
 * For the streams' inserts into ReplacingMergeTree tables: ClickHouse skips its merge of each block
 * as it is written (`optimize_on_insert`: collapsing the block's own duplicates). Every reader
 * already collapses duplicates (FINAL, argMax, uniqExact), since a redelivered row arrives in
 * another block anyway; for the order events the merge took about a sixth of the insert's CPU
 * (docs/analytics-performance.md, "Ingest").
 */
export const NO_MERGE_ON_INSERT = { settings: { optimize_on_insert: 0 } } as const

/**
 * Inserts rows given as arrays of values in `columns`' order: for writers of many rows of one
 * shape, which then need no object per row. On a server, the client's insert as
 * JSONCompactEachRow; on chdb, RowBinary (below).
 */
export async function insertValueRows(store: Store, table: string, columns: readonly string[], rows: readonly unknown[][], opts: InsertOptions = {}): Promise<void> {
  if (!rows.length) return
  const chdb = fileInsertFor(store, table, opts)
  if (!chdb) {
    await store.insert({ table, values: rows as unknown[][], columns: columns as [string, ...string[]], format: 'JSONCompactEachRow', clickhouse_settings: opts.settings })
    return
  }
  await chdbInsertValues(chdb, columns, rows)
}

type ChdbInsert = ChdbFiles & { table: string; name: string; settings: string }

/** chdb's file insert into `table` (qualified), or null on a server or for a name it does not take (plain identifiers only). */
function fileInsertFor(store: Store, table: string, opts: InsertOptions): ChdbInsert | null {
  const chdb = fileInserts.get(store)
  if (!chdb || !/^\w+$/.test(chdb.database) || !/^\w+$/.test(table)) return null
  let settings = "date_time_input_format = 'best_effort'"
  for (const [k, v] of Object.entries(opts.settings ?? {})) {
    if (!/^\w+$/.test(k) || (typeof v === 'number' && !Number.isFinite(v))) throw new Error(`invalid insert setting ${k}`)
    settings += `, ${k} = ${Number(v)}`
  }
  return { ...chdb, table: `${chdb.database}.${table}`, name: table, settings }
}

/**
 * Rows of one shape on chdb: encoded as RowBinary by the table's column types (row-binary.ts), so
 * no number is printed here or parsed by chdb; about a fifth of JSON's time on each side
 * (docs/analytics-performance.md, "Ingest"). A column type or a value RowBinary does not take
 * exactly sends the insert as JSONCompactEachRow instead.
 */
async function chdbInsertValues(chdb: ChdbInsert, columns: readonly string[], rows: readonly unknown[][]): Promise<void> {
  const encoders = await encodersOf(chdb, columns)
  const encoded = encoders && encodeRowsOrNull(encoders, rows)
  if (encoded) return fileInsert(chdb, columns, encoded, 'RowBinary')
  let body = ''
  for (const r of rows) body += JSON.stringify(r) + '\n'
  await fileInsert(chdb, columns, body, 'JSONCompactEachRow')
}

/**
 * A query without parameters, its result as one array per column, read from chdb's Native output
 * (native-format.ts): no JSON printed, decoded and parsed for a million-row result. Null on a
 * server, and for a result with a column type the reader does not take: the caller asks for JSON.
 * A result without rows has no columns.
 */
export async function queryNativeColumns(store: Store, sql: string): Promise<unknown[][] | null> {
  const chdb = fileInserts.get(store)
  if (!chdb) return null
  const out = await chdb.run(`${sql}\nFORMAT Native`)
  try {
    return parseNative(out.bytes()).columns
  } catch (err) {
    if (err instanceof NativeUnsupported) return null
    throw err
  }
}

/**
 * An insert whose rows are encoded elsewhere (on another thread, with row-binary.ts): the column
 * types to encode them by, and the insert of one RowBinary body. Null on a server, or for a table
 * or column that insertValueRows would not send as RowBinary either: the caller then sends values.
 */
export interface EncodedInsert {
  types: string[]
  /** One insert of a body, or of several parts of one body, in order. */
  insert(body: Uint8Array | readonly Uint8Array[]): Promise<void>
}

export async function encodedInsertFor(store: Store, table: string, columns: readonly string[], opts: InsertOptions = {}): Promise<EncodedInsert | null> {
  const chdb = fileInsertFor(store, table, opts)
  if (!chdb || !columns.every((c) => /^\w+$/.test(c))) return null
  const byName = await columnTypes(chdb)
  const types = columns.map((c) => byName.get(c))
  if (!types.every((t): t is string => t !== undefined)) return null
  return { types, insert: (body) => fileInsert(chdb, columns, body, 'RowBinary') }
}

/**
 * Rows of `table` encoded one by one as they are made (RowEncoder), inserted later as one body:
 * for a consumer that holds its rows until a write. Null where encodedInsertFor is, or when a
 * column's type has no RowBinary encoder; the caller then keeps the rows' values and inserts them
 * with insertValueRows, as it does with a row the encoder refuses.
 */
export interface EncodingInsert {
  /** The columns' ClickHouse types: an encoder of the same rows on another thread is made from them (encoderFor). */
  types: string[]
  rows: RowEncoder
  /** One insert of rows made by `rows`, in this order. */
  insert(rows: readonly Uint8Array[]): Promise<void>
}

export async function encodingInsertFor(store: Store, table: string, columns: readonly string[], opts: InsertOptions = {}): Promise<EncodingInsert | null> {
  const encoded = await encodedInsertFor(store, table, columns, opts)
  const encoders = encoded && encodersFor(encoded.types)
  if (!encoded || !encoders) return null
  return { types: encoded.types, rows: new RowEncoder(encoders), insert: (rows) => encoded.insert(rows) }
}

/**
 * The rows of one insert, gathered as they are made: encoded as RowBinary into one body at once
 * where chdb takes them (`encoding`, from encodingInsertFor), kept as values where not (a server,
 * a value RowBinary refuses). A writer that holds its rows across awaits (a publish, another
 * insert) then holds bytes, not each row's array and objects, which a young-generation collection
 * would copy and promote (docs/analytics-performance.md, "Streaming").
 */
export class InsertRows {
  private readonly body: ByteWriter | null
  private readonly values: unknown[][] = []
  private count = 0

  constructor(
    private readonly store: Store,
    private readonly table: string,
    private readonly columns: readonly string[],
    private readonly encoding: EncodingInsert | null,
    private readonly opts: InsertOptions = {},
  ) {
    // Dropped whole once inserted: its buffers go back to the pool (buffer-pool.ts).
    this.body = encoding ? new ByteWriter(undefined, WRITE_BUFFERS) : null
  }

  /** One row, its values in `columns`' order. */
  add(values: readonly unknown[]): void {
    this.count++
    if (this.body) {
      try {
        this.encoding!.rows.encodeInto(this.body, values)
        return
      } catch (err) {
        if (!(err instanceof RowBinaryUnsupported)) throw err
      }
    }
    this.values.push(values as unknown[])
  }

  get length(): number {
    return this.count
  }

  /** One insert of the encoded rows, and one of those kept as values. The rows are dropped once it settles. */
  async insert(): Promise<void> {
    const body = this.body
    try {
      await Promise.all([
        body && body.pos ? this.encoding!.insert([body.buf.subarray(0, body.pos)]) : undefined,
        this.values.length ? insertValueRows(this.store, this.table, this.columns, this.values, this.opts) : undefined,
      ])
    } finally {
      body?.release()
    }
  }
}

function columnTypes(chdb: ChdbFiles & { name: string }): Promise<Map<string, string>> {
  let types = chdb.types.get(chdb.name)
  if (!types) {
    types = readColumnTypes(chdb, chdb.name)
    chdb.types.set(chdb.name, types)
    types.catch(() => chdb.types.delete(chdb.name))
  }
  return types
}

/** The RowBinary encoders of these columns of the table, or null when one's type has none (or is not a column: JSON then says why). */
async function encodersOf(chdb: ChdbFiles & { name: string }, columns: readonly string[]): Promise<Encoder[] | null> {
  const byName = await columnTypes(chdb)
  const types = columns.map((c) => byName.get(c))
  return types.every((t): t is string => t !== undefined) ? encodersFor(types) : null
}

async function readColumnTypes(chdb: ChdbFiles, table: string): Promise<Map<string, string>> {
  const out = await chdb.run(`SELECT name, type FROM system.columns WHERE database = ${sqlString(chdb.database)} AND table = ${sqlString(table)} FORMAT JSONCompact`)
  const data = (JSON.parse(out.text()) as { data: [string, string][] }).data
  return new Map(data)
}

/**
 * The column types RowBinary inserts encode with are read once per table; a migration that
 * changes a table's columns forgets them.
 */
function forgetColumnTypes(store: Store): void {
  fileInserts.get(store)?.types.clear()
}

/**
 * One insert on chdb: the body is written to a file of the store's folder and read back by
 * `INSERT INTO t (columns) SELECT * FROM file(…)`, with the table's own column types (and its
 * defaults for the columns a JSONEachRow row leaves out). chdb reads a file on all its threads,
 * about twice as fast as the same bytes given inline (`INSERT … FORMAT`, or chdb's rawInsert):
 * docs/analytics-performance.md, "Ingest". The file is removed once the insert is done.
 */
async function fileInsert(chdb: ChdbInsert, columns: readonly string[] | null, body: string | Uint8Array | readonly Uint8Array[], format: 'JSONEachRow' | 'JSONCompactEachRow' | 'RowBinary'): Promise<void> {
  if (columns && !columns.every((c) => /^\w+$/.test(c))) throw new Error(`invalid column name in ${columns.join(', ')}`)
  const file = path.join(chdb.dir, `${process.pid}-${++fileSeq}`)
  // Written at once (a few milliseconds): fs.promises would write it in chunks, one turn of the
  // event loop each, while the caller builds its next batch. A body in parts (a write's gathered
  // batches) is written part after part, where joining them first copied every row once more.
  if (typeof body === 'string' || !Array.isArray(body)) fs.writeFileSync(file, body as string | Uint8Array)
  else writeParts(file, body)
  try {
    await chdb.run(`INSERT INTO ${chdb.table}${columns ? ` (${columns.join(', ')})` : ''} SELECT * FROM file(${sqlString(file)}, ${format}) SETTINGS ${chdb.settings}`)
  } finally {
    fs.rmSync(file, { force: true })
  }
}

function writeParts(file: string, parts: readonly Uint8Array[]): void {
  const fd = fs.openSync(file, 'w')
  try {
    // writev may write less than asked (a full disk, a signal): the rest goes again.
    let rest = parts.filter((p) => p.length > 0)
    while (rest.length) {
      let written = fs.writevSync(fd, rest as Uint8Array[])
      let i = 0
      while (i < rest.length && written >= rest[i]!.length) written -= rest[i++]!.length
      rest = rest.slice(i)
      if (written > 0) rest[0] = rest[0]!.subarray(written)
    }
  } finally {
    fs.closeSync(fd)
  }
}

/** A ClickHouse string literal. */
function sqlString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`
}

/**
 * The rows' values under the first row's keys, or null when a row has other keys, another key
 * order, or an undefined value (JSONEachRow leaves that column to its default; a value row
 * cannot).
 */
export function compactValues(rows: readonly object[]): { columns: string[]; values: unknown[][] } | null {
  const columns = Object.keys(rows[0]!)
  if (!columns.every((c) => /^\w+$/.test(c))) return null
  const n = columns.length
  const values: unknown[][] = new Array(rows.length)
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!
    const out: unknown[] = new Array(n)
    let k = 0
    for (const key in row) {
      const v = (row as Record<string, unknown>)[key]
      if (k >= n || key !== columns[k] || v === undefined) return null
      out[k++] = v
    }
    if (k !== n) return null
    values[r] = out
  }
  return { columns, values }
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
  if (done.length) forgetColumnTypes(store)
  return done
}

/** Tables rebuilt from the event log by `cdp replay`. */
export const PROJECTION_TABLES = ['order_events', 'orders', 'customers'] as const

export async function truncateProjections(store: Store, tables: readonly string[] = PROJECTION_TABLES): Promise<void> {
  for (const t of tables) await store.command({ query: `TRUNCATE TABLE IF EXISTS ${quoteIdent(t)}` })
}
