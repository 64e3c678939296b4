import { useCallback, useEffect, useState } from 'preact/hooks'
import { api, type Query } from './api.ts'

export type Loaded<T> = { status: 'loading'; data?: undefined; error?: undefined } | { status: 'ok'; data: T; error?: undefined } | { status: 'error'; data?: undefined; error: Error }

/**
 * One GET of the API, redone when the path or the query changes; `reload` asks again. A newer
 * request aborts the older one, so a slow answer never overwrites a later view.
 */
export function useApi<T>(path: string | null, query: Query = {}): Loaded<T> & { reload(): void } {
  const key = path === null ? null : JSON.stringify([path, query])
  const [state, setState] = useState<Loaded<T>>({ status: 'loading' })
  const [tick, setTick] = useState(0)
  useEffect(() => {
    if (key === null || path === null) return
    const ctl = new AbortController()
    setState({ status: 'loading' })
    api<T>(path, { query, signal: ctl.signal }).then(
      (data) => setState({ status: 'ok', data }),
      (error: Error) => {
        if (!ctl.signal.aborted) setState({ status: 'error', error })
      },
    )
    return () => ctl.abort()
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, tick])
  const reload = useCallback(() => setTick((t) => t + 1), [])
  return { ...state, reload }
}
