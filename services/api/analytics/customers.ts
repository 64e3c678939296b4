import { CommonQuery } from './options.ts'
import type { AnalyticsEndpoint } from './endpoint.ts'

// Placeholder until this endpoint is implemented.
export const customersEndpoint: AnalyticsEndpoint = {
  path: '/api/cdp/v2/customers',
  summary: '',
  query: CommonQuery.strict(),
  overview: true,
  cacheTtlMs: 0,
  async body() {
    return { success: true, data: {} }
  },
}
