import { randomUUID } from 'node:crypto'
import type { CustomerFeatures, SegmentChanged } from '../../common/events.ts'
import { centsText } from '../../common/decimal.ts'
import { EMPTY_AGGREGATES, EMPTY_HISTORY, type CustomerAggregates, type OrderFact, type OrderHistory } from './order-facts.ts'
import type { FeatureValues } from './features.ts'
import { iso } from '../../common/time.ts'

/** Pure mapping from feature state to ClickHouse rows (schemas/clickhouse/002_features.sql) and events. */

const money = centsText

export interface CustomerIdentity {
  tenantId: number
  customerId: number
  partition: number
  email: string
  emailVersion: number
}

export function factRow(c: CustomerIdentity, orderId: string, f: OrderFact) {
  return {
    partition: c.partition,
    tenant_id: c.tenantId,
    customer_id: c.customerId,
    order_id: orderId,
    version: f.version,
    event_id: f.eventId,
    placed_at: iso(f.placedAt),
    total_cents: f.cents,
    cancelled: f.cancelled ? 1 : 0,
  }
}

export function featureRow(c: CustomerIdentity, agg: CustomerAggregates, history: OrderHistory, v: FeatureValues, processedAt: number, version: number) {
  return {
    tenant_id: c.tenantId,
    customer_id: c.customerId,
    email: c.email,
    recency_days: v.recency_days,
    frequency: v.frequency,
    monetary: money(v.monetary_cents),
    r_score: v.r_score,
    f_score: v.f_score,
    m_score: v.m_score,
    rfm_score: v.rfm_score,
    segment: v.segment,
    processed_at: iso(processedAt),
    partition: c.partition,
    email_version: c.emailVersion,
    first_order_at: agg.firstOrderAt === null ? null : iso(agg.firstOrderAt),
    last_order_at: agg.lastOrderAt === null ? null : iso(agg.lastOrderAt),
    purchase_days: agg.purchaseDays,
    repeat_purchases: agg.repeatPurchases,
    repeat_span_days: agg.repeatSpanDays,
    repeat_avg_value: agg.repeatAvgCents / 100,
    avg_order_value: v.avg_order_value,
    order_times: history.times,
    order_cents: history.cents,
    historical_value: money(v.historical_value_cents),
    predicted_value: v.predicted_value,
    total_clv: v.total_clv,
    clv_tier: v.clv_tier,
    expected_purchases: v.expected_purchases,
    p_alive: v.p_alive,
    churn_risk: v.churn_risk,
    churn_probability: v.churn_probability,
    order_frequency_days: v.order_frequency_days,
    expected_order_date: v.expected_order_date,
    days_overdue: v.days_overdue,
    potential_loss: v.potential_loss,
    recommended_action: v.recommended_action,
    model_version: v.model_version,
    version,
  }
}

/**
 * The delete marker of a customer absorbed into another's profile (ReplacingMergeTree's
 * is_deleted): a newer row than its last live one, so FINAL leaves the customer out.
 */
export function deletedFeatureRow(c: CustomerIdentity, empty: FeatureValues, processedAt: number, version: number) {
  return { ...featureRow(c, EMPTY_AGGREGATES, EMPTY_HISTORY, empty, processedAt, version), is_deleted: 1 }
}

/** Header of every event the feature pipeline publishes about a customer. */
function eventHeader(c: CustomerIdentity, now: number) {
  return { event_id: randomUUID(), tenant_id: c.tenantId, occurred_at: now, source: 'cdp.features', customer_id: c.customerId }
}

export function featuresEvent(c: CustomerIdentity, agg: CustomerAggregates, v: FeatureValues, now: number): CustomerFeatures {
  return {
    ...eventHeader(c, now),
    first_order_at: agg.firstOrderAt,
    last_order_at: agg.lastOrderAt,
    order_count: agg.orderCount,
    monetary: money(v.monetary_cents),
    recency_days: v.recency_days,
    r_score: v.r_score,
    f_score: v.f_score,
    m_score: v.m_score,
    rfm_score: v.rfm_score,
    segment: v.segment,
    predicted_value: v.predicted_value,
    total_clv: v.total_clv,
    clv_tier: v.clv_tier,
    p_alive: v.p_alive,
    churn_probability: v.churn_probability,
    churn_risk: v.churn_risk,
  }
}

export function segmentChangedEvent(c: CustomerIdentity, prev: { segment: string | null; rfmScore: string | null }, v: FeatureValues, now: number): SegmentChanged {
  return {
    ...eventHeader(c, now),
    previous_segment: prev.segment,
    segment: v.segment,
    previous_rfm_score: prev.rfmScore,
    rfm_score: v.rfm_score,
  }
}

export function segmentChangeRow(e: SegmentChanged) {
  return {
    tenant_id: e.tenant_id,
    customer_id: e.customer_id,
    event_id: e.event_id,
    occurred_at: iso(e.occurred_at),
    previous_segment: e.previous_segment,
    segment: e.segment,
    previous_rfm_score: e.previous_rfm_score,
    rfm_score: e.rfm_score,
  }
}
