import { z } from 'zod'
import { SEGMENTS } from '../../../pipelines/features/segments.ts'
import { customerFilter, type SqlFilter } from './filters.ts'
import { fieldColumns, select, type AnalyticsContext, type RowsExport } from './endpoint.ts'
import { Count, DateOnly, Timestamp } from '../response-schemas.ts'
import type { RfmOptions } from './rfm.ts'

/**
 * The RFM export (`format=` on /analytics/rfm): the stored RFM record of every customer the
 * request selects, one row each, in customer id order. Definitions: docs/analytics-rfm-clv-churn.md.
 */

/** The scored customers (a segment) matching the shared filters: the RFM population. */
export function rfmPopulation(q: RfmOptions, nowMs: number): SqlFilter {
  const f = customerFilter(q, nowMs)
  return { where: `${f.where} AND f.segment IS NOT NULL`, params: f.params }
}

/** The population, narrowed to `segment` when given (the segments the body shows). */
export function rfmSelection(q: RfmOptions, nowMs: number): SqlFilter {
  const p = rfmPopulation(q, nowMs)
  return q.segment ? { where: `${p.where} AND f.segment = {only_segment:String}`, params: { ...p.params, only_segment: q.segment } } : p
}

const Score = z.int().min(1).max(5).nullable()

export const RfmCustomer = z
  .strictObject({
    customer_id: z.int().min(1),
    email: z.string(),
    r_score: Score,
    f_score: Score,
    m_score: Score,
    rfm_score: z.string().nullable().meta({ description: 'r, f and m digits, e.g. "545"' }),
    segment: z.enum(SEGMENTS),
    recency_days: Count.nullable(),
    frequency: Count.meta({ description: 'Purchase days (same-day orders are one purchase)' }),
    monetary: z.number().meta({ description: 'Net spend' }),
    last_order_date: DateOnly.nullable(),
    processed_at: Timestamp.meta({ description: 'When the record was computed' }),
  })
  .meta({ id: 'RfmCustomer' })
export type RfmCustomerRow = z.infer<typeof RfmCustomer>

async function count(ctx: AnalyticsContext, q: RfmOptions): Promise<number> {
  const s = rfmSelection(q, ctx.now())
  const [r] = await select<{ n: string }>(ctx.store, `SELECT count() AS n FROM customer_features AS f FINAL WHERE ${s.where}`, s.params)
  return Number(r?.n ?? 0)
}

export const rfmExport: RowsExport<RfmOptions, RfmCustomerRow> = {
  description: 'the stored RFM record of every customer of the population (narrowed to `segment` when given), in customer id order; `limit`, `offset` and `include_details` do not apply',
  row: RfmCustomer,
  columns: fieldColumns<RfmCustomerRow>(Object.keys(RfmCustomer.shape) as (keyof RfmCustomerRow)[]),
  count,
  async rows(ctx, q, limit) {
    const s = rfmSelection(q, ctx.now())
    const rows = await select<Omit<RfmCustomerRow, 'processed_at'> & { processed_ms: string }>(
      ctx.store,
      `SELECT f.customer_id AS customer_id, f.email AS email, f.r_score AS r_score, f.f_score AS f_score, f.m_score AS m_score, f.rfm_score AS rfm_score,
              assumeNotNull(f.segment) AS segment, f.recency_days AS recency_days, f.frequency AS frequency, toFloat64(f.monetary) AS monetary,
              toString(toDate(f.last_order_at)) AS last_order_date, toUnixTimestamp64Milli(f.processed_at) AS processed_ms
       FROM customer_features AS f FINAL WHERE ${s.where}
       ORDER BY f.customer_id
       LIMIT {limit:UInt64}`,
      { ...s.params, limit },
    )
    return rows.map(({ processed_ms, ...r }) => ({ ...r, customer_id: Number(r.customer_id), processed_at: new Date(Number(processed_ms)).toISOString() }))
  },
}
