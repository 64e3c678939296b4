/** The topics of the pipeline and the Avro contract each carries (subject `<topic>-value`). */
export interface TopicSpec {
  name: string
  /** File under schemas/avro. */
  schema: string
  /** Log-compacted: only the latest value per key matters. */
  compacted: boolean
}

export const TOPICS = {
  customers: { name: 'cdp.customers.v1', schema: 'customer-upserted.avsc', compacted: false },
  orders: { name: 'cdp.orders.v1', schema: 'order-event.avsc', compacted: false },
  customerFeatures: { name: 'cdp.customer-features.v1', schema: 'customer-features.avsc', compacted: true },
  segmentChanges: { name: 'cdp.segment-changes.v1', schema: 'segment-changed.avsc', compacted: false },
  customerDemographics: { name: 'cdp.customer-demographics.v1', schema: 'customer-demographics.avsc', compacted: true },
  profileChanges: { name: 'cdp.profile-changes.v1', schema: 'profile-changed.avsc', compacted: true },
  deadLetter: { name: 'cdp.dead-letter.v1', schema: 'dead-letter.avsc', compacted: false },
} as const satisfies Record<string, TopicSpec>

export type TopicName = (typeof TOPICS)[keyof typeof TOPICS]['name']

export const ALL_TOPICS: TopicSpec[] = Object.values(TOPICS)

export function subjectFor(topic: string): string {
  return `${topic}-value`
}
