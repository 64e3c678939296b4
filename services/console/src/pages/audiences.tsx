import { useState } from 'preact/hooks'
import { api } from '../api.ts'
import { ErrorBox, Show } from '../components/states.tsx'
import { Table } from '../components/table.tsx'
import { SEGMENTS } from '../filters.tsx'
import { dateTime, num } from '../format.ts'
import { useSession } from '../session.ts'
import { useApi } from '../use-api.ts'

interface Sync {
  id: string
  name: string
  segment: string
  ad_account_id: string
  status: string
  paused_reason: string | null
  audience: { id: string | null; approximate_count: number | null; delivery_status: { code: number; description: string } | null } | null
  last_sync: string | null
  rejected_rows: number
  alerts: { type?: string; message: string }[]
}

const PATH = '/api/v2/cdp/audience-syncs'

/** Every audience sync of the tenant: its segment, the platform's audience, delivery, uploads, alerts; create, pause, resume, delete. */
export function Audiences() {
  const { tenantId } = useSession()
  const list = useApi<{ data: Sync[]; count: number }>(PATH, { tenant_id: tenantId })
  const [busy, setBusy] = useState<string | null>(null)
  const [actionError, setActionError] = useState<Error | null>(null)
  const act = async (id: string, what: () => Promise<unknown>) => {
    setBusy(id)
    setActionError(null)
    try {
      await what()
      list.reload()
    } catch (e) {
      setActionError(e as Error)
    } finally {
      setBusy(null)
    }
  }
  return (
    <>
      <h1>Audiences</h1>
      <p class="note">Each sync keeps a custom audience of the ads platform equal to one segment: members are uploaded hashed (SHA-256) as customers enter and leave it.</p>
      {actionError && <ErrorBox error={actionError} />}
      <Show value={list} what="Loading the audience syncs">
        {({ data }) => (
          <Table
            caption="Audience syncs"
            rows={data}
            rowKey={(s) => s.id}
            empty="No audience sync yet: create one below."
            columns={[
              { label: 'Name', cell: (s) => s.name },
              { label: 'Segment', cell: (s) => s.segment },
              { label: 'Audience id', cell: (s) => s.audience?.id ?? '—' },
              { label: 'Size', numeric: true, cell: (s) => num(s.audience?.approximate_count) },
              { label: 'Delivery', cell: (s) => s.audience?.delivery_status?.description ?? '—' },
              { label: 'Status', cell: (s) => (s.paused_reason ? `${s.status} (${s.paused_reason})` : s.status) },
              { label: 'Last upload', cell: (s) => dateTime(s.last_sync) },
              { label: 'Rejected rows', numeric: true, cell: (s) => num(s.rejected_rows) },
              { label: 'Alerts', cell: (s) => (s.alerts.length ? s.alerts.map((a) => a.message).join('; ') : 'none') },
              {
                label: 'Actions',
                cell: (s) => (
                  <span class="buttons">
                    <button type="button" disabled={busy === s.id} onClick={() => act(s.id, () => api(`${PATH}/${s.id}`, { method: 'PUT', query: { tenant_id: tenantId }, body: { status: s.status === 'paused' ? 'active' : 'paused' } }))}>
                      {s.status === 'paused' ? 'Resume' : 'Pause'}
                      <span class="sr-only"> {s.name}</span>
                    </button>
                    <button
                      type="button"
                      class="danger"
                      disabled={busy === s.id}
                      onClick={() => {
                        if (confirm(`Delete the audience sync "${s.name}"? Its custom audience is deleted on the ads platform too.`)) void act(s.id, () => api(`${PATH}/${s.id}`, { method: 'DELETE', query: { tenant_id: tenantId } }))
                      }}
                    >
                      Delete<span class="sr-only"> {s.name}</span>
                    </button>
                  </span>
                ),
              },
            ]}
          />
        )}
      </Show>
      <CreateSync onCreated={list.reload} />
    </>
  )
}

function CreateSync({ onCreated }: { onCreated(): void }) {
  const { tenantId } = useSession()
  const [segment, setSegment] = useState<string>('At Risk')
  const [name, setName] = useState('')
  const [account, setAccount] = useState('')
  const [token, setToken] = useState('')
  const [error, setError] = useState<Error | null>(null)
  const [done, setDone] = useState<string | null>(null)
  const [sending, setSending] = useState(false)
  const submit = async (e: Event) => {
    e.preventDefault()
    setSending(true)
    setError(null)
    setDone(null)
    try {
      const r = await api<{ data: Sync }>(PATH, { method: 'POST', query: { tenant_id: tenantId }, body: { tenant_id: tenantId, segment, ad_account_id: account.trim(), access_token: token, ...(name.trim() ? { name: name.trim() } : {}) } })
      setDone(`Created "${r.data.name}": its audience fills within a minute.`)
      setToken('')
      onCreated()
    } catch (err) {
      setError(err as Error)
    } finally {
      setSending(false)
    }
  }
  return (
    <section class="card">
      <h2>New audience sync</h2>
      <form class="stack" onSubmit={submit}>
        <label>
          Segment
          <select value={segment} onChange={(e) => setSegment((e.target as HTMLSelectElement).value)}>
            {SEGMENTS.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Name (optional)
          <input value={name} maxLength={200} onInput={(e) => setName((e.target as HTMLInputElement).value)} placeholder={`${segment} customers`} />
        </label>
        <label>
          Ad account
          <input value={account} required pattern="act_[0-9]{1,30}" placeholder="act_1234567890" onInput={(e) => setAccount((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Access token
          <input type="password" value={token} required minLength={8} autoComplete="off" onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
        </label>
        <p class="note">The token is checked with the ads platform before anything is stored, and is never shown again.</p>
        <button type="submit" disabled={sending}>
          {sending ? 'Creating…' : 'Create the sync'}
        </button>
        {error && <ErrorBox error={error} />}
        {done && (
          <p class="state ok" role="status">
            {done}
          </p>
        )}
      </form>
    </section>
  )
}
