import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { api, type Query } from './api.ts'

export type Loaded<T> = { status: 'loading'; data?: undefined; error?: undefined } | { status: 'ok'; data: T; error?: undefined } | { status: 'error'; data?: undefined; error: Error }

/**
 * One GET of the API, redone when the path or the query changes; `reload` asks again and keeps
 * showing the answer in hand until the new one arrives (`refreshing`). A newer request aborts
 * the older one, so a slow answer never overwrites a later view.
 */
export function useApi<T>(path: string | null, query: Query = {}): Loaded<T> & { reload(): void; refreshing: boolean } {
  const key = path === null ? null : JSON.stringify([path, query])
  const [state, setState] = useState<Loaded<T>>({ status: 'loading' })
  const [refreshing, setRefreshing] = useState(false)
  const [tick, setTick] = useState(0)
  const shown = useRef<string | null>(null)
  useEffect(() => {
    if (key === null || path === null) return
    const ctl = new AbortController()
    const again = shown.current === key
    shown.current = key
    if (again) setRefreshing(true)
    else setState({ status: 'loading' })
    api<T>(path, { query, signal: ctl.signal }).then(
      (data) => {
        if (ctl.signal.aborted) return
        setState({ status: 'ok', data })
        setRefreshing(false)
      },
      (error: Error) => {
        if (ctl.signal.aborted) return
        setState({ status: 'error', error })
        setRefreshing(false)
      },
    )
    return () => ctl.abort()
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, tick])
  const reload = useCallback(() => setTick((t) => t + 1), [])
  return { ...state, reload, refreshing }
}
