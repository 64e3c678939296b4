import { Chart, Plot } from '../components/chart.tsx'
import { Show } from '../components/states.tsx'
import { Numbers, Table } from '../components/table.tsx'
import { Filters, filtersOf } from '../filters.tsx'
import { money, num, percent } from '../format.ts'
import type { Place } from '../router.ts'
import { useSession } from '../session.ts'
import { useApi } from '../use-api.ts'
import { Kpi } from './overview.tsx'

interface Demographics {
  data: {
    summary: { total_customers: number; customers_with_age: number; customers_with_gender: number; customers_with_location: number; overall_avg_age: number | null; completion_rates: { age: number; gender: number; location: number } }
    age_analysis: { age_segment: string; generation: string; customer_count: number; avg_age: number; avg_spent: number; male_count: number; female_count: number; percentage: number }[]
    geographic_analysis: { province: string; region: string; customer_count: number; avg_spent: number; avg_orders: number; percentage: number }[]
  }
}

const PATH = '/api/v2/cdp/analytics/demographics'

export function DemographicsPage({ place }: { place: Place }) {
  const { tenantId } = useSession()
  const query = { tenant_id: tenantId, ...filtersOf(place) }
  const d = useApi<Demographics>(PATH, query)
  return (
    <>
      <h1>Demographics</h1>
      <Filters place={place} />
      <Show value={d} what="Loading demographics">
        {({ data }) => {
          const byGender = data.age_analysis.flatMap((a) => [
            { age: a.age_segment, gender: 'Female', count: a.female_count },
            { age: a.age_segment, gender: 'Male', count: a.male_count },
          ])
          const generations = new Map<string, number>()
          for (const a of data.age_analysis) generations.set(a.generation, (generations.get(a.generation) ?? 0) + a.customer_count)
          const regions = new Map<string, number>()
          for (const g of data.geographic_analysis) regions.set(g.region, (regions.get(g.region) ?? 0) + g.customer_count)
          return (
            <>
              <section class="kpis" aria-label="Completeness">
                <Kpi label="Customers" value={num(data.summary.total_customers)} />
                <Kpi label="Average age" value={num(data.summary.overall_avg_age, 1)} />
                <Kpi label="With an age" value={percent(data.summary.completion_rates.age)} />
                <Kpi label="With a gender" value={percent(data.summary.completion_rates.gender)} />
                <Kpi label="With a location" value={percent(data.summary.completion_rates.location)} />
              </section>
              <div class="grid2">
                <section class="card">
                  <h2>Age and gender</h2>
                  <Chart
                    label="Customers by age segment and gender"
                    deps={[d.data]}
                    make={() => ({
                      x: { label: 'Age', domain: data.age_analysis.map((a) => a.age_segment) },
                      y: { grid: true, label: 'Customers' },
                      color: { legend: true, range: ['var(--accent)', 'var(--accent-2)'] },
                      marks: [Plot.barY(byGender, { x: 'age', y: 'count', fill: 'gender' }), Plot.ruleY([0])],
                    })}
                  />
                  <Numbers caption="Customers by age segment and gender" head={['Age', 'Female', 'Male', 'All']} rows={data.age_analysis.map((a) => [a.age_segment, num(a.female_count), num(a.male_count), num(a.customer_count)])} />
                </section>
                <section class="card">
                  <h2>Generations</h2>
                  <Table
                    caption="Customers by generation"
                    rows={[...generations]}
                    rowKey={([g]) => g}
                    columns={[
                      { label: 'Generation', cell: ([g]) => g },
                      { label: 'Customers', numeric: true, cell: ([, n]) => num(n) },
                    ]}
                  />
                  <Table
                    caption="Customers by region"
                    rows={[...regions].sort((a, b) => b[1] - a[1])}
                    rowKey={([r]) => r}
                    columns={[
                      { label: 'Region', cell: ([r]) => r },
                      { label: 'Customers', numeric: true, cell: ([, n]) => num(n) },
                    ]}
                  />
                </section>
              </div>
              <Table
                caption="Provinces"
                rows={data.geographic_analysis}
                rowKey={(g) => g.province}
                source={{ path: PATH, query }}
                columns={[
                  { label: 'Province', cell: (g) => g.province },
                  { label: 'Region', cell: (g) => g.region },
                  { label: 'Customers', numeric: true, cell: (g) => num(g.customer_count) },
                  { label: 'Share', numeric: true, cell: (g) => percent(g.percentage) },
                  { label: 'Avg. spent', numeric: true, cell: (g) => money(g.avg_spent) },
                  { label: 'Avg. orders', numeric: true, cell: (g) => num(g.avg_orders, 2) },
                ]}
              />
            </>
          )
        }}
      </Show>
    </>
  )
}
