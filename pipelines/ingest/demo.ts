import fs from 'node:fs'
import path from 'node:path'
import type { Runtime } from '../../common/runtime/context.ts'
import type { Logger } from '../../common/logger.ts'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { generateEvents, type GeneratedEvent } from './synthetic/generate.ts'
import { publishEvents } from './publisher.ts'

export const DEMO_TENANT = 1

/**
 * `cdp start --demo`: a demo tenant (2,000 customers, two years of orders) streamed into the log
 * in small batches at a few thousand events per second, so data visibly arrives within seconds.
 * Deterministic and idempotent: the seed is fixed and the time window is anchored on the first
 * demo run of this data directory (data/demo.json), so a restart regenerates the same events
 * with the same ids, which the projections collapse instead of counting twice.
 */
export function streamDemoTenant(rt: Runtime, logger: Logger, opts: { customers?: number; eventsPerSecond?: number } = {}) {
  let cancelled = false
  const perSecond = opts.eventsPerSecond ?? 5000
  const { start, end } = demoWindow(rt.config.dataDir)
  const done = (async () => {
    const gen = generateEvents({ tenantId: DEMO_TENANT, customers: opts.customers ?? 2000, seed: 'demo', start, end })
    let batch: GeneratedEvent[] = []
    let sent = 0
    const flush = async () => {
      const customers = batch.filter((e) => e.topic === 'customers').map((e) => e.value as CustomerUpserted)
      const orders = batch.filter((e) => e.topic === 'orders').map((e) => e.value as OrderEvent)
      // Customers first, so a profile is in the log before its orders.
      await publishEvents(rt.log, rt.codec, 'customers', customers)
      await publishEvents(rt.log, rt.codec, 'orders', orders)
      sent += batch.length
      batch = []
      await new Promise((r) => setTimeout(r, (500 * 1000) / perSecond))
    }
    logger.info({ tenant: DEMO_TENANT }, 'demo: streaming a synthetic tenant')
    for (const e of gen) {
      if (cancelled) break
      batch.push(e)
      if (batch.length >= 500) await flush()
      if (sent % 10_000 === 0 && sent > 0 && batch.length === 0) logger.info({ tenant: DEMO_TENANT, events: sent }, 'demo: events streamed')
    }
    if (!cancelled && batch.length) await flush()
    logger.info({ tenant: DEMO_TENANT, events: sent }, cancelled ? 'demo: stopped' : 'demo: all events streamed')
  })()
  done.catch((err) => logger.error({ err }, 'demo: streaming failed'))
  return {
    done,
    cancel: () => {
      cancelled = true
    },
  }
}

/** Two years up to the day of the first demo run in `dataDir`, remembered there. */
export function demoWindow(dataDir: string, today = new Date()): { start: Date; end: Date } {
  const file = path.join(dataDir, 'demo.json')
  let endMs: number
  try {
    endMs = Number((JSON.parse(fs.readFileSync(file, 'utf8')) as { end: number }).end)
  } catch {
    endMs = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate())
    fs.mkdirSync(dataDir, { recursive: true })
    fs.writeFileSync(file, JSON.stringify({ end: endMs }))
  }
  return { start: new Date(endMs - 730 * 86_400_000), end: new Date(endMs) }
}
