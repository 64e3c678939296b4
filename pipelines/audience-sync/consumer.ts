import type { ProfileChanged, SegmentChanged } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { ok, type PipelineDefinition } from '../../common/runtime/pipeline.ts'
import { decodeRecord } from '../ingest/index.ts'
import type { AudienceSyncStore } from './store.ts'

export const AUDIENCE_SYNC_GROUP = 'cdp-audience-sync'

/**
 * cdp.segment-changes.v1 → the latest segment of every customer (audience_customer_segments),
 * from the first offset, so a configuration created later starts from the segment's full
 * membership; cdp.profile-changes.v1 → when each profile's membership changed
 * (audience_profile_changes), so its row is uploaded again with the profile's identifiers. An
 * absorbed profile needs nothing here: its segment change to none removes it. The uploads are made
 * by the syncer from this state; the offsets are committed once it is written, so nothing is lost
 * and a redelivery writes the same version again.
 */
export function segmentChangesPipeline(store: AudienceSyncStore, name = AUDIENCE_SYNC_GROUP): PipelineDefinition<SegmentChanged | ProfileChanged> {
  return {
    name,
    topics: [TOPICS.segmentChanges.name, TOPICS.profileChanges.name],
    async process(record, codec) {
      const r = await decodeRecord<SegmentChanged | ProfileChanged>(record, codec)
      return r.kind === 'ok' ? ok(r.value) : r
    },
    async sink(items) {
      const segments: SegmentChanged[] = []
      const profiles: ProfileChanged[] = []
      for (const { record, value } of items) {
        if (record.topic === TOPICS.profileChanges.name) profiles.push(value as ProfileChanged)
        else segments.push(value as SegmentChanged)
      }
      await Promise.all([
        store.recordSegments(segments.map((e) => ({ tenant_id: e.tenant_id, customer_id: e.customer_id, segment: e.segment, version: e.occurred_at }))),
        store.recordProfileChanges(profiles.filter((e) => e.members.length > 0).map((e) => ({ tenant_id: e.tenant_id, profile_id: e.profile_id }))),
      ])
    },
  }
}
