import { Show } from '../components/states.tsx'
import { Pager, Table } from '../components/table.tsx'
import { Filters, filtersOf, keep } from '../filters.tsx'
import { date, money, num, percent } from '../format.ts'
import { href, navigate, type Place } from '../router.ts'
import { useSession } from '../session.ts'
import { useApi } from '../use-api.ts'
import { Kpi } from './overview.tsx'

interface SegmentRow {
  segment: string
  customer_count: number
  percentage: number
  avg_recency: number
  avg_frequency: number
  avg_monetary: number
  characteristics: { description: string; recommended_actions: string[] }
}
interface Rfm {
  data: { overview: { total_customers: number; avg_recency: number; avg_frequency: number; avg_monetary: number; total_revenue: number; last_calculation: string | null }; distribution: SegmentRow[] }
}

const RFM = '/api/v2/cdp/analytics/rfm'

export function Segments({ place }: { place: Place }) {
  const { tenantId } = useSession()
  const query = { tenant_id: tenantId, ...filtersOf(place) }
  const r = useApi<Rfm>(RFM, query)
  return (
    <>
      <h1>Segments</h1>
      <Filters place={place} />
      <Show value={r} what="Loading the segments">
        {({ data }) => (
          <>
            <section class="kpis" aria-label="Key figures">
              <Kpi label="Scored customers" value={num(data.overview.total_customers)} />
              <Kpi label="Average recency" value={`${num(data.overview.avg_recency, 1)} days`} />
              <Kpi label="Average frequency" value={num(data.overview.avg_frequency, 2)} />
              <Kpi label="Average monetary" value={money(data.overview.avg_monetary)} />
            </section>
            <Table
              caption="Segments"
              rows={data.distribution}
              rowKey={(s) => s.segment}
              source={{ path: RFM, query }}
              columns={[
                { label: 'Segment', cell: (s) => <a href={href(`/segments/${encodeURIComponent(s.segment)}`, keep(place, ['offset']))}>{s.segment}</a> },
                { label: 'Customers', numeric: true, cell: (s) => num(s.customer_count) },
                { label: 'Share', numeric: true, cell: (s) => percent(s.percentage) },
                { label: 'Avg. recency (days)', numeric: true, cell: (s) => num(s.avg_recency, 1) },
                { label: 'Avg. frequency', numeric: true, cell: (s) => num(s.avg_frequency, 2) },
                { label: 'Avg. monetary', numeric: true, cell: (s) => money(s.avg_monetary) },
                {
                  label: 'Recommended actions',
                  cell: (s) => (
                    <ul class="actions">
                      {s.characteristics.recommended_actions.map((a) => (
                        <li>{a}</li>
                      ))}
                    </ul>
                  ),
                },
              ]}
            />
          </>
        )}
      </Show>
    </>
  )
}

export interface CustomerItem {
  profile_id: string
  email: string | null
  first_name: string | null
  last_name: string | null
  rfm_segment: string | null
  historical_value: number
  order_count: number
  last_order_date: string | null
  corrected_province: string | null
}
interface CustomerPage {
  data: { customers: CustomerItem[]; pagination: { total: number; limit: number; offset: number; has_next: boolean } }
}

const CUSTOMERS = '/api/cdp/v2/customers'
const PAGE = 50

/** One segment's customers, a page at a time (the customer list with the segment as its filter). */
export function SegmentCustomers({ place, segment }: { place: Place; segment: string }) {
  const { tenantId } = useSession()
  const offset = Math.max(0, Number(place.query.get('offset')) || 0)
  const query = { tenant_id: tenantId, ...filtersOf(place), segments: [segment], limit: PAGE, offset }
  const page = useApi<CustomerPage>(CUSTOMERS, query)
  return (
    <>
      <p class="crumbs">
        <a href={href('/segments', keep(place, ['offset']))}>Segments</a> › {segment}
      </p>
      <h1>{segment}</h1>
      <Show value={page} what="Loading the customers">
        {({ data }) => (
          <>
            <CustomerTable caption={`Customers in ${segment}`} rows={data.customers} source={{ path: CUSTOMERS, query: { ...query, limit: undefined, offset: undefined } }} />
            <Pager total={data.pagination.total} limit={PAGE} offset={offset} go={(o) => navigate(href(place.path, { ...keep(place, ['offset']), offset: o || null }))} />
          </>
        )}
      </Show>
    </>
  )
}

export function CustomerTable({ caption, rows, source }: { caption: string; rows: CustomerItem[]; source?: { path: string; query: Record<string, never> | object } }) {
  return (
    <Table
      caption={caption}
      rows={rows}
      rowKey={(c) => c.profile_id}
      source={source as never}
      empty="No customers."
      columns={[
        { label: 'Customer', cell: (c) => <a href={href(`/customers/${c.profile_id}`)}>{[c.first_name, c.last_name].filter(Boolean).join(' ') || `#${c.profile_id}`}</a> },
        { label: 'E-mail', cell: (c) => c.email ?? '—' },
        { label: 'Segment', cell: (c) => c.rfm_segment ?? '—' },
        { label: 'Orders', numeric: true, cell: (c) => num(c.order_count) },
        { label: 'Spent', numeric: true, cell: (c) => money(c.historical_value) },
        { label: 'Last order', cell: (c) => date(c.last_order_date) },
        { label: 'Province', cell: (c) => c.corrected_province ?? '—' },
      ]}
    />
  )
}
