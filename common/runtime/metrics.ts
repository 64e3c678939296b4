import fs from 'node:fs'
import client from 'prom-client'

/**
 * One Prometheus registry per process; every role registers its metrics here. Node's default
 * metrics keep their standard names (process_cpu_seconds_total, nodejs_eventloop_lag_seconds, …)
 * so stock Node.js dashboards work; ours start with cdp_.
 */
export const registry = new client.Registry()
client.collectDefaultMetrics({ register: registry })

/** The running build: version and Node.js, always 1 (`cdp_build_info{version="0.1.0",node="v20.20.2"} 1`). */
export const buildInfo = new client.Gauge({ name: 'cdp_build_info', help: 'The running build: package version and Node.js version', labelNames: ['version', 'node'] as const, registers: [registry] })
buildInfo.set({ version: process.env.npm_package_version ?? packageVersion(), node: process.version }, 1)

function packageVersion(): string {
  try {
    return (JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
  } catch {
    return 'unknown'
  }
}

export const recordsProcessed = new client.Counter({
  name: 'cdp_records_processed_total',
  help: 'Records a pipeline consumed and handled (written, dropped or dead-lettered).',
  labelNames: ['pipeline', 'topic'] as const,
  registers: [registry],
})

export const decodedOffMain = new client.Counter({
  name: 'cdp_records_decoded_off_main_total',
  help: "Records a pipeline's decode thread decoded, checked and encoded (the rest of its records are decoded on the main thread).",
  labelNames: ['pipeline'] as const,
  registers: [registry],
})

export const deadLetters = new client.Counter({
  name: 'cdp_dead_letters_total',
  help: 'Records sent to the dead-letter topic, by reason code.',
  labelNames: ['pipeline', 'topic', 'code'] as const,
  registers: [registry],
})

export const consumerLag = new client.Gauge({
  name: 'cdp_consumer_lag',
  help: 'Records between the last handled offset and the end of the partition.',
  labelNames: ['pipeline', 'topic', 'partition'] as const,
  registers: [registry],
})

export const recordsPerSecond = new client.Gauge({
  name: 'cdp_records_per_second',
  help: 'Records handled per second over the last 10 seconds.',
  labelNames: ['pipeline'] as const,
  registers: [registry],
})

export const batchDuration = new client.Histogram({
  name: 'cdp_batch_duration_seconds',
  help: 'Time to handle one batch, sink write included.',
  labelNames: ['pipeline'] as const,
  buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
})

export const eventsIngested = new client.Counter({
  name: 'cdp_events_ingested_total',
  help: 'Events accepted into the log by the ingest endpoint and importer.',
  labelNames: ['kind', 'source'] as const,
  registers: [registry],
})

/** Sliding 10 s window of handled-record counts, feeding cdp_records_per_second. */
export class RateMeter {
  private readonly samples: { t: number; n: number }[] = []
  constructor(private readonly windowMs = 10_000, private readonly now: () => number = Date.now) {}
  add(n: number): number {
    const t = this.now()
    this.samples.push({ t, n })
    while (this.samples.length && this.samples[0]!.t < t - this.windowMs) this.samples.shift()
    return this.rate()
  }
  rate(): number {
    if (this.samples.length === 0) return 0
    const total = this.samples.reduce((s, x) => s + x.n, 0)
    const span = Math.max(1000, this.now() - this.samples[0]!.t)
    return (total * 1000) / span
  }
}
