import { randomUUID } from 'node:crypto'
import type { Runtime } from '../../common/runtime/context.ts'
import type { DeadLetter } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { DLQ_HEADERS, runPipeline, type RunningPipeline } from '../../common/runtime/pipeline.ts'
import type { SecretBox } from '../../common/secrets.ts'
import { AudienceSyncStore } from './store.ts'
import { segmentChangesPipeline, AUDIENCE_SYNC_GROUP } from './consumer.ts'
import { AudienceSyncer } from './syncer.ts'
import { syncCycles } from './metrics.ts'

export interface AudienceSyncSettings {
  baseUrl: string
  version: string
  appAccessToken: string
  settleMs: number
  pacingMs: number
  statusIntervalMs: number
}

export interface RunningAudienceSync extends RunningPipeline {
  syncer: AudienceSyncer
  /** Runs one sync cycle now (tests, and after a configuration changes). */
  cycle(): Promise<number>
}

/**
 * The audience-sync role: the segment-changes consumer, the sync loop (every half coalescing
 * window, at least every second) and the status poller. Stop: the loop finishes the batch in
 * hand, the consumer drains and commits.
 */
export async function runAudienceSync(rt: Runtime, secrets: SecretBox, s: AudienceSyncSettings): Promise<RunningAudienceSync> {
  const logger = rt.logger.child({ role: 'audience-sync' })
  const store = new AudienceSyncStore(rt.store, secrets)
  const consumer = await runPipeline(segmentChangesPipeline(store, rt.config.consumerGroupPrefix + AUDIENCE_SYNC_GROUP), {
    log: rt.log,
    codec: rt.codec,
    logger: rt.logger,
    maxBatch: rt.config.batchSize,
    fromBeginning: true,
  })
  const syncer = new AudienceSyncer({
    store,
    logger,
    ads: { baseUrl: s.baseUrl, version: s.version, appAccessToken: s.appAccessToken },
    settleMs: s.settleMs,
    pacingMs: s.pacingMs,
    deadLetter: async (c, batch, err) => {
      const now = Date.now()
      const envelope: DeadLetter = {
        event_id: randomUUID(),
        tenant_id: c.tenant_id,
        occurred_at: now,
        source: 'audience-sync',
        original_topic: `ads:/${c.audience_id ?? ''}/users`,
        original_partition: -1,
        original_offset: '-1',
        original_key: Buffer.from(`${c.tenant_id}:${c.config_id}`),
        // The hashed rows only: never an identifier in clear.
        original_value: Buffer.from(JSON.stringify(batch)),
        reason: err.message,
        step: `audience-sync.${batch.operation}`,
        error_code: `ads_${err.code ?? err.name}`,
      }
      await rt.log.send(TOPICS.deadLetter.name, [
        {
          key: envelope.original_key,
          value: await rt.codec.encode(TOPICS.deadLetter.name, envelope),
          headers: { [DLQ_HEADERS.reason]: envelope.reason, [DLQ_HEADERS.step]: envelope.step, [DLQ_HEADERS.code]: envelope.error_code, [DLQ_HEADERS.time]: new Date(now).toISOString(), [DLQ_HEADERS.pipeline]: 'audience-sync' },
        },
      ])
    },
  })

  const abort = new AbortController()
  let running: Promise<unknown> = Promise.resolve()
  const cycle = () => {
    const next = running.then(async () => {
      const end = syncCycles.startTimer()
      try {
        return await syncer.cycle(abort.signal)
      } finally {
        end()
      }
    })
    running = next.catch(() => undefined)
    return next
  }
  const every = (ms: number, fn: () => Promise<unknown>, what: string) => {
    let timer: NodeJS.Timeout | null = null
    const loop = async () => {
      try {
        await fn()
      } catch (err) {
        logger.error({ err }, `${what} failed`)
      }
      if (!abort.signal.aborted) timer = setTimeout(loop, ms)
    }
    timer = setTimeout(loop, ms)
    return () => timer && clearTimeout(timer)
  }
  const stopCycle = every(Math.max(1000, Math.floor(s.settleMs / 2)), cycle, 'audience sync cycle')
  const stopStatus = every(s.statusIntervalMs, () => (running = running.then(() => syncer.pollStatus()).catch(() => undefined)), 'audience status poll')
  logger.info({ baseUrl: s.baseUrl, version: s.version, settleMs: s.settleMs, pacingMs: s.pacingMs }, 'audience sync started')

  return {
    name: 'audience-sync',
    syncer,
    cycle,
    isRunning: () => consumer.isRunning() && !abort.signal.aborted,
    async stop() {
      abort.abort()
      stopCycle()
      stopStatus()
      await running
      await syncer.release()
      await consumer.stop()
    },
  }
}
