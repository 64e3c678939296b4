import { EventEmitter } from 'node:events'
import type { Analysis, ProcessingResults } from '../features/index.ts'

export interface TenantProcessed {
  tenantId: number
  jobId: string
  replicaId: string
  analyses: Analysis[]
  results: ProcessingResults
  /** Epoch ms (the injectable clock). */
  finishedAt: number
}

export interface CacheInvalidated {
  tenantId: number
  /** Epoch ms. */
  at: number
}

/**
 * In-process announcements of the processing service, so other caches (the analytics service)
 * can drop a tenant when it is reprocessed. Listeners run synchronously; one that throws is
 * isolated from the others and from the job.
 */
export class ProcessingEvents {
  readonly #emitter = new EventEmitter()

  constructor() {
    this.#emitter.setMaxListeners(0)
  }

  /** Called after a run finished successfully (not for results served from the cache). Returns an unsubscribe. */
  onTenantProcessed(listener: (e: TenantProcessed) => void): () => void {
    return this.#on('processed', listener)
  }

  /** Called when a tenant's cached results are dropped: a new run started, or `invalidateProcessingResults`. */
  onCacheInvalidated(listener: (e: CacheInvalidated) => void): () => void {
    return this.#on('invalidated', listener)
  }

  emitTenantProcessed(e: TenantProcessed): void {
    this.#emit('processed', e)
  }

  emitCacheInvalidated(e: CacheInvalidated): void {
    this.#emit('invalidated', e)
  }

  #on<T>(name: string, listener: (e: T) => void): () => void {
    const wrapped = (e: T) => {
      try {
        listener(e)
      } catch {
        // A subscriber's bug must not fail a processing job.
      }
    }
    this.#emitter.on(name, wrapped)
    return () => void this.#emitter.off(name, wrapped)
  }

  #emit(name: string, e: unknown): void {
    this.#emitter.emit(name, e)
  }
}

/** The process-wide hub, used unless ProcessingDeps.events names another. */
export const processingEvents = new ProcessingEvents()

/** Subscribe to "tenant processed" on the process-wide hub. Returns an unsubscribe. */
export function onTenantProcessed(listener: (e: TenantProcessed) => void): () => void {
  return processingEvents.onTenantProcessed(listener)
}
