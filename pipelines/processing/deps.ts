import { claimantId } from '../../common/jobs/lease.ts'
import type { Logger } from '../../common/logger.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import type { ProcessingEngine } from '../features/index.ts'
import { checkHeartbeat } from '../../common/jobs/lease.ts'
import { processingEvents, type ProcessingEvents } from './events.ts'

/** What the processing API, its job runner and its scheduler need. Only store, engine and logger are required. */
export interface ProcessingDeps {
  store: Store
  engine: ProcessingEngine
  logger: Logger
  /** Names this replica in job rows. Default `<hostname>:<pid>`: the router and the scheduler of one process share it. */
  replicaId?: string
  /** Epoch ms. Drives claim times, the lease, cache age, staleness and schedules (not timers or durations). */
  now?: () => number
  /** A claim whose heartbeat is older than this is dead (its replica crashed). Default 30 s. */
  leaseMs?: number
  /** How often a job refreshes its heartbeat and looks for a cancel mark; also the queue poll. Default 5 s. */
  heartbeatMs?: number
  /** How long a processed result is served without recomputing. Default 1 h (spec "Processing results cache"). */
  cacheTtlMs?: number
  /** `is_stale` once the last successful run is older than this. Default 24 h. */
  staleAfterMs?: number
  /** How long DELETE .../cancel waits for a job of this replica to stop before answering `cancelling`. Default 10 s. */
  cancelWaitMs?: number
  /** Where "tenant processed" and "cache invalidated" are announced. Default: the process-wide hub. */
  events?: ProcessingEvents
}

export type ResolvedDeps = Required<ProcessingDeps>

export const DEFAULT_LEASE_MS = 30_000
export const DEFAULT_HEARTBEAT_MS = 5_000
export const DEFAULT_CACHE_TTL_MS = 60 * 60_000
export const DEFAULT_STALE_AFTER_MS = 24 * 60 * 60_000
export const DEFAULT_CANCEL_WAIT_MS = 10_000

export function defaultReplicaId(): string {
  return claimantId()
}

export function resolveDeps(deps: ProcessingDeps): ResolvedDeps {
  const r: ResolvedDeps = {
    store: deps.store,
    engine: deps.engine,
    logger: deps.logger,
    replicaId: deps.replicaId ?? defaultReplicaId(),
    now: deps.now ?? Date.now,
    leaseMs: deps.leaseMs ?? DEFAULT_LEASE_MS,
    heartbeatMs: deps.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    cacheTtlMs: deps.cacheTtlMs ?? DEFAULT_CACHE_TTL_MS,
    staleAfterMs: deps.staleAfterMs ?? DEFAULT_STALE_AFTER_MS,
    cancelWaitMs: deps.cancelWaitMs ?? DEFAULT_CANCEL_WAIT_MS,
    events: deps.events ?? processingEvents,
  }
  checkHeartbeat(r.heartbeatMs, r.leaseMs)
  return r
}
