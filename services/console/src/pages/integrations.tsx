import { useState } from 'preact/hooks'
import { api } from '../api.ts'
import { ErrorBox, Show } from '../components/states.tsx'
import { Pager, Table } from '../components/table.tsx'
import { dateTime, fraction, num } from '../format.ts'
import { href, navigate, type Place } from '../router.ts'
import { useSession } from '../session.ts'
import { useApi } from '../use-api.ts'

interface Health {
  data: { total_integrations: number; active_integrations: number; by_type: Record<string, { total: number; active: number; last_24h_syncs: number; success_rate: number | null }>; alerts: { integration_id: number; tenant_id: number; type: string; message: string; since: string }[] }
}
interface Item {
  id: number
  integration_type: string
  account_name: string | null
  is_active: boolean
  last_sync: string | null
  sync_status: string
}
interface Run {
  sync_id: string
  attempt: number
  status: string
  started_at: string
  finished_at: string | null
  duration_ms: number
  error: { error: string; message: string } | null
  records: { customers: number; orders: number }
}

const BASE = '/api/v2/tenant-integrations'

export function Integrations({ place }: { place: Place }) {
  const { tenantId } = useSession()
  const health = useApi<Health>(`${BASE}/health`)
  const list = useApi<{ data: Item[] }>(`${BASE}/${tenantId}`)
  const open = Number(place.query.get('integration')) || null
  return (
    <>
      <h1>Integrations</h1>
      <Show value={health} what="Loading integration health">
        {({ data }) => (
          <>
            <Table
              caption="Health by type"
              rows={Object.entries(data.by_type)}
              rowKey={([t]) => t}
              columns={[
                { label: 'Type', cell: ([t]) => t.replace(/_/g, ' ') },
                { label: 'Integrations', numeric: true, cell: ([, v]) => num(v.total) },
                { label: 'Active', numeric: true, cell: ([, v]) => num(v.active) },
                { label: 'Syncs, last 24 h', numeric: true, cell: ([, v]) => num(v.last_24h_syncs) },
                { label: 'Success rate', numeric: true, cell: ([, v]) => fraction(v.success_rate) },
              ]}
            />
            {data.alerts.length > 0 && (
              <ul class="alerts" aria-label="Integration alerts">
                {data.alerts.map((a) => (
                  <li>
                    <strong>Integration {a.integration_id}</strong> {a.message} (since {dateTime(a.since)})
                  </li>
                ))}
              </ul>
            )}
          </>
        )}
      </Show>
      <Show value={list} what="Loading the integrations">
        {({ data }) => (
          <Table
            caption={`Integrations of tenant ${tenantId}`}
            rows={data}
            rowKey={(i) => i.id}
            empty="This tenant has no integration."
            columns={[
              { label: 'Integration', cell: (i) => <a href={href('/integrations', { integration: i.id })}>{`${i.integration_type.replace(/_/g, ' ')} · ${i.account_name ?? i.id}`}</a> },
              { label: 'Active', cell: (i) => (i.is_active ? 'yes' : 'no') },
              { label: 'Last sync', cell: (i) => dateTime(i.last_sync) },
              { label: 'Status', cell: (i) => i.sync_status.replace(/_/g, ' ') },
            ]}
          />
        )}
      </Show>
      {open !== null && <IntegrationDetail id={open} place={place} />}
    </>
  )
}

function IntegrationDetail({ id, place }: { id: number; place: Place }) {
  const offset = Math.max(0, Number(place.query.get('offset')) || 0)
  const runs = useApi<{ data: Run[]; pagination: { total: number; limit: number; offset: number } }>(`${BASE}/integration/${id}/syncs`, { limit: 20, offset })
  const [message, setMessage] = useState<string | null>(null)
  const [error, setError] = useState<Error | null>(null)
  const [busy, setBusy] = useState(false)
  const run = async (what: () => Promise<string>) => {
    setBusy(true)
    setError(null)
    setMessage(null)
    try {
      setMessage(await what())
      runs.reload()
    } catch (e) {
      setError(e as Error)
    } finally {
      setBusy(false)
    }
  }
  const startSync = () =>
    run(async () => {
      const r = await api<{ data: { sync_id: string; estimated_time: string } }>(`${BASE}/${id}/sync`, { method: 'POST', body: { sync_type: 'full' } })
      return `Sync ${r.data.sync_id} queued (about ${r.data.estimated_time}).`
    })
  const test = () =>
    run(async () => {
      const r = await api<{ message: string; data: { status: string; response_time: string } }>(`${BASE}/${id}/test`, { method: 'POST' })
      return `${r.message}: ${r.data.status}, ${r.data.response_time}.`
    })
  return (
    <section class="card" aria-labelledby="integration-detail">
      <h2 id="integration-detail">Integration {id}</h2>
      <div class="buttons">
        <button type="button" onClick={startSync} disabled={busy}>
          Start a full sync
        </button>
        <button type="button" class="secondary" onClick={test} disabled={busy}>
          Test the connection
        </button>
        <button type="button" class="secondary" onClick={() => runs.reload()} disabled={runs.refreshing}>
          {runs.refreshing ? 'Refreshing…' : 'Refresh'}
        </button>
      </div>
      {message && (
        <p class="state ok" role="status">
          {message}
        </p>
      )}
      {error && <ErrorBox error={error} />}
      <Show value={runs} what="Loading the sync history">
        {({ data, pagination }) => (
          <>
            <Table
              caption="Sync history"
              rows={data}
              rowKey={(r) => `${r.sync_id}:${r.attempt}`}
              empty="No sync has run yet."
              columns={[
                { label: 'Sync', cell: (r) => <code title={r.sync_id}>{r.sync_id.slice(0, 13)}</code> },
                { label: 'Attempt', numeric: true, cell: (r) => num(r.attempt) },
                { label: 'Status', cell: (r) => r.status },
                { label: 'Started', cell: (r) => dateTime(r.started_at) },
                { label: 'Duration', numeric: true, cell: (r) => `${num(r.duration_ms / 1000, 1)} s` },
                { label: 'Customers', numeric: true, cell: (r) => num(r.records.customers) },
                { label: 'Orders', numeric: true, cell: (r) => num(r.records.orders) },
                { label: 'Error', cell: (r) => (r.error ? `${r.error.error}: ${r.error.message}` : '—') },
              ]}
            />
            <Pager total={pagination.total} limit={20} offset={offset} go={(o) => navigate(href('/integrations', { integration: id, offset: o || null }))} />
          </>
        )}
      </Show>
    </section>
  )
}
