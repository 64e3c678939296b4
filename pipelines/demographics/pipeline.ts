import type { CustomerDemographics, CustomerUpserted } from '../../common/events.ts'
import { customerKey } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { iso } from '../../common/time.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { drop, ok, type PipelineDefinition, type StepResult } from '../../common/runtime/pipeline.ts'
import { decodeInputEvent, deriveEventId } from '../ingest/index.ts'
import { enrichDemographics, type Demographics, type ReferenceData } from './enrich.ts'
import { defaultReference } from './reference.ts'

export const DEMOGRAPHICS_GROUP = 'cdp-demographics'

export interface Enriched {
  customer: CustomerUpserted
  demographics: Demographics
}

/** The stored row of `customer_demographics` (005_demographics.sql). The national id itself is not stored here. */
export function demographicsRow(e: Enriched, enrichedAt: number) {
  const d = e.demographics
  return {
    tenant_id: e.customer.tenant_id,
    customer_id: e.customer.customer_id,
    version: e.customer.occurred_at,
    national_id_type: d.national_id_type,
    estimated_birth_year: d.estimated_birth_year,
    estimated_age: d.estimated_age,
    age_segment: d.age_segment,
    generation: d.generation,
    social_ads_age_range: d.social_ads_age_range,
    search_ads_age_range: d.search_ads_age_range,
    gender: d.gender,
    gender_source: d.gender_source,
    corrected_city: d.corrected_city,
    corrected_province: d.corrected_province,
    corrected_postal_code: d.corrected_postal_code,
    region: d.region,
    location_confidence: d.location_confidence,
    location_correction_needed: d.location_correction_needed ? 1 : 0,
    is_location_validated: d.is_location_validated ? 1 : 0,
    issues: d.issues,
    enriched_at: iso(enrichedAt),
  }
}

/** The event published on cdp.customer-demographics.v1; its id follows from the customer event's, so a redelivery republishes the same id. */
export function demographicsEvent(e: Enriched): CustomerDemographics {
  const c = e.customer
  const d = e.demographics
  return {
    event_id: deriveEventId(['demographics', c.event_id]),
    tenant_id: c.tenant_id,
    occurred_at: c.occurred_at,
    source: 'cdp.demographics',
    customer_id: c.customer_id,
    estimated_age: d.estimated_age,
    estimated_birth_year: d.estimated_birth_year,
    age_segment: d.age_segment,
    generation: d.generation,
    social_ads_age_range: d.social_ads_age_range,
    search_ads_age_range: d.search_ads_age_range,
    gender: d.gender,
    corrected_city: d.corrected_city,
    corrected_province: d.corrected_province,
    corrected_postal_code: d.corrected_postal_code,
    region: d.region,
    location_confidence: d.location_confidence,
    location_correction_needed: d.location_correction_needed,
    is_location_validated: d.is_location_validated,
    issues: d.issues,
  }
}

/**
 * cdp.customers.v1 → demographic enrichment → `customer_demographics` and
 * cdp.customer-demographics.v1. Enrichment never rejects a customer: a field it cannot read
 * leaves its derived fields null with the reason in `issues` (the customer itself is projected
 * by the projection pipeline either way). Invalid events are dead-lettered by the projection
 * pipeline, which reads the same topic; here they are dropped so one bad record is reported once.
 * Per batch: publish, then write, then commit (at least once; the row's version and the event id
 * make a redelivery harmless).
 */
export function demographicsPipeline(deps: { store: Store; log: EventLog; codec: EventCodec; now?: () => number; reference?: ReferenceData; name?: string }): PipelineDefinition<Enriched> {
  const now = deps.now ?? Date.now
  const reference = deps.reference ?? defaultReference()
  return {
    name: deps.name ?? DEMOGRAPHICS_GROUP,
    topics: [TOPICS.customers.name],
    async process(record, codec): Promise<StepResult<Enriched>> {
      const r = await decodeInputEvent(record, codec, now())
      if (r.kind !== 'ok') return drop(r.kind === 'dlq' ? `invalid customer event (dead-lettered by the projection): ${r.reason}` : r.reason)
      if (r.value.kind !== 'customer') return drop('not a customer event')
      const c = r.value.event
      const demographics = enrichDemographics({ national_id: c.national_id, first_name: c.first_name, city: c.city, province: c.province, postal_code: c.postal_code }, new Date(now()), reference)
      return ok({ customer: c, demographics })
    },
    async sink(items) {
      if (!items.length) return
      const at = now()
      const values = items.map((i) => i.value)
      const records = await Promise.all(
        values.map(async (e) => ({ key: customerKey(e.customer.tenant_id, e.customer.customer_id), value: await deps.codec.encode(TOPICS.customerDemographics.name, demographicsEvent(e)) })),
      )
      await deps.log.send(TOPICS.customerDemographics.name, records)
      await deps.store.insert({ table: 'customer_demographics', values: values.map((e) => demographicsRow(e, at)), format: 'JSONEachRow' })
    },
  }
}
