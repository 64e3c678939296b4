import type { Store } from '../../common/store/clickhouse.ts'
import type { Analysis } from '../features/index.ts'
import { nextSeq, RANK_STEP } from '../../common/store/versions.ts'
import type { Frequency } from '../../common/jobs/schedule.ts'
import { iso } from '../../common/time.ts'

/** One row of processing_schedules; times are epoch ms. */
export interface ScheduleRow {
  tenant_id: number
  schedule_id: string
  schedule_at: number
  recurring: boolean
  frequency: Frequency | null
  analyses: Analysis[]
  next_run: number | null
  active: boolean
  last_run_at: number | null
  created_at: number
  updated_at: number
}

const TIME_COLUMNS = ['schedule_at', 'next_run', 'last_run_at', 'created_at', 'updated_at'] as const
type TimeColumn = (typeof TIME_COLUMNS)[number]
type RawRow = Omit<ScheduleRow, TimeColumn | 'recurring' | 'active' | 'frequency'> & { recurring: number; active: number; frequency: string } & Record<`${TimeColumn}_ms`, number | null>

const SELECT = `SELECT tenant_id, schedule_id, recurring, frequency, analyses, active,
  ${TIME_COLUMNS.map((c) => `toUnixTimestamp64Milli(${c}) AS ${c}_ms`).join(', ')}`


/** The processing_schedules table. Every SQL value is a bound `{name:Type}` parameter. */
export class SchedulesTable {
  constructor(private readonly store: Store) {}

  /**
   * Writes the row as its new state. Active rows are versioned by next_run (schedule progress),
   * inactive ones above every active version, so a deactivation is final.
   */
  async write(row: ScheduleRow): Promise<void> {
    const version = row.active && row.next_run !== null ? row.next_run : RANK_STEP + nextSeq()
    await this.store.insert({
      table: 'processing_schedules',
      format: 'JSONEachRow',
      values: [
        {
          tenant_id: row.tenant_id,
          schedule_id: row.schedule_id,
          schedule_at: iso(row.schedule_at),
          recurring: row.recurring ? 1 : 0,
          frequency: row.frequency ?? '',
          analyses: row.analyses,
          next_run: iso(row.next_run),
          active: row.active ? 1 : 0,
          last_run_at: iso(row.last_run_at),
          created_at: iso(row.created_at),
          updated_at: iso(row.updated_at),
          version,
        },
      ],
    })
  }

  async active(tenantId: number): Promise<ScheduleRow[]> {
    return this.#select(`SELECT * FROM processing_schedules FINAL WHERE tenant_id = {tenant:UInt64}`, `WHERE active = 1 ORDER BY next_run, schedule_id`, { tenant: tenantId })
  }

  async get(tenantId: number, scheduleId: string): Promise<ScheduleRow | undefined> {
    const [row] = await this.#select(
      `SELECT * FROM processing_schedules FINAL WHERE tenant_id = {tenant:UInt64} AND schedule_id = {schedule:String}`,
      '',
      { tenant: tenantId, schedule: scheduleId },
    )
    return row
  }

  /** Active schedules of every tenant whose next run is due at `now`, oldest first. */
  async due(now: number, limit = 100): Promise<ScheduleRow[]> {
    return this.#select(
      `SELECT * FROM processing_schedules FINAL`,
      `WHERE active = 1 AND next_run <= fromUnixTimestamp64Milli({now:Int64}, 'UTC') ORDER BY next_run, tenant_id, schedule_id LIMIT {limit:UInt32}`,
      { now, limit },
    )
  }

  async #select(inner: string, tail: string, params: Record<string, unknown>): Promise<ScheduleRow[]> {
    const rs = await this.store.query({ query: `${SELECT} FROM (${inner}) ${tail}`, query_params: params, format: 'JSONEachRow' })
    const rows = await rs.json<RawRow>()
    return rows.map((r) => ({
      tenant_id: Number(r.tenant_id),
      schedule_id: r.schedule_id,
      schedule_at: Number(r.schedule_at_ms),
      recurring: Boolean(Number(r.recurring)),
      frequency: (r.frequency || null) as Frequency | null,
      analyses: r.analyses,
      next_run: r.next_run_ms,
      active: Boolean(Number(r.active)),
      last_run_at: r.last_run_at_ms,
      created_at: Number(r.created_at_ms),
      updated_at: Number(r.updated_at_ms),
    }))
  }
}
