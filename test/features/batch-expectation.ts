/**
 * The batch side of the stream-equals-batch tests: every feature row a tenant's history must
 * end with, computed by the pure functions from every event once, and the stored rows to compare.
 */
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import { aggregate, aggregateEvents, factOf, mergeFact, orderHistory, type CustomerAggregates, type OrderFact } from '../../pipelines/features/order-facts.ts'
import { computeFeatures } from '../../pipelines/features/features.ts'
import type { TenantModel } from '../../pipelines/features/model.ts'

/** A tenant's customers' aggregates, by customer id. */
export const byCustomer = (aggs: Map<string, CustomerAggregates>, tenant: number) =>
  new Map([...aggs].filter(([k]) => k.startsWith(`${tenant}:`)).map(([k, v]) => [Number(k.split(':')[1]), v]))

/** The stored feature rows of a tenant (FINAL), in customer order, in the shape `expectedFeatureRows` builds. */
export async function featureRows(store: Store, tenant: number): Promise<Record<string, unknown>[]> {
  const rs = await store.query({
    query: `SELECT customer_id, email, recency_days, frequency, toDecimalString(monetary, 2) AS monetary, r_score, f_score, m_score, rfm_score, segment,
                   toUnixTimestamp64Milli(first_order_at) AS first, toUnixTimestamp64Milli(last_order_at) AS last, purchase_days, repeat_purchases,
                   repeat_span_days, predicted_value, total_clv, clv_tier, p_alive, churn_risk, churn_probability, order_frequency_days,
                   toString(expected_order_date) AS expected_order_date, days_overdue, potential_loss, recommended_action, order_times, order_cents
            FROM customer_features FINAL WHERE tenant_id = {t:UInt64} ORDER BY customer_id`,
    query_params: { t: tenant },
    format: 'JSONEachRow',
  })
  return rs.json<Record<string, unknown>>()
}

/**
 * What every customer's row must hold once the stream is consumed and a tick at `clock` scored it
 * with `model`: every event once, in generation order, through the same pure functions; the
 * e-mail of the latest customer record (ties: the larger e-mail).
 */
export function expectedFeatureRows(orders: readonly OrderEvent[], profiles: readonly CustomerUpserted[], tenant: number, model: TenantModel, clock: number) {
  const aggs = byCustomer(aggregateEvents(orders), tenant)
  // The order history of each customer: the latest event of each of its orders, counting ones, ascending.
  const facts = new Map<number, Map<string, OrderFact>>()
  for (const e of orders) {
    if (e.tenant_id !== tenant) continue
    if (!facts.has(e.customer_id)) facts.set(e.customer_id, new Map())
    mergeFact(facts.get(e.customer_id)!, e.order_id, factOf(e))
  }
  const emails = new Map<number, { at: number; email: string }>()
  for (const p of profiles) {
    if (p.tenant_id !== tenant) continue
    const cur = emails.get(p.customer_id)
    const email = p.email ?? ''
    if (!cur || p.occurred_at > cur.at || (p.occurred_at === cur.at && email > cur.email)) emails.set(p.customer_id, { at: p.occurred_at, email })
  }
  const ids = [...new Set([...aggs.keys(), ...emails.keys()])].sort((a, b) => a - b)
  const rows = new Map<number, Record<string, unknown>>()
  for (const id of ids) {
    const agg = aggs.get(id) ?? aggregate([])
    const v = computeFeatures(agg, model, clock)
    const h = orderHistory(facts.get(id)?.values() ?? [])
    rows.set(id, {
      customer_id: id,
      email: emails.get(id)?.email ?? '',
      recency_days: v.recency_days,
      frequency: v.frequency,
      monetary: (agg.monetaryCents / 100).toFixed(2),
      r_score: v.r_score,
      f_score: v.f_score,
      m_score: v.m_score,
      rfm_score: v.rfm_score,
      segment: v.segment,
      first: agg.firstOrderAt,
      last: agg.lastOrderAt,
      purchase_days: agg.purchaseDays,
      repeat_purchases: agg.repeatPurchases,
      repeat_span_days: agg.repeatSpanDays,
      predicted_value: v.predicted_value,
      total_clv: v.total_clv,
      clv_tier: v.clv_tier,
      p_alive: v.p_alive,
      churn_risk: v.churn_risk,
      churn_probability: v.churn_probability,
      order_frequency_days: v.order_frequency_days,
      expected_order_date: v.expected_order_date,
      days_overdue: v.days_overdue,
      potential_loss: v.potential_loss,
      recommended_action: v.recommended_action,
      order_times: h.times,
      order_cents: h.cents,
    })
  }
  return { rows, aggs, emails }
}
