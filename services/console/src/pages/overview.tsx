import { Chart, Plot } from '../components/chart.tsx'
import { Show } from '../components/states.tsx'
import { Exports, Numbers } from '../components/table.tsx'
import { Filters, filtersOf, keep } from '../filters.tsx'
import { money, num, fraction } from '../format.ts'
import { href, type Place } from '../router.ts'
import { useSession } from '../session.ts'
import { useApi } from '../use-api.ts'

interface Dashboard {
  data: {
    period: string
    kpis: { total_customers: number; active_customers: number; total_revenue: number; avg_order_value: number; customer_lifetime_value: number; churn_rate: number; nps_score: number | null }
    trends: { revenue: { current: number; previous: number; change: string | null; chart: number[] }; customers: { new: number; returning: number; churned: number } }
    segments: { distribution: { segment: string; count: number; percentage: number }[]; movements: { upgrades: number; downgrades: number } }
    alerts: { type: string; message: string; action: string }[]
  }
  metadata?: { reference_date?: string }
}

const PERIODS = ['today', 'week', 'month', 'year'] as const
const PATH = '/api/v2/cdp/analytics/dashboard'

export function Overview({ place }: { place: Place }) {
  const { tenantId } = useSession()
  const period = PERIODS.find((p) => p === place.query.get('period')) ?? 'month'
  const query = { tenant_id: tenantId, period, ...filtersOf(place) }
  const d = useApi<Dashboard>(PATH, query)
  return (
    <>
      <h1>Overview</h1>
      <nav class="tabs" aria-label="Period">
        {PERIODS.map((p) => (
          <a href={href('/', { ...keep(place, ['period']), period: p })} aria-current={p === period ? 'page' : undefined}>
            {p === 'today' ? 'Today' : `This ${p}`}
          </a>
        ))}
      </nav>
      <Filters place={place} dates={false} />
      <Show value={d} what="Loading the dashboard">
        {({ data, metadata }) => {
          const k = data.kpis
          const ref = metadata?.reference_date
          const days = data.trends.revenue.chart.map((v, i, all) => ({ day: ref ? new Date(Date.parse(ref) - (all.length - 1 - i) * 86_400_000) : new Date(i * 86_400_000), revenue: v }))
          return (
            <>
              <section class="kpis" aria-label="Key figures">
                <Kpi label="Customers" value={num(k.total_customers)} />
                <Kpi label="Active customers" value={num(k.active_customers)} />
                <Kpi label="Revenue" value={money(k.total_revenue)} note={data.trends.revenue.change === null ? `no revenue the previous ${period}` : `${data.trends.revenue.change} vs previous ${period}`} />
                <Kpi label="Average order" value={money(k.avg_order_value)} />
                <Kpi label="Customer lifetime value" value={money(k.customer_lifetime_value)} />
                <Kpi label="Churn rate" value={fraction(k.churn_rate)} />
              </section>
              <div class="grid2">
                <section class="card">
                  <h2>Daily revenue</h2>
                  <Chart
                    label={`Daily revenue over the ${period}`}
                    deps={[d.data]}
                    make={() => ({
                      x: { label: null, type: ref ? 'utc' : 'linear' },
                      y: { grid: true, label: 'Revenue', tickFormat: '~s' },
                      marks: [Plot.areaY(days, { x: 'day', y: 'revenue', fill: 'var(--accent-soft)' }), Plot.lineY(days, { x: 'day', y: 'revenue', stroke: 'var(--accent)' }), Plot.ruleY([0]), Plot.tip(days, Plot.pointerX({ x: 'day', y: 'revenue' }))],
                    })}
                  />
                  <Numbers caption={`Daily revenue over the ${period}`} rows={days.map((d) => [ref ? d.day.toISOString().slice(0, 10) : String(d.day.getTime() / 86_400_000 + 1), money(d.revenue)])} head={['Day', 'Revenue']} />
                  <p class="note">
                    New {num(data.trends.customers.new)} · returning {num(data.trends.customers.returning)} · churned {num(data.trends.customers.churned)}
                  </p>
                </section>
                <section class="card">
                  <h2>Segments</h2>
                  <Chart
                    label="Customers per segment"
                    deps={[d.data]}
                    make={() => ({
                      marginLeft: 130,
                      marginRight: 56,
                      x: { grid: true, label: 'Customers' },
                      y: { label: null, domain: data.segments.distribution.map((s) => s.segment) },
                      marks: [Plot.barX(data.segments.distribution, { y: 'segment', x: 'count', fill: 'var(--accent)' }), Plot.text(data.segments.distribution, { y: 'segment', x: 'count', text: (s: { percentage: number }) => `${s.percentage} %`, dx: 4, textAnchor: 'start' })],
                    })}
                  />
                  <p class="note">
                    Movements this {period}: <strong>{num(data.segments.movements.upgrades)}</strong> up, <strong>{num(data.segments.movements.downgrades)}</strong> down ·{' '}
                    <a href={href('/segments', keep(place, ['period']))}>all segments</a>
                  </p>
                </section>
              </div>
              <section class="card">
                <h2>Alerts</h2>
                {data.alerts.length === 0 ? (
                  <p class="state empty">No alerts.</p>
                ) : (
                  <ul class="alerts">
                    {data.alerts.map((a) => (
                      <li>
                        <strong>{a.message}</strong> <span>{a.action}</span>
                      </li>
                    ))}
                  </ul>
                )}
              </section>
              <Exports path={PATH} query={query} what="Dashboard" />
            </>
          )
        }}
      </Show>
    </>
  )
}

export const Kpi = ({ label, value, note }: { label: string; value: string; note?: string }) => (
  <div class="kpi">
    <span class="kpi-label">{label}</span>
    <span class="kpi-value">{value}</span>
    {note && <span class="kpi-note">{note}</span>}
  </div>
)
