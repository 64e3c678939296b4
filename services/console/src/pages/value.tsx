import { useState } from 'preact/hooks'
import { Chart, Plot } from '../components/chart.tsx'
import { ErrorBox, Loading, Show } from '../components/states.tsx'
import { Numbers, Table } from '../components/table.tsx'
import { Filters, filtersOf } from '../filters.tsx'
import { date, fraction, money, num, percent } from '../format.ts'
import { href, type Place } from '../router.ts'
import { useSession } from '../session.ts'
import { useApi } from '../use-api.ts'
import { Kpi } from './overview.tsx'

interface Clv {
  data: {
    overview: { total_customers: number; avg_clv: number; median_clv: number; total_clv: number; distribution: Record<'high' | 'medium' | 'low', { count: number; percentage: number; avg_value: number; threshold: string }> }
    top_customers: { customer_id: number; email: string | null; historical_value: number; predicted_value: number; total_clv: number; total_orders: number; clv_tier: string }[]
    insights: Record<string, string>
  }
}
interface Churn {
  data: {
    overview: { total_customers: number; churn_rate: number; monthly_churn_rate: number; at_risk_count: number; distribution: Record<string, { count: number; percentage: number; definition: string }> }
    at_risk_customers: { customer_id: number; email: string | null; last_order_date: string; expected_order_date: string | null; days_overdue: number; churn_probability: number; churn_risk: string; recommended_action: string | null; potential_loss: number }[]
    predictions?: { next_month_churn: number; preventable_churn: number; potential_save_value: number }
  }
}

const CLV = '/api/v2/cdp/analytics/clv'
const CHURN = '/api/v2/cdp/analytics/churn'
const TIERS = ['low', 'medium', 'high'] as const
const RISKS = ['active', 'at_risk', 'churning', 'churned'] as const

export function Value({ place }: { place: Place }) {
  const { tenantId } = useSession()
  const filters = filtersOf(place)
  const clvQuery = { tenant_id: tenantId, ...filters, limit: 20 }
  const churnQuery = { tenant_id: tenantId, ...filters, include_predictions: true, limit: 50 }
  const clv = useApi<Clv>(CLV, clvQuery)
  const churn = useApi<Churn>(CHURN, churnQuery)
  return (
    <>
      <h1>Value and churn</h1>
      <Filters place={place} />
      <h2>Customer lifetime value</h2>
      <p class="note">Lifetime value is what a customer has spent so far plus the predicted value: the tenant's fitted purchase model (MBG/NBD or BG/NBD) with Gamma-Gamma spend, discounted over the CLV horizon (12 months unless configured).</p>
      <Show value={clv} what="Loading lifetime values">
        {({ data }) => {
          const tiers = TIERS.map((t) => ({ tier: t, ...data.overview.distribution[t] }))
          return (
            <>
              <section class="kpis" aria-label="Lifetime value figures">
                <Kpi label="Customers with a CLV" value={num(data.overview.total_customers)} />
                <Kpi label="Average CLV" value={money(data.overview.avg_clv)} />
                <Kpi label="Median CLV" value={money(data.overview.median_clv)} />
                <Kpi label="Total CLV" value={money(data.overview.total_clv)} />
              </section>
              <div class="grid2">
                <section class="card">
                  <h3>Customers by CLV tier</h3>
                  <Chart
                    label="Customers by CLV tier"
                    deps={[clv.data]}
                    make={() => ({
                      x: { label: 'CLV tier', domain: tiers.map((t) => `${t.tier} (${t.threshold})`) },
                      y: { grid: true, label: 'Customers' },
                      marks: [Plot.barY(tiers, { x: (t: (typeof tiers)[number]) => `${t.tier} (${t.threshold})`, y: 'count', fill: 'var(--accent)' }), Plot.ruleY([0])],
                    })}
                  />
                  <Numbers caption="Customers by CLV tier" head={['Tier', 'Customers', 'Share', 'Average CLV']} rows={tiers.map((t) => [`${t.tier} (${t.threshold})`, num(t.count), percent(t.percentage), money(t.avg_value)])} />
                </section>
                <section class="card">
                  <h3>Insights</h3>
                  <ul class="insights">
                    {Object.values(data.insights).map((s) => (
                      <li>{s}</li>
                    ))}
                  </ul>
                </section>
              </div>
              <Table
                caption="Top customers by lifetime value"
                rows={data.top_customers}
                rowKey={(c) => c.customer_id}
                source={{ path: CLV, query: { ...clvQuery, limit: undefined } }}
                columns={[
                  { label: 'Customer', cell: (c) => <a href={href(`/customers/${c.customer_id}`)}>{c.email || `#${c.customer_id}`}</a> },
                  { label: 'Tier', cell: (c) => c.clv_tier },
                  { label: 'Orders', numeric: true, cell: (c) => num(c.total_orders) },
                  { label: 'Spent so far', numeric: true, cell: (c) => money(c.historical_value) },
                  { label: 'Predicted value', numeric: true, cell: (c) => money(c.predicted_value) },
                  { label: 'Total CLV', numeric: true, cell: (c) => money(c.total_clv) },
                ]}
              />
            </>
          )
        }}
      </Show>
      <h2>Churn risk</h2>
      <Show value={churn} what="Loading churn risk">
        {({ data }) => {
          const levels = RISKS.map((r) => ({ risk: r.replace('_', ' '), ...data.overview.distribution[r]! }))
          return (
            <>
              <section class="kpis" aria-label="Churn figures">
                <Kpi label="Churn rate" value={fraction(data.overview.churn_rate)} />
                <Kpi label="Monthly churn rate" value={fraction(data.overview.monthly_churn_rate)} />
                <Kpi label="At risk" value={num(data.overview.at_risk_count)} />
                {data.predictions && <Kpi label="Potential save value" value={money(data.predictions.potential_save_value)} note={`${num(data.predictions.preventable_churn)} preventable`} />}
              </section>
              <section class="card">
                <h3>Customers by churn risk</h3>
                <Chart
                  label="Customers by churn risk"
                  deps={[churn.data]}
                  make={() => ({
                    x: { label: null, domain: levels.map((l) => l.risk) },
                    y: { grid: true, label: 'Customers' },
                    marks: [Plot.barY(levels, { x: 'risk', y: 'count', fill: 'var(--warn)' }), Plot.ruleY([0])],
                  })}
                />
                <ul class="definitions">
                  {levels.map((l) => (
                    <li>
                      <strong>{l.risk}</strong>: {num(l.count)} ({percent(l.percentage)}) — {l.definition}
                    </li>
                  ))}
                </ul>
              </section>
              <Table
                caption="At-risk customers"
                rows={data.at_risk_customers}
                rowKey={(c) => c.customer_id}
                source={{ path: CHURN, query: { ...churnQuery, limit: undefined } }}
                empty="No customer is at risk."
                columns={[
                  { label: 'Customer', cell: (c) => <a href={href(`/customers/${c.customer_id}`)}>{c.email || `#${c.customer_id}`}</a> },
                  { label: 'Risk', cell: (c) => c.churn_risk.replace('_', ' ') },
                  { label: 'Last order', cell: (c) => date(c.last_order_date) },
                  { label: 'Expected order', cell: (c) => date(c.expected_order_date) },
                  { label: 'Days overdue', numeric: true, cell: (c) => num(c.days_overdue) },
                  { label: 'Churn probability', numeric: true, cell: (c) => fraction(c.churn_probability) },
                  { label: 'Potential loss', numeric: true, cell: (c) => money(c.potential_loss) },
                  { label: 'Action', cell: (c) => (c.recommended_action ?? '—').replace(/_/g, ' ') },
                ]}
              />
            </>
          )
        }}
      </Show>
      <PredictionQuality />
    </>
  )
}

interface Validation {
  data: {
    model: string
    calibration: { end: string; customers: number; repeat_buyers: number }
    holdout: { start: string; end: string; days: number }
    purchases: { buckets: { frequency_cal: string; customers: number; actual_mean: number; predicted_mean: number }[]; totals: { customers: number; actual_purchases: number; predicted_purchases: number; mae: number; rmse: number; bias: number } }
    churn: { brier_score: number | null }
  }
}

/** The CLV model's holdout check: fitted up to a calibration end, compared with what customers bought after it. */
function PredictionQuality() {
  const { tenantId } = useSession()
  const [end, setEnd] = useState(() => new Date(Date.now() - 182 * 86_400_000).toISOString().slice(0, 10))
  const [asked, setAsked] = useState<string | null>(null)
  const v = useApi<Validation>(asked ? '/api/v2/cdp/analytics/clv/validation' : null, { tenant_id: tenantId, calibration_end: asked })
  return (
    <section class="card">
      <h2>Prediction quality</h2>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault()
          setAsked(end)
        }}
      >
        <label>
          Calibration end <input type="date" value={end} required onInput={(e) => setEnd((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Check the model</button>
      </form>
      {asked === null ? (
        <p class="note">Fits the model on the orders up to the calibration end and compares its predictions with what customers bought after it.</p>
      ) : v.status === 'loading' ? (
        <Loading what="Fitting and comparing" />
      ) : v.status === 'error' ? (
        <ErrorBox error={v.error} retry={v.reload} />
      ) : (
        <>
          <p>
            {v.data.data.model}, calibrated to {v.data.data.calibration.end} on {num(v.data.data.calibration.customers)} customers, holdout {v.data.data.holdout.days} days: predicted {num(v.data.data.purchases.totals.predicted_purchases, 1)} purchases, actual {num(v.data.data.purchases.totals.actual_purchases)} (MAE {num(v.data.data.purchases.totals.mae, 3)}
            {v.data.data.churn.brier_score === null ? '' : `, Brier score ${num(v.data.data.churn.brier_score, 3)}`}).
          </p>
          <Table
            caption="Holdout purchases by calibration frequency"
            rows={v.data.data.purchases.buckets}
            rowKey={(b) => b.frequency_cal}
            columns={[
              { label: 'Repeat purchases (calibration)', cell: (b) => b.frequency_cal },
              { label: 'Customers', numeric: true, cell: (b) => num(b.customers) },
              { label: 'Actual mean', numeric: true, cell: (b) => num(b.actual_mean, 3) },
              { label: 'Predicted mean', numeric: true, cell: (b) => num(b.predicted_mean, 3) },
            ]}
          />
        </>
      )}
    </section>
  )
}
