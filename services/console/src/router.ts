import { useEffect, useState } from 'preact/hooks'

/**
 * The console's routes live under /console (the server answers the page for every one of them);
 * the query string holds a view's state (period, filters, page) so a URL can be shared.
 */
export const BASE = '/console'

export interface Place {
  /** The path below /console, starting with '/'. */
  path: string
  query: URLSearchParams
}

const read = (): Place => {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname
  return { path: p === '' ? '/' : p, query: new URLSearchParams(location.search) }
}

const listeners = new Set<() => void>()
window.addEventListener('popstate', () => listeners.forEach((l) => l()))

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  const url = to.startsWith(BASE) ? to : `${BASE}${to}`
  if (opts.replace) history.replaceState(null, '', url)
  else history.pushState(null, '', url)
  listeners.forEach((l) => l())
  if (!opts.replace) window.scrollTo(0, 0)
}

export function usePlace(): Place {
  const [place, setPlace] = useState(read)
  useEffect(() => {
    const l = () => setPlace(read())
    listeners.add(l)
    return () => void listeners.delete(l)
  }, [])
  return place
}

/**
 * `path` with the query replaced by `params` (empty values dropped; arrays repeat their key). The
 * admin's chosen tenant (`?tenant=`) goes along unless `params` names one: a link never leaves the
 * tenant the page shows.
 */
export function href(path: string, params: Record<string, string | number | readonly string[] | null | undefined> = {}): string {
  const q = new URLSearchParams()
  const tenant = new URLSearchParams(location.search).get('tenant')
  if (tenant && !('tenant' in params)) q.set('tenant', tenant)
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === '') continue
    if (Array.isArray(v)) for (const x of v) q.append(k, x)
    else q.set(k, String(v))
  }
  const s = q.toString()
  return `${BASE}${path}${s ? `?${s}` : ''}`
}

/** Follows an in-console link without reloading the page (a modified click opens a tab as usual). */
export function onLinkClick(e: MouseEvent): void {
  const a = (e.target as HTMLElement).closest('a')
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return
  const url = new URL(a.href, location.href)
  if (url.origin !== location.origin || !url.pathname.startsWith(BASE) || a.hasAttribute('download') || a.target) return
  // An in-page anchor (the skip link): the browser's own jump, which also moves the focus.
  if (url.hash && url.pathname === location.pathname && url.search === location.search) return
  e.preventDefault()
  navigate(url.pathname + url.search)
}
