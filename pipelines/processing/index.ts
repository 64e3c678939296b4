/**
 * The processing lane's public surface: the service behind POST/GET/DELETE /api/v2/cdp/process/*
 * (its router is services/api/process-routes.ts), its scheduler and its cache hooks. See docs/processing.md.
 */
export type { ProcessingDeps } from './deps.ts'
export { DEFAULT_LEASE_MS, DEFAULT_HEARTBEAT_MS, DEFAULT_CACHE_TTL_MS, DEFAULT_STALE_AFTER_MS } from './deps.ts'
export { startProcessingScheduler, DEFAULT_SCHEDULER_POLL_MS, type ProcessingScheduler, type SchedulerOptions } from './scheduler.ts'
export { ProcessingEvents, processingEvents, onTenantProcessed, type TenantProcessed, type CacheInvalidated } from './events.ts'
export { invalidateProcessingResults, invalidateProcessingResults as invalidate } from './results-cache.ts'
export { ProcessingService } from './service.ts'
export type { StatusObject, TenantProcessingStatus } from './status.ts'
export { JobCancelledError, ShutdownError } from './job-runner.ts'
