import type { Store } from '../../../common/store/clickhouse.ts'
import type { Logger } from '../../../common/logger.ts'
import { TenantSettingsStore } from '../../../common/store/tenant-settings.ts'
import { resolveReference, type Reference, type ReferenceSetting } from '../../../common/reference-date.ts'
import type { Analysis, ProcessingEngine } from '../../../pipelines/features/analyses.ts'
import { ANALYSES } from '../../../pipelines/features/analyses.ts'
import { lruCache } from '../../../common/lru.ts'

/**
 * The reference date of an analytics request (docs/features.md, "Reference date"): the tenant's
 * setting (cached a few seconds; a settings change drops the entry), or one request's `as_of`.
 */
export class ReferenceSource {
  private readonly cache
  private readonly settings: TenantSettingsStore

  constructor(
    store: Store,
    private readonly now: () => number = Date.now,
    ttlMs = 5_000,
  ) {
    this.settings = new TenantSettingsStore(store, now)
    // Stale-while-revalidate: reading the data's end scans the tenant's orders (hundreds of ms at
    // ten million), so an expired entry is answered at once while one reload runs.
    this.cache = lruCache<number, Reference>({ max: 10_000, ttlMs, now, load: (tenantId) => this.settings.reference(tenantId, this.now()) })
  }

  async reference(tenantId: number, asOf?: string): Promise<Reference> {
    const wallMs = this.now()
    if (asOf) return resolveReference(asOf as ReferenceSetting, { wallMs, dataEndMs: null }, 'as_of')
    const ref = (await this.cache.fetch(tenantId))!
    return ref.setting === 'now' ? { ...ref, ms: wallMs } : ref
  }

  invalidate(tenantId: number): void {
    this.cache.delete(tenantId)
  }
}

/**
 * Feature rows as of one date for `as_of` requests: computed once by the processing engine into
 * `customer_features_as_of` and reused for SNAPSHOT_TTL_MS (a later order dated before that day
 * shows after it expires, or at once after a processing run of the tenant).
 */
export const SNAPSHOT_TTL_MS = 10 * 60_000

export class AsOfSnapshots {
  /** By `tenant:date`; at most a few dozen dates are worth keeping (each is a tenant's full rows). */
  private readonly made

  /** One computation at a time: each is a full recompute of a tenant. */
  private queue: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly engine: Pick<ProcessingEngine, 'runAsOf'>,
    private readonly logger: Logger,
    now: () => number = Date.now,
  ) {
    this.made = lruCache<string, Promise<void>>({ max: 64, ttlMs: SNAPSHOT_TTL_MS, now })
  }

  ensure(tenantId: number, asOf: string): Promise<void> {
    const key = `${tenantId}:${asOf}`
    const hit = this.made.get(key)
    if (hit) return hit
    if (!this.engine.runAsOf) return Promise.reject(new Error('this engine cannot compute as of another date'))
    const runAsOf = this.engine.runAsOf.bind(this.engine)
    const done = this.queue.then(async () => {
      const started = performance.now()
      await runAsOf(tenantId, asOf, [...ANALYSES] as Analysis[])
      this.logger.info({ tenantId, asOf, ms: Math.round(performance.now() - started) }, 'as-of features computed')
    })
    this.queue = done.catch(() => undefined)
    this.made.set(key, done)
    done.catch(() => this.made.delete(key))
    return done
  }

  invalidateTenant(tenantId: number): void {
    for (const k of [...this.made.keys()]) if (k.startsWith(`${tenantId}:`)) this.made.delete(k)
  }
}

// `customer_features [AS f] FINAL` in an endpoint's SQL; not `customer_features_as_of`, not without FINAL.
const FEATURES_FROM = /\bcustomer_features(\s+AS\s+f)?\s+FINAL\b/g

/**
 * The store an `as_of` request runs its endpoint on: the same SQL, with every read of the
 * tenant's feature rows (`customer_features [AS f] FINAL`) reading that date's rows of
 * `customer_features_as_of` instead. Every such query of the analytics binds `{tenant_id}`.
 */
export function asOfStore(store: Store, asOf: string): Store {
  const sub = '(SELECT * FROM customer_features_as_of FINAL WHERE tenant_id = {tenant_id:UInt64} AND as_of = {as_of_date:Date} AND is_deleted = 0)'
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop !== 'query') return Reflect.get(target, prop, receiver)
      return (params: Parameters<Store['query']>[0]) =>
        target.query({
          ...params,
          query: params.query.replace(FEATURES_FROM, (_m, alias: string | undefined) => `${sub}${alias ?? ''}`),
          query_params: { ...(params.query_params ?? {}), as_of_date: asOf },
        } as never)
    },
  })
}
