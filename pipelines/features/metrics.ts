import client from 'prom-client'
import { registry } from '../../common/runtime/metrics.ts'

export const segmentChangesEmitted = new client.Counter({
  name: 'cdp_segment_changes_total',
  help: 'Segment changes published on cdp.segment-changes.v1, by new segment.',
  labelNames: ['pipeline', 'to'] as const,
  registers: [registry],
})

export const featureTicks = new client.Histogram({
  name: 'cdp_feature_tick_seconds',
  help: 'Duration of a feature tick (model refresh, rescoring, snapshot).',
  buckets: [0.01, 0.1, 0.5, 1, 5, 10, 30, 60],
  registers: [registry],
})

export const modelRefreshes = new client.Counter({
  name: 'cdp_feature_model_refreshes_total',
  help: 'Tenant model refreshes due at a tick: refreshed here, or claimed by another consumer of the group for the interval.',
  labelNames: ['pipeline', 'outcome'] as const,
  registers: [registry],
})
