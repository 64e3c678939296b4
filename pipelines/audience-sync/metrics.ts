import client from 'prom-client'
import { registry } from '../../common/runtime/metrics.ts'

/** Uploads and error outcomes of the audience sync, by event (upload_add, upload_remove, or an error class name). */
export const auditEvents = new client.Counter({
  name: 'cdp_audience_sync_events_total',
  help: 'Audience sync uploads (upload_add, upload_remove) and failures by error class.',
  labelNames: ['event'] as const,
  registers: [registry],
})

export const syncCycles = new client.Histogram({
  name: 'cdp_audience_sync_cycle_seconds',
  help: 'Duration of one audience sync cycle over every active configuration.',
  buckets: [0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
  registers: [registry],
})
