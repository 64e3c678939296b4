import { describe, expect, it } from 'vitest'
import { documentedOperation, expectDocumented } from './documented.ts'

/** The answer check itself: it must refuse what the document does not describe. */
describe('expectDocumented', () => {
  const ok = { success: true, data: { accepted: 1, event_ids: ['e1'] } }
  const error = { success: false, error: 'Invalid events', details: { errors: [{ index: 0, path: 'total', code: 'negative_total', message: 'x' }] } }

  it('finds the operation as Express matches it, static segments before parameters', () => {
    expect(documentedOperation('GET', 'http://h/api/v2/tenant-integrations/health').op.operationId).toBe('tenantIntegrationsHealth')
    expect(documentedOperation('GET', '/api/v2/tenant-integrations/12').op.operationId).toBe('listTenantIntegrations')
    expect(documentedOperation('GET', '/API/cdp/v2/analytics/demographics?tenant_id=1').path).toBe('/api/cdp/v2/analytics/demographics')
    expect(() => documentedOperation('PATCH', '/api/v2/tenant-integrations/12')).toThrow(/not a documented operation/)
    expect(() => documentedOperation('GET', '/nowhere')).toThrow(/not a documented operation/)
  })

  it('accepts documented answers, including the shared 401 and 429', () => {
    expectDocumented('POST', '/api/v2/cdp/ingest/orders', 202, ok)
    expectDocumented('POST', '/api/v2/cdp/ingest/orders', 400, error)
    expectDocumented('POST', '/api/v2/cdp/ingest/orders', 401, { success: false, error: 'Unauthorized', details: 'send Authorization: Bearer <api key>' })
    expectDocumented('GET', '/api/v2/cdp/analytics/rfm', 429, { success: false, error: 'Too many requests', details: { code: 'RATE_LIMIT_EXCEEDED', limit: 1, window_seconds: 60, retry_after: 3 } })
    expectDocumented('GET', '/metrics', 200, '# HELP x\n', 'text/plain; version=0.0.4; charset=utf-8')
  })

  it('refuses a status, a media type or a body the document does not describe', () => {
    expect(() => expectDocumented('POST', '/api/v2/cdp/ingest/orders', 200, ok)).toThrow(/200 is not documented/)
    expect(() => expectDocumented('POST', '/api/v2/cdp/ingest/orders', 429, error)).toThrow(/429 is not documented/)
    expect(() => expectDocumented('GET', '/health', 401, error)).toThrow(/401 is not documented/)
    expect(() => expectDocumented('POST', '/api/v2/cdp/ingest/orders', 202, ok, 'text/plain')).toThrow(/text\/plain is not documented/)
    expect(() => expectDocumented('POST', '/api/v2/cdp/ingest/orders', 202, { ...ok, extra: 1 })).toThrow(/does not match/)
    expect(() => expectDocumented('POST', '/api/v2/cdp/ingest/orders', 202, { success: true, data: { accepted: '1', event_ids: [] } })).toThrow(/does not match/)
    expect(() => expectDocumented('POST', '/api/v2/cdp/ingest/orders', 400, { ...error, success: true })).toThrow(/does not match/)
    expect(() => expectDocumented('POST', '/api/v2/cdp/ingest/orders', 202, undefined)).toThrow(/answered without one/)
    expect(() => expectDocumented('GET', '/api/v2/cdp/analytics/demographics', 204, undefined)).not.toThrow()
  })

  it('checks export answers: the media types of the 200, and a JSON export against its documented rows or tables', () => {
    const row = { customer_id: 1, email: 'a@b.c', r_score: 5, f_score: 5, m_score: 5, rfm_score: '555', segment: 'Champions', recency_days: 3, frequency: 2, monetary: 10, last_order_date: '2025-06-01', processed_at: '2025-06-15T10:00:00.000Z' }
    expectDocumented('GET', '/api/v2/cdp/analytics/rfm?format=json', 200, [row], 'application/json; charset=utf-8')
    expectDocumented('GET', '/api/v2/cdp/analytics/rfm?format=csv', 200, '\uFEFFcustomer_id\r\n', 'text/csv; charset=utf-8')
    expectDocumented('GET', '/api/v2/cdp/analytics/dashboard?format=excel', 200, Buffer.from('PK'), 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet')
    expectDocumented('GET', '/api/v2/cdp/analytics/dashboard?format=json', 200, { daily: [{ date: '2025-06-15', revenue: 1 }], kpis: [{ kpi: 'total_customers', value: 3 }] })
    expect(() => expectDocumented('GET', '/api/v2/cdp/analytics/rfm?format=json', 200, [{ ...row, r_score: 6 }])).toThrow(/does not match/)
    expect(() => expectDocumented('GET', '/api/v2/cdp/analytics/rfm?format=json', 200, [{ ...row, extra: 1 }])).toThrow(/does not match/)
    expect(() => expectDocumented('GET', '/api/v2/cdp/analytics/dashboard?format=json', 200, { daily: [] })).toThrow(/does not match/)
    expect(() => expectDocumented('GET', '/api/v2/cdp/analytics/dashboard?format=json', 200, { daily: [], kpis: [{ kpi: 'nps', value: 1 }] })).toThrow(/does not match/)
    expect(() => expectDocumented('GET', '/api/v2/cdp/analytics/cohorts?format=pdf', 200, 'x', 'application/pdf')).toThrow(/application\/pdf is not documented/)
  })
})
