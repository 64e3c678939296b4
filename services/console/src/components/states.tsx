import type { ComponentChildren } from 'preact'
import { ApiError } from '../api.ts'
import type { Loaded } from '../use-api.ts'

export const Loading = ({ what = 'Loading' }: { what?: string }) => (
  <p class="state loading" role="status" aria-live="polite">
    {what}…
  </p>
)

export const Empty = ({ children }: { children: ComponentChildren }) => <p class="state empty">{children}</p>

export const ErrorBox = ({ error, retry }: { error: Error; retry?: () => void }) => (
  <div class="state error" role="alert">
    <p>{error.message}</p>
    {retry && (
      <button type="button" onClick={retry}>
        Try again
      </button>
    )}
  </div>
)

/**
 * Loading, error (with a retry) or the content for the data. A tenant without data yet (the
 * API's 404 for the tenant, or 204 with no body) is an empty state, not an error.
 */
export function Show<T>({ value, children, what, empty = 'No data yet: this tenant has no scored customers for this view.' }: { value: Loaded<T> & { reload(): void }; children: (data: T) => ComponentChildren; what?: string; empty?: string }) {
  if (value.status === 'loading') return <Loading what={what} />
  if (value.status === 'error') {
    if (value.error instanceof ApiError && (value.error.status === 404 || value.error.status === 400) && /tenant not found/i.test(value.error.message)) return <Empty>{empty}</Empty>
    return <ErrorBox error={value.error} retry={value.reload} />
  }
  if (value.data === undefined || value.data === null) return <Empty>{empty}</Empty>
  return <>{children(value.data)}</>
}
