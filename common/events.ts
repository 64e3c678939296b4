/**
 * TypeScript shapes of the Avro contracts in schemas/avro. Money is a decimal string with two
 * decimals ("1234.50"), never a float; timestamps are UTC epoch milliseconds.
 */
export interface EventHeader {
  event_id: string
  tenant_id: number
  occurred_at: number
  source: string
}

export interface SourceId {
  source: string
  id: string
}

export interface CustomerUpserted extends EventHeader {
  customer_id: number
  email: string | null
  first_name: string | null
  last_name: string | null
  phone: string | null
  national_id: string | null
  street: string | null
  city: string | null
  province: string | null
  postal_code: string | null
  country: string | null
  registration_source: string | null
  created_at: number | null
  source_ids: SourceId[]
}

/**
 * `credit_note`: a negative adjustment of the customer's spend not tied to an order (a credit
 * note, a goodwill refund); its `order_id` is the credit note's own number and `total` the
 * (negative) amount credited. It lowers net spend, never the number of orders.
 */
export const ORDER_EVENT_TYPES = ['placed', 'status_changed', 'cancelled', 'refunded', 'credit_note'] as const
export type OrderEventType = (typeof ORDER_EVENT_TYPES)[number]

export interface OrderItem {
  sku: string
  name: string | null
  quantity: number
  unit_price: string
}

export interface OrderEvent extends EventHeader {
  event_type: OrderEventType
  order_id: string
  customer_id: number
  status: string
  total: string
  currency: string
  refunded_amount: string | null
  items: OrderItem[]
  placed_at: number
}

export interface CustomerFeatures extends EventHeader {
  customer_id: number
  first_order_at: number | null
  last_order_at: number | null
  order_count: number
  monetary: string
  recency_days: number | null
  r_score: number | null
  f_score: number | null
  m_score: number | null
  rfm_score: string | null
  segment: string | null
  predicted_value: number | null
  total_clv: number | null
  clv_tier: string | null
  p_alive: number | null
  churn_probability: number | null
  churn_risk: string | null
}

export interface SegmentChanged extends EventHeader {
  customer_id: number
  previous_segment: string | null
  segment: string | null
  previous_rfm_score: string | null
  rfm_score: string | null
}

/** A profile (one person) after a merge, a split or its creation (pipelines/identity, profile-changed.avsc). */
export interface ProfileChanged extends EventHeader {
  profile_id: number
  change: 'created' | 'merged' | 'split' | 'absorbed'
  /** Its source customers, oldest first; empty when absorbed. */
  members: number[]
  previous_profile_ids: number[]
  absorbed_into: number | null
}

export interface CustomerDemographics extends EventHeader {
  customer_id: number
  estimated_age: number | null
  estimated_birth_year: number | null
  age_segment: string | null
  generation: string | null
  social_ads_age_range: string | null
  search_ads_age_range: string | null
  gender: string | null
  corrected_city: string | null
  corrected_province: string | null
  corrected_postal_code: string | null
  region: string | null
  location_confidence: number
  location_correction_needed: boolean
  is_location_validated: boolean
  issues: string[]
}

export interface DeadLetter {
  event_id: string
  tenant_id: number | null
  occurred_at: number
  source: string
  original_topic: string
  original_partition: number
  original_offset: string
  original_key: Buffer | null
  original_value: Buffer | null
  reason: string
  step: string
  error_code: string
}

/** Message key of every customer-scoped topic: one customer's events share a partition. */
export function customerKey(tenantId: number, customerId: number): string {
  return `${tenantId}:${customerId}`
}

/** Rank of a life-cycle step, so two events of one order in the same millisecond still order deterministically. */
// A credit note is the only event of its own id: it shares the first rank.
const STEP_RANK: Record<OrderEventType, number> = { placed: 0, status_changed: 1, cancelled: 2, refunded: 3, credit_note: 0 }

/** Version of an order's state: later events win; at equal times, the later life-cycle step wins. */
export function orderVersion(e: Pick<OrderEvent, 'occurred_at' | 'event_type'>): number {
  return e.occurred_at * 4 + STEP_RANK[e.event_type]
}
