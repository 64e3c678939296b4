/**
 * GET /api/cdp/v2/customers/{customerId}?tenant_id=N — one customer's whole record: the spec's
 * stored RFM record, the list item's fields (customers.ts), the CLV parts, the churn figures and
 * an order summary with the latest orders. Read from the stored rows (customer_features as of the
 * tenant's last tick or processing run, customers, customer_demographics, orders). 404 for a
 * customer the tenant does not have; a key of another tenant is refused (403) by authorization.
 * For a profile of several customers (docs/identity.md) the record is the profile's: its features
 * and the orders of all its members; a customer merged into another's profile is a 404 that names
 * the profile. docs/analytics-rfm-clv-churn.md, "The per-customer record".
 */
import express, { type Router } from 'express'
import { z } from 'zod'
import { failure, parseRequest, sendError } from '../errors.ts'
import { json, route, shared, type Operation, type RouteGroup } from '../routes.ts'
import { Count, DateOnly, Fraction, NullableTimestamp, Timestamp } from '../response-schemas.ts'
import { iso } from '../../../common/time.ts'
import { referenceMetadata } from '../../../common/reference-date.ts'
import { CHURN_RISKS } from '../../../pipelines/features/churn.ts'
import type { FeatureValues } from '../../../pipelines/features/features.ts'
import { CLV_TIERS } from './clv.ts'
import { CustomerItemSchema, customerPage } from './customers.ts'
import { analyticsBody, round2, select, type AnalyticsContext } from './endpoint.ts'
import { ctxFor, type AnalyticsDeps } from './router.ts'
import { ReferenceSource } from './reference.ts'

export const CUSTOMER_RECORD_PATH = '/api/cdp/v2/customers/:customerId'
/** The latest orders the record lists (any status). */
export const RECENT_ORDERS = 10

const Params = z.strictObject({ customerId: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER).meta({ description: 'The customer id (positive integer)' }) })
const Query = z.strictObject({ tenant_id: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER) })

const Num = z.number().nullable()
const RecordSchema = z
  .strictObject({
    rfm: z
      .strictObject({
        tenant_id: z.int().min(1),
        customer_id: z.int().min(1),
        email: z.string(),
        recency_days: z.int().min(0).nullable(),
        frequency: Count,
        monetary: z.number(),
        r_score: z.int().min(1).max(5).nullable(),
        f_score: z.int().min(1).max(5).nullable(),
        m_score: z.int().min(1).max(5).nullable(),
        rfm_score: z.string().length(3).nullable(),
        segment: z.string().nullable(),
        processed_at: Timestamp,
      })
      .meta({ description: "The spec's stored RFM record; scores, rfm_score and segment are null for a customer without a counting order" }),
    customer: CustomerItemSchema,
    clv: z.strictObject({
      historical_value: z.number(),
      predicted_value: Num,
      total_clv: Num,
      clv_tier: z.enum(CLV_TIERS).nullable(),
      expected_purchases: Num.meta({ description: 'Expected purchase days over the CLV horizon (12 months by default)' }),
      p_alive: Fraction.nullable().meta({ description: 'Probability the customer is still active (the transaction model)' }),
    }),
    churn: z.strictObject({
      churn_risk: z.enum(CHURN_RISKS).nullable(),
      churn_probability: Fraction.nullable(),
      order_frequency_days: Num,
      expected_order_date: DateOnly.nullable(),
      days_overdue: z.int().min(0).nullable(),
      potential_loss: Num,
      recommended_action: z.string().nullable(),
    }),
    orders: z.strictObject({
      counting_orders: Count.meta({ description: 'Orders that count (not cancelled, net total above zero)' }),
      purchase_days: Count,
      total_spent: z.number(),
      avg_order_value: z.number(),
      first_order_at: NullableTimestamp,
      last_order_at: NullableTimestamp,
      all_orders: Count.meta({ description: 'Every order stored, cancelled and refunded ones included' }),
      cancelled_orders: Count,
      recent: z.array(z.strictObject({ order_id: z.string(), placed_at: Timestamp, status: z.string(), total: z.number(), currency: z.string(), cancelled: z.boolean() })),
    }),
  })
  .meta({ id: 'CustomerRecord' })

const getRecord: Operation = {
  method: 'get',
  path: CUSTOMER_RECORD_PATH,
  operationId: 'getCustomerRecord',
  summary: "One customer's record: stored RFM record, list-item fields, CLV parts, churn and order summary",
  description: `The stored figures as of the tenant's last tick or processing run (\`data.rfm.processed_at\`), the profile and demographics, and the ${RECENT_ORDERS} latest orders. A tenant key reaches its own tenant only (403).`,
  request: { params: Params, query: Query },
  responses: {
    200: json('The record in `data`', analyticsBody(RecordSchema)),
    400: failure('Invalid customer id or tenant_id (`details.errors[]`)'),
    403: shared('Forbidden'),
    404: failure('The tenant has no such customer (`Customer not found`), or it was merged into another customer\'s profile (`Customer merged into profile N`; `details.profile_id` and `details.record` name the profile\'s record)'),
  },
}

export const CUSTOMER_RECORD_ROUTES: RouteGroup = {
  tag: { name: 'Customers', description: 'One customer at a time (the list is under Analytics).' },
  operations: [getRecord],
}

/** The stored row as read: the CLV and churn columns as the feature values name and type them. */
type FeatureRow = Pick<
  FeatureValues,
  'predicted_value' | 'total_clv' | 'clv_tier' | 'expected_purchases' | 'p_alive' | 'churn_risk' | 'churn_probability' | 'order_frequency_days' | 'expected_order_date' | 'days_overdue' | 'potential_loss' | 'recommended_action'
> & {
  email: string
  recency_days: number | null
  frequency: number
  monetary: string
  r_score: number | null
  f_score: number | null
  m_score: number | null
  rfm_score: string | null
  segment: string | null
  processed_ms: string
  historical_value: string
  purchase_days: number
  counting: number
  spent_cents: string
  first_ms: string | null
  last_ms: string | null
}

const nul = <T>(v: T | null, f: (x: T) => unknown = (x) => x) => (v === null ? null : f(v))

/** The customer's orders and those of the other members of its profile (pipelines/identity): the record is the profile's. */
const MEMBERS = `(customer_id = {customer_id:UInt64} OR customer_id IN (SELECT customer_id FROM customer_profiles FINAL WHERE tenant_id = {tenant_id:UInt64} AND profile_id = {customer_id:UInt64}))`

/** The profile a customer was merged into, when it is another customer's. */
export async function absorbedInto(ctx: AnalyticsContext, tenantId: number, customerId: number): Promise<number | null> {
  const [row] = await select<{ profile_id: string }>(
    ctx.store,
    'SELECT profile_id FROM customer_profiles FINAL WHERE tenant_id = {tenant_id:UInt64} AND customer_id = {customer_id:UInt64} AND profile_id != customer_id',
    { tenant_id: tenantId, customer_id: customerId },
  )
  return row ? Number(row.profile_id) : null
}

export async function customerRecord(ctx: AnalyticsContext, tenantId: number, customerId: number): Promise<z.infer<typeof RecordSchema> | null> {
  const p = { tenant_id: tenantId, customer_id: customerId, recent: RECENT_ORDERS }
  const [features, [item], orderCounts, recent] = await Promise.all([
    select<FeatureRow>(
      ctx.store,
      `SELECT email, recency_days, frequency, toString(monetary) AS monetary, r_score, f_score, m_score, rfm_score, segment,
              toUnixTimestamp64Milli(processed_at) AS processed_ms, toString(historical_value) AS historical_value, predicted_value, total_clv,
              clv_tier, expected_purchases, p_alive, churn_risk, churn_probability, order_frequency_days, toString(expected_order_date) AS expected_order_date,
              days_overdue, potential_loss, recommended_action, purchase_days, length(order_times) AS counting, toString(arraySum(order_cents)) AS spent_cents,
              toUnixTimestamp64Milli(first_order_at) AS first_ms, toUnixTimestamp64Milli(last_order_at) AS last_ms
       FROM customer_features FINAL WHERE tenant_id = {tenant_id:UInt64} AND customer_id = {customer_id:UInt64}`,
      p,
    ),
    customerPage(ctx, { tenant_id: tenantId, customer_ids: [customerId], limit: 1, offset: 0 }, 1, 0),
    select<{ all: string; cancelled: string }>(
      ctx.store,
      // Each order's latest state as the table keeps it (FINAL: the highest version), as the
      // recompute reads it (docs/features.md, "Full recompute").
      `SELECT count() AS all, countIf(is_cancelled = 1) AS cancelled FROM orders FINAL
       WHERE tenant_id = {tenant_id:UInt64} AND ${MEMBERS}`,
      p,
    ),
    select<{ order_id: string; placed_ms: string; status: string; total: string; currency: string; cancelled: number }>(
      ctx.store,
      `SELECT order_id, toUnixTimestamp64Milli(placed_at) AS placed_ms, status, toString(total) AS total, currency, is_cancelled AS cancelled
       FROM orders FINAL WHERE tenant_id = {tenant_id:UInt64} AND ${MEMBERS}
       ORDER BY placed_ms DESC, order_id DESC LIMIT {recent:UInt32}`,
      p,
    ),
  ])
  const f = features[0]
  if (!f || !item) return null
  const counting = Number(f.counting)
  const spent = Number(f.spent_cents) / 100
  return {
    rfm: {
      tenant_id: tenantId,
      customer_id: customerId,
      email: f.email,
      recency_days: nul(f.recency_days, Number) as number | null,
      frequency: Number(f.frequency),
      monetary: Number(f.monetary),
      r_score: nul(f.r_score, Number) as number | null,
      f_score: nul(f.f_score, Number) as number | null,
      m_score: nul(f.m_score, Number) as number | null,
      rfm_score: f.rfm_score,
      segment: f.segment,
      processed_at: iso(Number(f.processed_ms))!,
    },
    customer: item,
    clv: {
      historical_value: Number(f.historical_value),
      predicted_value: f.predicted_value,
      total_clv: f.total_clv,
      clv_tier: f.clv_tier as z.infer<typeof RecordSchema>['clv']['clv_tier'],
      expected_purchases: f.expected_purchases,
      p_alive: f.p_alive,
    },
    churn: {
      churn_risk: f.churn_risk as z.infer<typeof RecordSchema>['churn']['churn_risk'],
      churn_probability: f.churn_probability,
      order_frequency_days: f.order_frequency_days,
      expected_order_date: f.expected_order_date,
      days_overdue: nul(f.days_overdue, Number) as number | null,
      potential_loss: nul(f.potential_loss, round2) as number | null,
      recommended_action: f.recommended_action,
    },
    orders: {
      counting_orders: counting,
      purchase_days: Number(f.purchase_days),
      total_spent: round2(spent),
      avg_order_value: counting ? round2(spent / counting) : 0,
      first_order_at: iso(nul(f.first_ms, Number) as number | null),
      last_order_at: iso(nul(f.last_ms, Number) as number | null),
      all_orders: Number(orderCounts[0]?.all ?? 0),
      cancelled_orders: Number(orderCounts[0]?.cancelled ?? 0),
      recent: recent.map((o) => ({ order_id: o.order_id, placed_at: iso(Number(o.placed_ms))!, status: o.status, total: Number(o.total), currency: o.currency, cancelled: Number(o.cancelled) === 1 })),
    },
  }
}

export function customerRecordRouter(deps: AnalyticsDeps): Router {
  const router = express.Router()
  const ctx = ctxFor(deps)
  const references = deps.references ?? new ReferenceSource(deps.store, deps.now)
  route(router, getRecord, async (req, res, next) => {
    try {
      const parsed = parseRequest(req, res, { params: Params, query: Query })
      if (!parsed) return
      const { tenant_id } = parsed.query
      const { customerId } = parsed.params
      const record = await customerRecord(ctx, tenant_id, customerId)
      if (!record) {
        // A customer merged into another's profile has no record of its own: say whose it is.
        const profile = await absorbedInto(ctx, tenant_id, customerId)
        if (profile !== null) return sendError(res, 404, `Customer merged into profile ${profile}`, { tenant_id, customer_id: customerId, profile_id: profile, record: `/api/cdp/v2/customers/${profile}?tenant_id=${tenant_id}` })
        return sendError(res, 404, 'Customer not found', { tenant_id, customer_id: customerId })
      }
      const ref = await references.reference(tenant_id)
      res.json({ success: true, data: record, metadata: referenceMetadata(ref) })
    } catch (err) {
      next(err)
    }
  })
  return router
}
