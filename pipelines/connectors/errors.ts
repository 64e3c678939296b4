/**
 * Why a sync attempt failed, in the spec's troubleshooting form: `error` (the code, e.g.
 * RATE_LIMIT_EXCEEDED), `solution` (what to do), plus `retry_after` (seconds) for
 * RATE_LIMIT_EXCEEDED and `duration` ("600s") for SYNC_TIMEOUT, and `message` (what happened). Stored with the run, shown as `statistics.last_error`, in health
 * alerts and in the webhook notification. Never holds a secret: messages come from ConnectorError,
 * which names calls, not URLs with credentials.
 */
import { SecretDecryptError } from '../../common/secrets.ts'
import { ConnectorError } from './sources/http.ts'

export interface SyncFailure {
  /** The code: SYNC_TIMEOUT, RATE_LIMIT_EXCEEDED, INVALID_CREDENTIALS, … */
  error: string
  message: string
  solution: string
  retry_after?: number
  duration?: string
  /** Whether another attempt may succeed without anyone changing anything. */
  retriable: boolean
}

/** The attempt ran longer than the limit; its checkpoint stays, the next attempt resumes. */
export class SyncTimeoutError extends Error {
  constructor(readonly limitMs: number) {
    super(`the sync ran longer than ${limitMs / 1000}s`)
  }
}

/** The runner is stopping, or another runner took the job over: leave it for the next claim. */
export class SyncInterruptedError extends Error {}

export const seconds = (ms: number) => `${Math.round(ms / 100) / 10}s`.replace(/\.0s$/, 's')

export function describeFailure(err: unknown): SyncFailure {
  if (err instanceof SyncTimeoutError) {
    return {
      error: 'SYNC_TIMEOUT',
      message: `The sync took longer than ${seconds(err.limitMs)}`,
      solution: 'The next attempt resumes from the last page synced. For a large first sync, narrow date_from/date_to or the entities, or raise the connectors timeout.',
      duration: seconds(err.limitMs),
      retriable: true,
    }
  }
  if (err instanceof SecretDecryptError) {
    return {
      error: 'CREDENTIALS_UNREADABLE',
      message: 'The stored credentials cannot be decrypted with the configured keys',
      solution: 'Put the key the credentials were encrypted with back into CDP_SECRETS_KEYS (rotation keeps old keys until `cdp keys rotate` ran), or update the credentials with PUT.',
      retriable: false,
    }
  }
  if (err instanceof ConnectorError) {
    switch (err.code) {
      case 'RATE_LIMIT_EXCEEDED':
        return {
          error: 'RATE_LIMIT_EXCEEDED',
          message: `Too many calls to the external system (${err.message})`,
          solution: `The sync retries by itself after retry_after seconds and resumes where it stopped. If it happens often, sync less often (sync_interval) or with a smaller batch_size.`,
          retry_after: err.retryAfterSec ?? 60,
          retriable: true,
        }
      case 'INVALID_CREDENTIALS':
        return {
          error: 'INVALID_CREDENTIALS',
          message: `The external system rejected the stored credentials (${err.message})`,
          solution: 'Update the credentials with PUT /api/v2/tenant-integrations/{integrationId} (they are verified before they are saved), then sync again.',
          retriable: false,
        }
      case 'FORBIDDEN':
        return {
          error: 'PERMISSION_DENIED',
          message: `The credentials lack a permission (${err.message})`,
          solution: 'Grant the app key or application access to the APIs it syncs (catalog, orders, master data), or turn off the entity in the configuration.',
          retriable: false,
        }
      case 'UNAVAILABLE':
        return {
          error: 'SOURCE_UNAVAILABLE',
          message: `The external system did not answer (${err.message})`,
          solution: 'The sync retries by itself; check the platform status page if it keeps failing.',
          retriable: true,
        }
      default:
        return {
          error: 'SOURCE_ERROR',
          message: `The external system answered unexpectedly (${err.message})`,
          solution: 'Check the platform API version in the configuration (api_version); report it if it persists.',
          retriable: false,
        }
    }
  }
  return {
    error: 'SYNC_FAILED',
    message: `The sync failed: ${(err as Error)?.message ?? String(err)}`,
    solution: 'The sync retries by itself; the connectors role logs the cause.',
    retriable: true,
  }
}

/** The stored form (no `retriable`). */
export function failureBody(f: SyncFailure): Omit<SyncFailure, 'retriable'> {
  const { retriable: _r, ...body } = f
  return body
}
