import { createContext } from 'preact'
import { useContext } from 'preact/hooks'
import { api, setCsrf } from './api.ts'

export interface Session {
  role: 'tenant' | 'admin'
  tenant_id: number | null
  csrf_token: string
  expires_at: string
}

export const SESSION_PATH = '/api/v2/cdp/session'

export async function readSession(): Promise<Session | null> {
  try {
    const r = await api<{ data: Session }>(SESSION_PATH)
    setCsrf(r.data.csrf_token)
    return r.data
  } catch {
    setCsrf(null)
    return null
  }
}

export async function signIn(apiKey: string): Promise<Session> {
  const r = await api<{ data: Session }>(SESSION_PATH, { method: 'POST', body: { api_key: apiKey } })
  setCsrf(r.data.csrf_token)
  return r.data
}

export async function signOut(): Promise<void> {
  await api(SESSION_PATH, { method: 'DELETE' }).catch(() => undefined)
  setCsrf(null)
}

export interface Ctx {
  session: Session
  /** The tenant every page shows: the key's own, or the admin's choice. */
  tenantId: number
}

export const SessionContext = createContext<Ctx | null>(null)
export function useSession(): Ctx {
  const c = useContext(SessionContext)
  if (!c) throw new Error('no session')
  return c
}
