/**
 * A job table in ClickHouse: one ReplacingMergeTree row per job, every state change inserts the
 * whole row again with a higher version, readers use FINAL. The version is
 * `rank * RANK_STEP + nextSeq()`: a later lifecycle stage (a cancel mark, a final state) outranks
 * an earlier one whatever the clocks of the writers say, and writes of one stage order by time.
 *
 * Rows are plain objects: time columns are epoch ms (or null), JSON columns objects (or null,
 * stored as ''), flags booleans; this module converts both ways. Every SQL value is a bound
 * `{name:Type}` parameter.
 */
import type { Store } from '../store/clickhouse.ts'
import { nextSeq, RANK_STEP } from '../store/versions.ts'
import { iso } from '../time.ts'

export interface JobTableSpec<Row> {
  table: string
  /** Every column a read returns, in order. */
  columns: readonly (keyof Row & string)[]
  /** DateTime64 columns: epoch ms (or null) in a row. */
  timeColumns: readonly (keyof Row & string)[]
  /** String columns holding JSON: an object (or null) in a row, '' when null. */
  jsonColumns?: readonly (keyof Row & string)[]
  /** UInt8 columns: booleans in a row. */
  flagColumns?: readonly (keyof Row & string)[]
  /** Integer columns ClickHouse may send as strings (UInt64). */
  numberColumns?: readonly (keyof Row & string)[]
  /** The lifecycle rank of a row's state (1: live; higher ranks win over lower ones). */
  rank(row: Row): number
  /** Columns written from the row but not read back (e.g. an error code to filter on). */
  derived?(row: Row): Record<string, unknown>
}

export interface JobSelect {
  /** Conditions on the ORDER BY key, applied before FINAL collapses the versions. */
  key?: string
  /** Conditions on other columns, applied after FINAL, so a superseded state of a row never matches. */
  where?: string
  /** ORDER BY / LIMIT of the result. */
  tail?: string
  params?: Record<string, unknown>
  /** Columns read as '' (a large JSON column a list does not need). */
  skip?: readonly string[]
}

export class JobTable<Row extends object> {
  constructor(
    private readonly store: Store,
    private readonly spec: JobTableSpec<Row>,
  ) {}

  /** Writes the whole row as its new state (the highest version wins). */
  async write(row: Row): Promise<void> {
    const { timeColumns, jsonColumns = [], flagColumns = [] } = this.spec
    const value: Record<string, unknown> = { ...(row as Record<string, unknown>) }
    for (const c of timeColumns) value[c] = iso(value[c] as number | null)
    for (const c of jsonColumns) value[c] = value[c] === null || value[c] === undefined ? '' : JSON.stringify(value[c])
    for (const c of flagColumns) value[c] = value[c] ? 1 : 0
    Object.assign(value, this.spec.derived?.(row))
    value.version = this.spec.rank(row) * RANK_STEP + nextSeq()
    await this.store.insert({ table: this.spec.table, format: 'JSONEachRow', values: [value] })
  }

  async select(q: JobSelect = {}): Promise<Row[]> {
    const { timeColumns, jsonColumns = [], flagColumns = [], numberColumns = [] } = this.spec
    const times = new Set<string>(timeColumns)
    const skip = new Set(q.skip ?? [])
    // A time leaves ClickHouse as epoch ms under its own alias (an alias named like its column would shadow it in WHERE).
    const cols = this.spec.columns.map((c) => (skip.has(c) ? `'' AS ${c}` : times.has(c) ? `toUnixTimestamp64Milli(${c}) AS ${c}__ms` : c))
    const rs = await this.store.query({
      query: `SELECT ${cols.join(', ')} FROM (SELECT * FROM ${this.spec.table} FINAL ${q.key ? `WHERE ${q.key}` : ''}) ${q.where ? `WHERE ${q.where}` : ''} ${q.tail ?? ''}`,
      query_params: q.params ?? {},
      format: 'JSONEachRow',
    })
    const raw = await rs.json<Record<string, unknown>>()
    return raw.map((r) => {
      const row: Record<string, unknown> = { ...r }
      for (const c of timeColumns) {
        const v = r[`${c}__ms`]
        delete row[`${c}__ms`]
        row[c] = v === null || v === undefined ? null : Number(v)
      }
      for (const c of jsonColumns) row[c] = r[c] ? JSON.parse(String(r[c])) : null
      for (const c of flagColumns) row[c] = Boolean(Number(r[c]))
      for (const c of numberColumns) row[c] = Number(r[c])
      return row as Row
    })
  }
}
