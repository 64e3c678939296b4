import type { AnalyticsEndpoint } from './endpoint.ts'
import type { SummaryQuery } from './summary.ts'
import { rfmEndpoint } from './rfm.ts'
import { clvEndpoint } from './clv.ts'
import { churnEndpoint } from './churn.ts'
import { cohortsEndpoint } from './cohorts.ts'
import { segmentPerformanceEndpoint } from './segment-performance.ts'
import { DASHBOARD_PERIODS, dashboardEndpoint } from './dashboard.ts'
import { customersEndpoint } from './customers.ts'
import { demographicsEndpoint } from './demographics.ts'

/** Every analytics endpoint; the router and the OpenAPI document are built from this list. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const ANALYTICS_ENDPOINTS: AnalyticsEndpoint<any, any>[] = [rfmEndpoint, clvEndpoint, churnEndpoint, cohortsEndpoint, segmentPerformanceEndpoint, dashboardEndpoint, demographicsEndpoint, customersEndpoint]

/** The unfiltered requests whose tenant-wide parts a tenant summary precomputes (summary.ts). */
export const SUMMARY_QUERIES: readonly SummaryQuery[] = [
  { path: rfmEndpoint.path },
  { path: clvEndpoint.path },
  { path: churnEndpoint.path },
  { path: cohortsEndpoint.path },
  { path: segmentPerformanceEndpoint.path },
  { path: demographicsEndpoint.path },
  ...DASHBOARD_PERIODS.map((period) => ({ path: dashboardEndpoint.path, query: { period } })),
]
