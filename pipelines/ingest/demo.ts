import type { Runtime } from '../../common/runtime/context.ts'
import type { Logger } from '../../common/logger.ts'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { generateEvents, type GeneratedEvent } from './synthetic/generate.ts'
import { publishEvents } from './publisher.ts'

export const DEMO_TENANT = 1

/**
 * `cdp start --demo`: a demo tenant (2,000 customers, two years of orders) streamed into the log
 * in small batches at a few thousand events per second, so data visibly arrives within seconds.
 * Deterministic (fixed seed) and idempotent: the same event ids every time, so restarting the
 * demo never double counts.
 */
export function streamDemoTenant(rt: Runtime, logger: Logger, opts: { customers?: number; eventsPerSecond?: number } = {}) {
  let cancelled = false
  const perSecond = opts.eventsPerSecond ?? 5000
  const end = new Date()
  const start = new Date(end.getTime() - 730 * 86_400_000)
  start.setUTCHours(0, 0, 0, 0)
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
