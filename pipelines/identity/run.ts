/**
 * The identity resolver of the `features` role: every `intervalMs` it resolves the tenants whose
 * customers changed since their last resolution (resolve.ts), one tenant at a time. A tenant that
 * fails is logged and tried again at the next round.
 */
import type { Runtime } from '../../common/runtime/context.ts'
import type { RunningPipeline } from '../../common/runtime/pipeline.ts'
import { resolveTenant, type TenantResolved } from './resolve.ts'
import { IdentityStore } from './store.ts'

export const IDENTITY_RESOLVER = 'identity-resolver'

export interface RunningIdentity extends RunningPipeline {
  /** One round now (after the one in flight): the tenants resolved. */
  runOnce(): Promise<Map<number, TenantResolved>>
}

/** `onProfilesChanged`: after a tenant's profiles changed (the role drops cached answers of it). */
export function runIdentity(rt: Pick<Runtime, 'store' | 'log' | 'codec' | 'logger'>, opts: { intervalMs: number; now?: () => number; onProfilesChanged?: (tenantId: number) => void }): RunningIdentity {
  const logger = rt.logger.child({ role: IDENTITY_RESOLVER })
  const ids = new IdentityStore(rt.store, opts.now)
  let running = true
  let chain: Promise<unknown> = Promise.resolve()
  const round = async () => {
    const out = new Map<number, TenantResolved>()
    for (const tenant of await ids.tenantsToResolve()) {
      if (!running) break
      try {
        const r = await resolveTenant({ store: rt.store, log: rt.log, codec: rt.codec, logger, now: opts.now }, tenant)
        out.set(tenant, r)
        if (r.reassigned > 0) opts.onProfilesChanged?.(tenant)
      } catch (err) {
        logger.error({ err, tenant_id: tenant }, 'identity resolution failed; retried at the next round')
      }
    }
    return out
  }
  const runOnce = () => {
    const next = chain.then(round)
    chain = next.catch(() => undefined)
    return next
  }
  const timer = setInterval(() => {
    void runOnce().catch((err) => logger.error({ err }, 'identity round failed'))
  }, opts.intervalMs)
  timer.unref()
  logger.info({ interval_ms: opts.intervalMs }, 'identity resolver started')
  return {
    name: IDENTITY_RESOLVER,
    isRunning: () => running,
    runOnce,
    async stop() {
      running = false
      clearInterval(timer)
      await chain
    },
  }
}
