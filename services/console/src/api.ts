/**
 * The console's only way to the data: the public API, with the session cookie the sign-in set
 * (same origin, HttpOnly: the page never holds the key). Writes carry the session's CSRF token.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    message: string,
  ) {
    super(message)
  }
}

let csrfToken: string | null = null
/** Set at sign-in and on reading the session: sent as X-CSRF-Token with every write. */
export const setCsrf = (token: string | null) => {
  csrfToken = token
}

type QueryValue = string | number | boolean | null | undefined | readonly (string | number)[]
export type Query = Record<string, QueryValue>

/** `path?query`: arrays repeat their key (segments=A&segments=B), empty values are left out. */
export function withQuery(path: string, query: Query = {}): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '') continue
    if (Array.isArray(v)) for (const x of v) q.append(k, String(x))
    else q.set(k, String(v))
  }
  const s = q.toString()
  return s ? `${path}?${s}` : path
}

/** A readable sentence from the API's error body ({ error, details }). */
function describe(status: number, body: unknown): string {
  if (body && typeof body === 'object') {
    const b = body as { error?: unknown; details?: unknown; message?: unknown }
    const d = b.details
    let detail = ''
    if (typeof d === 'string') detail = d
    else if (d && typeof d === 'object') {
      const x = d as { message?: unknown; errors?: { path?: string; message?: string }[] }
      if (typeof x.message === 'string') detail = x.message
      else if (Array.isArray(x.errors)) detail = x.errors.map((e) => `${e.path ? `${e.path}: ` : ''}${e.message ?? ''}`).join('; ')
    }
    const head = typeof b.error === 'string' ? b.error : typeof b.message === 'string' ? b.message : `HTTP ${status}`
    return detail ? `${head}: ${detail}` : head
  }
  return `HTTP ${status}`
}

export async function api<T>(path: string, init: { method?: string; query?: Query; body?: unknown; signal?: AbortSignal } = {}): Promise<T> {
  const method = init.method ?? 'GET'
  const headers: Record<string, string> = { Accept: 'application/json' }
  if (init.body !== undefined) headers['Content-Type'] = 'application/json'
  if (method !== 'GET' && csrfToken) headers['X-CSRF-Token'] = csrfToken
  const res = await fetch(withQuery(path, init.query), {
    method,
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    credentials: 'same-origin',
    // The overviews are sent with `Cache-Control: private, max-age=300` for API clients; the
    // console asks the server every time (its own answer cache keeps that cheap), so a page shows
    // what the data is now, not what it was when the browser first asked.
    cache: 'no-cache',
    signal: init.signal,
  })
  if (res.status === 204) return undefined as T
  const text = await res.text()
  let body: unknown = null
  try {
    body = text ? JSON.parse(text) : null
  } catch {
    body = text
  }
  if (!res.ok) {
    if (res.status === 401 && !path.endsWith('/session')) window.dispatchEvent(new CustomEvent('cdp:signed-out'))
    // Another tab signed in since: this page's CSRF token is another session's. Read the session again.
    if (res.status === 403 && (body as { details?: { code?: string } } | null)?.details?.code === 'CSRF_TOKEN_INVALID') window.dispatchEvent(new CustomEvent('cdp:session-stale'))
    throw new ApiError(res.status, body, describe(res.status, body))
  }
  return body as T
}

/** Where a table's export downloads from: the endpoint's own `format` (csv, excel, json). */
export const exportHref = (path: string, query: Query, format: 'csv' | 'excel' | 'json') => withQuery(path, { ...query, format })
