import type { ComponentChildren } from 'preact'
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

/** Loading, error (with a retry) or the content for the data. */
export function Show<T>({ value, children, what }: { value: Loaded<T> & { reload(): void }; children: (data: T) => ComponentChildren; what?: string }) {
  if (value.status === 'loading') return <Loading what={what} />
  if (value.status === 'error') return <ErrorBox error={value.error} retry={value.reload} />
  return <>{children(value.data)}</>
}
