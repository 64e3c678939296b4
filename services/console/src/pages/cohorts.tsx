import { Chart, Plot } from '../components/chart.tsx'
import { Show } from '../components/states.tsx'
import { Exports, Table } from '../components/table.tsx'
import { Filters, filtersOf, keep } from '../filters.tsx'
import { money, num, percent, shade } from '../format.ts'
import { href, type Place } from '../router.ts'
import { useSession } from '../session.ts'
import { useApi } from '../use-api.ts'

type Retention = Record<string, number | null>
interface Cohorts {
  data: {
    period: string
    cohorts: { cohort: string; size: number; retention: Retention; revenue: { total: number; per_customer: number; growth: string | null } }[]
    insights: { best_cohort: string | null; worst_cohort: string | null; avg_retention_3m: number | null; trend: string }
  }
}

const PATH = '/api/v2/cdp/analytics/cohorts'
const PERIODS = ['monthly', 'weekly', 'daily'] as const


export function CohortsPage({ place }: { place: Place }) {
  const { tenantId } = useSession()
  const period = PERIODS.find((p) => p === place.query.get('period')) ?? 'monthly'
  const query = { tenant_id: tenantId, period, ...filtersOf(place), start_date: place.query.get('start_date'), end_date: place.query.get('end_date') }
  const c = useApi<Cohorts>(PATH, query)
  return (
    <>
      <h1>Cohorts</h1>
      <nav class="tabs" aria-label="Cohort period">
        {PERIODS.map((p) => (
          <a href={href('/cohorts', { ...keep(place, ['period']), period: p })} aria-current={p === period ? 'page' : undefined}>
            {p[0]!.toUpperCase() + p.slice(1)}
          </a>
        ))}
      </nav>
      <Filters place={place} />
      <Show value={c} what="Loading the cohorts">
        {({ data }) => {
          const keys = Object.keys(data.cohorts[0]?.retention ?? {})
          return data.cohorts.length === 0 ? (
            <p class="state empty">No customer placed a first order in this window.</p>
          ) : (
            <>
              <p class="note">
                Best cohort {data.insights.best_cohort ?? '—'}, worst {data.insights.worst_cohort ?? '—'}; average retention after 3 periods {percent(data.insights.avg_retention_3m)}; trend {data.insights.trend}.
              </p>
              <div class="table-wrap">
                <table class="heatmap" data-testid="cohort-heatmap">
                  <caption>Retention by cohort (share of the cohort that ordered again in each period, %)</caption>
                  <thead>
                    <tr>
                      <th scope="col">Cohort</th>
                      <th scope="col" class="num">
                        Customers
                      </th>
                      {keys.map((k) => (
                        <th scope="col" class="num">
                          {k.replace(/_/g, ' ')}
                        </th>
                      ))}
                    </tr>
                  </thead>
                  <tbody>
                    {data.cohorts.map((row) => (
                      <tr key={row.cohort}>
                        <th scope="row">{row.cohort}</th>
                        <td class="num">{num(row.size)}</td>
                        {keys.map((k) => (
                          <td class="num cell" style={shade(row.retention[k] ?? null)}>
                            {row.retention[k] == null ? '—' : num(row.retention[k], 1)}
                          </td>
                        ))}
                      </tr>
                    ))}
                  </tbody>
                </table>
                <Exports path={PATH} query={query} what="Cohorts" />
              </div>
              <section class="card">
                <h2>Revenue per cohort</h2>
                <Chart
                  label="Revenue per cohort"
                  deps={[c.data]}
                  make={() => ({
                    x: { label: null, type: 'band', tickRotate: data.cohorts.length > 14 ? -45 : 0 },
                    y: { grid: true, label: 'Revenue', tickFormat: '~s' },
                    marginBottom: data.cohorts.length > 14 ? 60 : 30,
                    marks: [Plot.barY(data.cohorts, { x: 'cohort', y: (r: Cohorts['data']['cohorts'][number]) => r.revenue.total, fill: 'var(--accent)' }), Plot.ruleY([0])],
                  })}
                />
                <Table
                  caption="Revenue per cohort"
                  rows={data.cohorts}
                  rowKey={(r) => r.cohort}
                  columns={[
                    { label: 'Cohort', cell: (r) => r.cohort },
                    { label: 'Revenue', numeric: true, cell: (r) => money(r.revenue.total) },
                    { label: 'Per customer', numeric: true, cell: (r) => money(r.revenue.per_customer) },
                    { label: 'Growth', numeric: true, cell: (r) => r.revenue.growth ?? '—' },
                  ]}
                />
              </section>
            </>
          )
        }}
      </Show>
    </>
  )
}
