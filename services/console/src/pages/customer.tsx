import { Show } from '../components/states.tsx'
import { Table } from '../components/table.tsx'
import { date, dateTime, fraction, money, num } from '../format.ts'
import { href } from '../router.ts'
import { useSession } from '../session.ts'
import { useApi } from '../use-api.ts'

interface Record_ {
  data: {
    rfm: { recency_days: number | null; frequency: number; monetary: number; r_score: number | null; f_score: number | null; m_score: number | null; rfm_score: string | null; segment: string | null; processed_at: string } | null
    customer: { profile_id: string; email: string | null; first_name: string | null; last_name: string | null; estimated_age: number | null; inferred_gender: string | null; corrected_city: string | null; corrected_province: string | null; region: string | null; created_at: string | null } | null
    clv: { historical_value: number; predicted_value: number | null; total_clv: number | null; clv_tier: string | null; expected_purchases: number | null; p_alive: number | null } | null
    churn: { churn_risk: string | null; churn_probability: number | null; order_frequency_days: number | null; expected_order_date: string | null; days_overdue: number | null; potential_loss: number | null; recommended_action: string | null } | null
    orders: { counting_orders: number; total_spent: number; avg_order_value: number | null; first_order_at: string | null; last_order_at: string | null; cancelled_orders: number; recent: { order_id: string; placed_at: string; status: string; total: number; currency: string; cancelled: boolean }[] } | null
  }
}

/** One customer's record: RFM, CLV, churn and recent orders side by side. */
export function Customer({ id }: { id: string }) {
  const { tenantId } = useSession()
  const r = useApi<Record_>(`/api/cdp/v2/customers/${encodeURIComponent(id)}`, { tenant_id: tenantId })
  return (
    <Show value={r} what="Loading the customer">
      {({ data }) => {
        const c = data.customer
        const name = [c?.first_name, c?.last_name].filter(Boolean).join(' ') || `Customer #${id}`
        return (
          <>
            <p class="crumbs">
              {data.rfm?.segment ? <a href={href(`/segments/${encodeURIComponent(data.rfm.segment)}`)}>{data.rfm.segment}</a> : <a href={href('/segments')}>Segments</a>} › {name}
            </p>
            <h1>{name}</h1>
            <div class="grid3">
              <section class="card">
                <h2>Profile</h2>
                <dl>
                  <dt>E-mail</dt>
                  <dd>{c?.email ?? '—'}</dd>
                  <dt>Age</dt>
                  <dd>{num(c?.estimated_age)}</dd>
                  <dt>Gender</dt>
                  <dd>{c?.inferred_gender ?? '—'}</dd>
                  <dt>Location</dt>
                  <dd>{[c?.corrected_city, c?.corrected_province].filter(Boolean).join(', ') || '—'}</dd>
                  <dt>Customer since</dt>
                  <dd>{date(c?.created_at)}</dd>
                </dl>
              </section>
              <section class="card">
                <h2>RFM</h2>
                <dl>
                  <dt>Segment</dt>
                  <dd>{data.rfm?.segment ?? '—'}</dd>
                  <dt>Score (R F M)</dt>
                  <dd>{data.rfm?.rfm_score ?? '—'}</dd>
                  <dt>Recency</dt>
                  <dd>{data.rfm?.recency_days == null ? '—' : `${num(data.rfm.recency_days)} days`}</dd>
                  <dt>Frequency</dt>
                  <dd>{num(data.rfm?.frequency)}</dd>
                  <dt>Monetary</dt>
                  <dd>{money(data.rfm?.monetary)}</dd>
                </dl>
              </section>
              <section class="card">
                <h2>Value and churn</h2>
                <dl>
                  <dt>Lifetime value</dt>
                  <dd>
                    {money(data.clv?.total_clv)} {data.clv?.clv_tier ? `(${data.clv.clv_tier})` : ''}
                  </dd>
                  <dt>Predicted value</dt>
                  <dd>{money(data.clv?.predicted_value)}</dd>
                  <dt>Probability alive</dt>
                  <dd>{fraction(data.clv?.p_alive)}</dd>
                  <dt>Churn risk</dt>
                  <dd>
                    {data.churn?.churn_risk ?? '—'} ({fraction(data.churn?.churn_probability)})
                  </dd>
                  <dt>Expected order</dt>
                  <dd>
                    {date(data.churn?.expected_order_date)}
                    {data.churn?.days_overdue ? `, ${num(data.churn.days_overdue)} days overdue` : ''}
                  </dd>
                </dl>
              </section>
            </div>
            <Table
              caption="Recent orders"
              rows={data.orders?.recent ?? []}
              rowKey={(o) => o.order_id}
              empty="No orders."
              columns={[
                { label: 'Order', cell: (o) => o.order_id },
                { label: 'Placed', cell: (o) => dateTime(o.placed_at) },
                { label: 'Status', cell: (o) => (o.cancelled ? `${o.status} (cancelled)` : o.status) },
                { label: 'Total', numeric: true, cell: (o) => `${money(o.total)} ${o.currency}` },
              ]}
            />
          </>
        )
      }}
    </Show>
  )
}
