import type { AnalyticsEndpoint } from './endpoint.ts'
import { rfmEndpoint } from './rfm.ts'
import { clvEndpoint } from './clv.ts'
import { churnEndpoint } from './churn.ts'
import { cohortsEndpoint } from './cohorts.ts'
import { segmentPerformanceEndpoint } from './segment-performance.ts'
import { dashboardEndpoint } from './dashboard.ts'
import { customersEndpoint } from './customers.ts'

/** Every analytics endpoint; the router and the OpenAPI document are built from this list. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const ANALYTICS_ENDPOINTS: AnalyticsEndpoint<any, any>[] = [rfmEndpoint, clvEndpoint, churnEndpoint, cohortsEndpoint, segmentPerformanceEndpoint, dashboardEndpoint, customersEndpoint]
