import { z } from 'zod'
import { SEGMENTS } from '../../../pipelines/features/segments.ts'
import { EARLIEST_DATE, ReferenceDateSchema } from '../../../common/reference-date.ts'

/**
 * Query options of the analytics endpoints (spec "Analytics", "Additional query options").
 * Arrays come as `segments[]=A&segments[]=B`, `segments=A,B` or repeated `segments=A`.
 */
/** Most items a list parameter takes (the query parser keeps that many repeated values as a list: app.ts). */
export const MAX_LIST_ITEMS = 1000

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const list = <T extends z.ZodType<unknown, any>>(item: T) =>
  z
    // A record: qs's form of a list past its array limit (more than MAX_LIST_ITEMS values), so the
    // answer says the list is too long instead of "invalid input".
    .union([z.string(), z.array(z.string()), z.record(z.string(), z.string()).transform((o) => Object.values(o))])
    .transform((v) => (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean))
    .pipe(z.array(item).max(MAX_LIST_ITEMS))

const bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0'])]).transform((v) => v === true || v === 'true' || v === '1')
const date = z.iso.date()

export const PERIODS = ['today', 'yesterday', 'week', 'month', 'quarter', 'year'] as const

/** The largest integer a parameter may be: every id and count binds exactly (JavaScript's safe integers). */
export const MAX_ID = Number.MAX_SAFE_INTEGER
/** Money filters are compared with Decimal(15,2) values: their range. */
export const MAX_MONEY = 9_999_999_999_999.99
const money = z.coerce.number().finite().min(-MAX_MONEY).max(MAX_MONEY)

/** Options every analytics endpoint accepts; each endpoint documents which ones apply to it. */
export const CommonQuery = z.object({
  tenant_id: z.coerce.number().int().positive().max(MAX_ID),
  date_from: date.optional(),
  date_to: date.optional(),
  period: z.enum(PERIODS).optional(),
  segments: list(z.enum(SEGMENTS)).optional(),
  exclude_segments: list(z.enum(SEGMENTS)).optional(),
  min_value: money.optional(),
  max_value: money.optional(),
  customer_ids: list(z.coerce.number().int().positive().max(MAX_ID)).optional(),
  email_domain: z.string().min(1).max(255).optional(),
  registration_source: z.string().min(1).max(100).optional(),
  format: z.enum(['csv', 'excel', 'json']).optional(),
  /** Answer as of the end of this day instead of the tenant's reference date (docs/features.md, "Reference date"). */
  as_of: ReferenceDateSchema.optional().meta({ description: `Answer as of the end of this UTC day (${EARLIEST_DATE} to today) instead of the tenant's reference date` }),
})

export type CommonOptions = z.infer<typeof CommonQuery>

export const limitParam = (def: number) => z.coerce.number().int().min(1).max(1000).default(def)
export const offsetParam = z.coerce.number().int().min(0).max(MAX_ID).default(0)
export { bool as boolParam, date as dateParam, list as listParam }

/** The [from, to) window in epoch ms selected by date_from/date_to or period, or null for all time. */
export function resolveWindow(o: Pick<CommonOptions, 'date_from' | 'date_to' | 'period'>, nowMs: number): { from: number; to: number } | null {
  if (o.date_from || o.date_to) {
    const from = o.date_from ? Date.parse(`${o.date_from}T00:00:00Z`) : 0
    const to = o.date_to ? Date.parse(`${o.date_to}T00:00:00Z`) + 86_400_000 : nowMs + 1
    return { from, to }
  }
  if (!o.period) return null
  const day = Math.floor(nowMs / 86_400_000) * 86_400_000
  const days = { today: 0, yesterday: 1, week: 7, month: 30, quarter: 91, year: 365 }[o.period]
  if (o.period === 'yesterday') return { from: day - 86_400_000, to: day }
  return { from: day - days * 86_400_000, to: nowMs + 1 }
}
