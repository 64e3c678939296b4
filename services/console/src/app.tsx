import { useEffect, useRef, useState } from 'preact/hooks'
import { ErrorBox, Loading } from './components/states.tsx'
import { useApi } from './use-api.ts'
import { keep } from './filters.tsx'
import { href, navigate, onLinkClick, usePlace, type Place } from './router.ts'
import { readSession, SessionContext, signIn, signOut, type Session } from './session.ts'
import { Audiences } from './pages/audiences.tsx'
import { CohortsPage } from './pages/cohorts.tsx'
import { Customer } from './pages/customer.tsx'
import { DemographicsPage } from './pages/demographics.tsx'
import { Integrations } from './pages/integrations.tsx'
import { Overview } from './pages/overview.tsx'
import { SegmentCustomers, Segments } from './pages/segments.tsx'
import { Value } from './pages/value.tsx'

const NAV = [
  ['/', 'Overview'],
  ['/segments', 'Segments'],
  ['/value', 'Value and churn'],
  ['/cohorts', 'Cohorts'],
  ['/demographics', 'Demographics'],
  ['/audiences', 'Audiences'],
  ['/integrations', 'Integrations'],
] as const

/** The shared filters and period travel from page to page; a page's own state (offset, open integration) does not. */
const CARRIED = ['tenant', 'segments', 'min_value', 'max_value', 'date_from', 'date_to']

export function App() {
  const place = usePlace()
  const [session, setSession] = useState<Session | null | 'loading'>('loading')
  useEffect(() => {
    void readSession().then(setSession)
    const out = () => setSession(null)
    // A sign-in in another tab replaced the cookie: follow it (or the sign-in page when it ended).
    const stale = () => void readSession().then(setSession)
    window.addEventListener('cdp:signed-out', out)
    window.addEventListener('cdp:session-stale', stale)
    return () => {
      window.removeEventListener('cdp:signed-out', out)
      window.removeEventListener('cdp:session-stale', stale)
    }
  }, [])
  // Each page has its own title, and moving to another page moves the focus to it (announced by screen readers).
  const here = section(place)
  const initial = useRef(true)
  useEffect(() => {
    document.title = `${NAV.find(([p]) => p === here)?.[1] ?? 'cdp'} · cdp console`
    if (initial.current) initial.current = false
    else document.getElementById('main')?.focus()
  }, [place.path, here])
  if (session === 'loading') return <Loading what="Opening the console" />
  if (session === null) return <SignIn onSignedIn={setSession} />
  const tenantId = session.role === 'tenant' ? session.tenant_id! : Number(place.query.get('tenant')) || Number(localStorage.getItem('cdp.tenant')) || 1
  const carried: Record<string, string[]> = {}
  for (const k of CARRIED) if (place.query.getAll(k).length) carried[k] = place.query.getAll(k)
  return (
    <SessionContext.Provider value={{ session, tenantId }}>
      <div class="shell" onClick={(e) => onLinkClick(e as unknown as MouseEvent)}>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="top">
          <a class="brand" href={href('/', carried)}>
            cdp <span>console</span>
          </a>
          <nav class="main-nav" aria-label="Sections">
            {NAV.map(([path, label]) => (
              <a href={href(path, carried)} aria-current={section(place) === path ? 'page' : undefined}>
                {label}
              </a>
            ))}
          </nav>
          <div class="who">
            {session.role === 'admin' ? <TenantSwitcher place={place} tenantId={tenantId} /> : <span>Tenant {tenantId}</span>}
            <button
              type="button"
              class="secondary"
              onClick={async () => {
                await signOut()
                setSession(null)
                navigate('/')
              }}
            >
              Sign out
            </button>
          </div>
        </header>
        <main id="main" tabIndex={-1}>
          <Page place={place} key={`${tenantId}`} />
        </main>
      </div>
    </SessionContext.Provider>
  )
}

/** A path segment as text; a malformed escape stays as it was typed. */
function decoded(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

const section = (place: Place) => (place.path === '/' ? '/' : NAV.find(([p]) => p !== '/' && place.path.startsWith(p))?.[0] ?? (place.path.startsWith('/customers') ? '/segments' : null))

function Page({ place }: { place: Place }) {
  const p = place.path.replace(/\/+$/, '') || '/'
  const seg = /^\/segments\/([^/]+)$/.exec(p)
  const customer = /^\/customers\/([^/]+)$/.exec(p)
  if (p === '/') return <Overview place={place} />
  if (p === '/segments') return <Segments place={place} />
  if (seg) return <SegmentCustomers place={place} segment={decoded(seg[1]!)} />
  if (customer) return <Customer id={decoded(customer[1]!)} />
  if (p === '/value') return <Value place={place} />
  if (p === '/cohorts') return <CohortsPage place={place} />
  if (p === '/demographics') return <DemographicsPage place={place} />
  if (p === '/audiences') return <Audiences />
  if (p === '/integrations') return <Integrations place={place} />
  return (
    <>
      <h1>Not found</h1>
      <p>
        No page at {p}. <a href={href('/')}>Back to the overview</a>.
      </p>
    </>
  )
}

/** The admin token reaches every tenant: which one the pages show (kept in the URL and remembered). */
function TenantSwitcher({ place, tenantId }: { place: Place; tenantId: number }) {
  const tenants = useApi<{ data: { tenant_id: number; tenant_name: string | null; customers: number }[] }>('/api/v2/cdp/tenants')
  const [chosen, setChosen] = useState(String(tenantId))
  useEffect(() => setChosen(String(tenantId)), [tenantId])
  const list = tenants.data?.data ?? []
  const options = list.some((t) => t.tenant_id === tenantId) ? list : [{ tenant_id: tenantId, tenant_name: null, customers: -1 }, ...list]
  return (
    <form
      class="switcher"
      onSubmit={(e) => {
        e.preventDefault()
        const t = Number(chosen)
        if (!Number.isSafeInteger(t) || t < 1 || t === tenantId) return
        localStorage.setItem('cdp.tenant', String(t))
        navigate(href(place.path.startsWith('/customers') ? '/' : place.path, { ...keep(place, ['offset', 'integration']), tenant: String(t) }))
      }}
    >
      <label>
        Tenant
        <select value={chosen} onChange={(e) => setChosen((e.target as HTMLSelectElement).value)}>
          {options.map((t) => (
            <option value={String(t.tenant_id)}>
              {t.tenant_name ?? `Tenant ${t.tenant_id}`} (#{t.tenant_id}){t.customers >= 0 ? ` · ${t.customers.toLocaleString()} customers` : ''}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" class="secondary">
        Switch
      </button>
    </form>
  )
}

function SignIn({ onSignedIn }: { onSignedIn(s: Session): void }) {
  const [key, setKey] = useState('')
  const [error, setError] = useState<Error | null>(null)
  const [sending, setSending] = useState(false)
  return (
    <main class="signin" id="main">
      <h1>
        cdp <span>console</span>
      </h1>
      <form
        class="stack card"
        onSubmit={async (e) => {
          e.preventDefault()
          setSending(true)
          setError(null)
          try {
            const s = await signIn(key.trim())
            setKey('')
            onSignedIn(s)
          } catch (err) {
            setError(err as Error)
          } finally {
            setSending(false)
          }
        }}
      >
        <label>
          API key
          <input type="password" value={key} required autoComplete="off" autoFocus onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
        </label>
        <p class="note">A tenant API key shows that tenant; the admin token shows every tenant, with a switcher. The key is exchanged for a session cookie and not kept by this page.</p>
        <button type="submit" disabled={sending || !key.trim()}>
          {sending ? 'Signing in…' : 'Sign in'}
        </button>
        {error && <ErrorBox error={error} />}
      </form>
    </main>
  )
}
