import type { SegmentChanged } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { ok, type PipelineDefinition } from '../../common/runtime/pipeline.ts'
import { decodeRecord } from '../ingest/index.ts'
import type { AudienceSyncStore } from './store.ts'

export const AUDIENCE_SYNC_GROUP = 'cdp-audience-sync'

/**
 * cdp.segment-changes.v1 → the latest segment of every customer (audience_customer_segments),
 * from the first offset, so a configuration created later starts from the segment's full
 * membership. The uploads are made by the syncer from this state; the offsets are committed once
 * it is written, so nothing is lost and a redelivery writes the same version again.
 */
export function segmentChangesPipeline(store: AudienceSyncStore, name = AUDIENCE_SYNC_GROUP): PipelineDefinition<SegmentChanged> {
  return {
    name,
    topics: [TOPICS.segmentChanges.name],
    async process(record, codec) {
      const r = await decodeRecord<SegmentChanged>(record, codec)
      return r.kind === 'ok' ? ok(r.value) : r
    },
    async sink(items) {
      await store.recordSegments(items.map(({ value: e }) => ({ tenant_id: e.tenant_id, customer_id: e.customer_id, segment: e.segment, version: e.occurred_at })))
    },
  }
}
