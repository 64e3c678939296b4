import { CommonQuery } from './options.ts'
import type { AnalyticsEndpoint } from './endpoint.ts'

// Placeholder until this endpoint is implemented.
export const cohortsEndpoint: AnalyticsEndpoint = {
  path: '/api/v2/cdp/analytics/cohorts',
  summary: '',
  query: CommonQuery.strict(),
  overview: true,
  cacheTtlMs: 0,
  async body() {
    return { success: true, data: {} }
  },
}
