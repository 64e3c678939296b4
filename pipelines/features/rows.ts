import { newEventId } from '../../common/event-id.ts'
import { customerKey, type CustomerFeatures, type SegmentChanged } from '../../common/events.ts'
import { partitionFor } from '../../common/eventlog/partitioner.ts'
import { centsText } from '../../common/decimal.ts'
import { EMPTY_AGGREGATES, EMPTY_HISTORY, type CustomerAggregates, type OrderFact, type OrderHistory } from './order-facts.ts'
import type { FeatureValues } from './features.ts'
import { storedTime } from '../../common/time.ts'

/** Pure mapping from feature state to ClickHouse rows (schemas/clickhouse/002_features.sql) and events. */

const money = centsText

export interface CustomerIdentity {
  tenantId: number
  customerId: number
  partition: number
  email: string
  emailVersion: number
}

/** The partition of a customer's events (and of its state and rows): its key's, as the producers place it. */
export function customerPartition(tenantId: number, customerId: number, partitions: number): number {
  return partitionFor(customerKey(tenantId, customerId), partitions, () => 0)
}

export function customerIdentity(tenantId: number, customerId: number, partitions: number, email: string, emailVersion = 0): CustomerIdentity {
  return { tenantId, customerId, partition: customerPartition(tenantId, customerId, partitions), email, emailVersion }
}

/** feature_order_facts' columns, in the order `factRowValues` gives them. */
export const FACT_ROW_COLUMNS = ['partition', 'tenant_id', 'customer_id', 'order_id', 'version', 'event_id', 'placed_at', 'total_cents', 'cancelled'] as const

/** A fact's feature_order_facts row as values in FACT_ROW_COLUMNS' order. */
export function factRowValues(c: CustomerIdentity, orderId: string, f: OrderFact): unknown[] {
  return [c.partition, c.tenantId, c.customerId, orderId, f.version, f.eventId, storedTime(f.placedAt), f.cents, f.cancelled ? 1 : 0]
}

/** The same row as an object. */
export function factRow(c: CustomerIdentity, orderId: string, f: OrderFact): Record<(typeof FACT_ROW_COLUMNS)[number], unknown> {
  return rowObject(FACT_ROW_COLUMNS, factRowValues(c, orderId, f))
}

/** Values in `columns`' order as a row object. */
function rowObject<C extends readonly string[]>(columns: C, values: readonly unknown[]): Record<C[number], unknown> {
  const row = {} as Record<C[number], unknown>
  for (let i = 0; i < columns.length; i++) row[columns[i] as C[number]] = values[i]
  return row
}

/** customer_features' columns, in the order `featureRowValues` gives them. */
export const FEATURE_ROW_COLUMNS = [
  'tenant_id', 'customer_id', 'email', 'recency_days', 'frequency', 'monetary',
  'r_score', 'f_score', 'm_score', 'rfm_score', 'segment', 'processed_at',
  'partition', 'email_version', 'first_order_at', 'last_order_at', 'purchase_days', 'repeat_purchases',
  'repeat_span_days', 'repeat_avg_value', 'avg_order_value', 'order_times', 'order_cents', 'historical_value',
  'predicted_value', 'total_clv', 'clv_tier', 'expected_purchases', 'p_alive', 'churn_risk',
  'churn_probability', 'order_frequency_days', 'expected_order_date', 'days_overdue', 'potential_loss', 'recommended_action',
  'model_version', 'version',
] as const

export type FeatureRow = Record<(typeof FEATURE_ROW_COLUMNS)[number], unknown>

/**
 * A customer's customer_features row as values in FEATURE_ROW_COLUMNS' order: the recompute sends
 * a million of these without building an object for each (`insertValueRows`).
 */
export function featureRowValues(c: CustomerIdentity, agg: CustomerAggregates, history: OrderHistory, v: FeatureValues, processedAt: number, version: number): unknown[] {
  return [
    c.tenantId, // tenant_id
    c.customerId, // customer_id
    c.email, // email
    v.recency_days, // recency_days
    v.frequency, // frequency
    money(v.monetary_cents), // monetary
    v.r_score, // r_score
    v.f_score, // f_score
    v.m_score, // m_score
    v.rfm_score, // rfm_score
    v.segment, // segment
    storedTime(processedAt), // processed_at
    c.partition, // partition
    c.emailVersion, // email_version
    storedTime(agg.firstOrderAt), // first_order_at
    storedTime(agg.lastOrderAt), // last_order_at
    agg.purchaseDays, // purchase_days
    agg.repeatPurchases, // repeat_purchases
    agg.repeatSpanDays, // repeat_span_days
    agg.repeatAvgCents / 100, // repeat_avg_value
    v.avg_order_value, // avg_order_value
    history.times, // order_times
    history.cents, // order_cents
    money(v.historical_value_cents), // historical_value
    v.predicted_value, // predicted_value
    v.total_clv, // total_clv
    v.clv_tier, // clv_tier
    v.expected_purchases, // expected_purchases
    v.p_alive, // p_alive
    v.churn_risk, // churn_risk
    v.churn_probability, // churn_probability
    v.order_frequency_days, // order_frequency_days
    v.expected_order_date, // expected_order_date
    v.days_overdue, // days_overdue
    v.potential_loss, // potential_loss
    v.recommended_action, // recommended_action
    v.model_version, // model_version
    version, // version
  ]
}

/** The same row as an object (the stream's writes, where rows of other shapes share a batch). */
export function featureRow(c: CustomerIdentity, agg: CustomerAggregates, history: OrderHistory, v: FeatureValues, processedAt: number, version: number): FeatureRow {
  return rowObject(FEATURE_ROW_COLUMNS, featureRowValues(c, agg, history, v, processedAt, version))
}

/**
 * The delete marker of a customer absorbed into another's profile (ReplacingMergeTree's
 * is_deleted): a newer row than its last live one, so FINAL leaves the customer out.
 */
export function deletedFeatureRow(c: CustomerIdentity, empty: FeatureValues, processedAt: number, version: number) {
  return { ...featureRow(c, EMPTY_AGGREGATES, EMPTY_HISTORY, empty, processedAt, version), is_deleted: 1 }
}

/** Header of every event the feature pipeline publishes about a customer. */
const SOURCE = 'cdp.features'

// The events are object literals, header fields written out: an object spread followed by new keys
// costs about a microsecond a key in V8 (16 µs for a features event), a literal 0.2 µs in all.
export function featuresEvent(c: CustomerIdentity, agg: CustomerAggregates, v: FeatureValues, now: number): CustomerFeatures {
  return {
    event_id: newEventId(), tenant_id: c.tenantId, occurred_at: now, source: SOURCE, customer_id: c.customerId,
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
    event_id: newEventId(), tenant_id: c.tenantId, occurred_at: now, source: SOURCE, customer_id: c.customerId,
    previous_segment: prev.segment,
    segment: v.segment,
    previous_rfm_score: prev.rfmScore,
    rfm_score: v.rfm_score,
  }
}

/** segment_changes' columns, in the order `segmentChangeRowValues` gives them. */
export const SEGMENT_CHANGE_COLUMNS = ['tenant_id', 'customer_id', 'event_id', 'occurred_at', 'previous_segment', 'segment', 'previous_rfm_score', 'rfm_score'] as const

export function segmentChangeRowValues(e: SegmentChanged): unknown[] {
  return [e.tenant_id, e.customer_id, e.event_id, storedTime(e.occurred_at), e.previous_segment, e.segment, e.previous_rfm_score, e.rfm_score]
}
