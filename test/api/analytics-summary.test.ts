import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../common/store/clickhouse.ts'
import { ctxFor } from '../../services/api/analytics/router.ts'
import { ANALYTICS_ENDPOINTS, SUMMARY_QUERIES } from '../../services/api/analytics/endpoints.ts'
import { asOfSummary, MAX_AGE_MS, TenantSummaries } from '../../services/api/analytics/summary.ts'
import { createRecomputeEngine } from '../../pipelines/features/recompute.ts'
import { seedTenant } from '../../bench/features.ts'
import { silentLogger, migratedStore } from '../helpers.ts'
import { registry } from '../../common/runtime/metrics.ts'
import { BodyWorkers } from '../../services/api/analytics/body-workers.ts'
import { analyticsRouter } from '../../services/api/analytics/router.ts'
import express from 'express'
import type { AddressInfo } from 'node:net'

/**
 * Tenant summaries answer the unfiltered overviews from precomputed rows. They must give exactly
 * the body the live queries give (at the summary's moment), be used (not silently bypassed), be
 * refreshed when the data moves, and never answer a filtered request.
 */
const T = 601
const OTHER = 602
const NOW = Date.UTC(2025, 6, 1)

let store: Store
let clock = NOW
let summaries: TenantSummaries
/** Started in the last block, after the tests of the main thread's answers. */
let workers: BodyWorkers | undefined
const moved: number[] = []

const columnarCount = () => (registry.getSingleMetric('cdp_analytics_columnar_answers_total') as unknown as { hashMap: Record<string, { value: number }> }).hashMap['']?.value ?? 0
const endpoint = (path: string) => ANALYTICS_ENDPOINTS.find((e) => e.path === path)!
async function body(path: string, query: Record<string, string>, withSummaries: boolean) {
  const ep = endpoint(path)
  const ctx = ctxFor({ store, logger: silentLogger, now: () => clock, summaries: withSummaries ? summaries : undefined })
  return ep.body(asOfSummary(ctx, T), ep.query.parse({ tenant_id: String(T), ...query }))
}

beforeAll(async () => {
  store = await migratedStore()
  await seedTenant(store, T, 400, 4000)
  await seedTenant(store, OTHER, 50, 500)
  // Demographics for most of T's customers and a registration source for some: the filtered
  // answers group and select by them.
  await store.command({
    query: `INSERT INTO customer_demographics (tenant_id, customer_id, version, estimated_age, age_segment, generation, gender, corrected_province,
                                               location_confidence, location_correction_needed, is_location_validated, issues, enriched_at)
            SELECT ${T}, number + 1, 1, if(number % 7 = 0, NULL, 18 + number % 60), ['18-24', '25-34', '35-44', '45-54', '55-64', '65+'][1 + number % 6],
                   ['Gen Z', 'Millennials', 'Gen X', 'Baby Boomers'][1 + number % 4], [NULL, 'M', 'F', 'X'][1 + number % 4],
                   if(number % 5 = 0, NULL, ['Buenos Aires', 'Córdoba', 'Santa Fe', 'Mendoza'][1 + number % 4]), 1, 0, 1, [], now()
            FROM numbers(350)`,
  })
  // Segment changes in the last months, some published twice (another event id, same content): the dashboard's movements.
  await store.command({
    query: `INSERT INTO segment_changes (tenant_id, customer_id, event_id, occurred_at, previous_segment, segment)
            SELECT ${T}, 1 + number % 400, concat('sc', toString(number), if(number % 9 = 0, 'dup', '')),
                   toDateTime64('2025-07-01 00:00:00', 3, 'UTC') - toIntervalMinute((number % 200) * 1000),
                   ['Champions', 'Loyal Customers', 'At Risk', 'Lost', 'New Customers'][1 + number % 5], ['Champions', 'At Risk', 'Hibernating'][1 + number % 3]
            FROM numbers(600)`,
  })
  await store.command({ query: `INSERT INTO segment_changes (tenant_id, customer_id, event_id, occurred_at, previous_segment, segment)
                                SELECT tenant_id, customer_id, concat(event_id, '-again'), occurred_at, previous_segment, segment FROM segment_changes WHERE tenant_id = ${T} AND customer_id % 9 = 0` })
  await store.command({ query: `ALTER TABLE customers UPDATE registration_source = if(customer_id % 3 = 0, 'marketplace', 'web'), email = if(customer_id % 4 = 0, concat('C', toString(customer_id), '@Shop.test'), email) WHERE tenant_id = ${T} AND customer_id % 2 = 0 SETTINGS mutations_sync = 2` })
  const engine = createRecomputeEngine({ store, logger: silentLogger, partitions: 4, now: () => NOW })
  for (const t of [T, OTHER]) await engine.run(t, { analyses: ['rfm', 'clv', 'churn'], batchSize: 1000, force: true, signal: new AbortController().signal })
  summaries = new TenantSummaries({
    store, logger: silentLogger, endpoints: ANALYTICS_ENDPOINTS, queries: SUMMARY_QUERIES, now: () => clock, intervalMs: 60_000, onDataMoved: (t) => moved.push(t),
    onKept: (t, s) => workers?.publish(t, s), onDropped: (t) => workers?.drop(t),
  })
  expect(await summaries.pass()).toBe(2) // both tenants have data
  // A first summary drops what was cached before it (answers computed live from older data).
  expect(moved.sort()).toEqual([T, OTHER].sort())
  moved.length = 0
}, 120_000)

afterAll(async () => {
  await workers?.close()
  await summaries?.stop()
  await store?.close()
})

const cases: [string, Record<string, string>][] = [
    ...SUMMARY_QUERIES.map((s): [string, Record<string, string>] => [s.path, { ...s.query }]),
    ['/api/v2/cdp/analytics/rfm', { segment: 'Champions', include_details: 'true', limit: '5' }],
    ['/api/v2/cdp/analytics/clv', { offset: '7', sort_by: 'orders' }],
    ['/api/v2/cdp/analytics/clv', { offset: '3', limit: '5' }],
    ['/api/v2/cdp/analytics/clv', { offset: '995', limit: '10' }],
    ['/api/v2/cdp/analytics/churn', { include_predictions: 'true', offset: '3' }],
  ]
// Filtered requests: every sub-query with a columnar twin is answered from the summary's
// customer columns; the body must equal the live body for every kind of filter.
const filtered: [string, Record<string, string>][] = [
  ['/api/v2/cdp/analytics/rfm', { min_value: '150' }],
  // Most customers selected: the columns subtract the few left out from the sums over everyone.
  ['/api/v2/cdp/analytics/rfm', { exclude_segments: 'Hibernating' }],
  ['/api/v2/cdp/analytics/rfm', { min_value: '50000' }],
  ['/api/v2/cdp/analytics/rfm', { max_value: '120000', segments: 'Champions,Loyal Customers,Hibernating,Lost' }],
  ['/api/v2/cdp/analytics/rfm', { max_value: '80.5', segments: 'Champions,Loyal Customers,At Risk' }],
  ['/api/v2/cdp/analytics/rfm', { exclude_segments: 'Champions', period: 'month' }],
  ['/api/v2/cdp/analytics/rfm', { registration_source: 'marketplace', segment: 'Champions', include_details: 'true', limit: '3' }],
  ['/api/v2/cdp/analytics/rfm', { email_domain: 'shop.test' }],
  ['/api/v2/cdp/analytics/rfm', { customer_ids: '1,2,3,5,8,13,21,34,55,89,144' }],
  ['/api/v2/cdp/analytics/rfm', { date_from: '2025-03-01', date_to: '2025-05-31' }],
  ['/api/v2/cdp/analytics/clv', { min_value: '100' }],
  ['/api/v2/cdp/analytics/clv', { exclude_segments: 'Champions' }],
  ['/api/v2/cdp/analytics/clv', { max_value: '500', tier: 'low', sort_by: 'orders', offset: '4', limit: '7' }],
  ['/api/v2/cdp/analytics/clv', { segments: 'At Risk', sort_by: 'recency', sort_order: 'asc' }],
  ['/api/v2/cdp/analytics/clv', { email_domain: 'example.com', limit: '1000' }],
  ['/api/v2/cdp/analytics/churn', { days_inactive: '40' }],
  ['/api/v2/cdp/analytics/churn', { exclude_segments: 'Champions' }],
  ['/api/v2/cdp/analytics/churn', { risk_level: 'at_risk', min_value: '50', offset: '2', limit: '5' }],
  ['/api/v2/cdp/analytics/churn', { registration_source: 'web', include_predictions: 'true' }],
  ['/api/v2/cdp/analytics/segments/performance', { min_value: '75' }],
  ['/api/v2/cdp/analytics/segments/performance', { min_value: '50000' }],
  ['/api/v2/cdp/analytics/segments/performance', { exclude_segments: 'Lost,Hibernating', period: 'quarter' }],
  ['/api/v2/cdp/analytics/dashboard', { period: 'month', min_value: '120' }],
  // Most customers selected, and those left out active in the window: everyone's sums less theirs.
  ['/api/v2/cdp/analytics/dashboard', { period: 'year', min_value: '50000' }],
  ['/api/v2/cdp/analytics/dashboard', { period: 'month', exclude_segments: 'Champions' }],
  ['/api/v2/cdp/analytics/dashboard', { period: 'year', segments: 'Champions' }],
  ['/api/v2/cdp/analytics/dashboard', { period: 'week', exclude_segments: 'Lost', max_value: '400' }],
  ['/api/v2/cdp/analytics/dashboard', { period: 'today', registration_source: 'web' }],
  ['/api/v2/cdp/analytics/rfm', { registration_source: 'nowhere' }],
  ['/api/cdp/v2/customers', { offset: '120', limit: '50' }],
  ['/api/v2/cdp/analytics/cohorts', { end_date: '2025-05-17' }],
  // Windows over every customer: the whole history's matrix less the orders at or after the end.
  ['/api/v2/cdp/analytics/cohorts', { start_date: '2023-01-01', end_date: '2025-06-10' }],
  ['/api/v2/cdp/analytics/cohorts', { period: 'weekly', start_date: '2024-09-02', end_date: '2025-04-30' }],
  ['/api/v2/cdp/analytics/cohorts', { period: 'daily', start_date: '2025-02-01', end_date: '2025-06-15' }],
  ['/api/v2/cdp/analytics/cohorts', { start_date: '2020-01-01', end_date: '2020-12-31' }],
  ['/api/v2/cdp/analytics/cohorts', { period: 'weekly', start_date: '2024-11-01', end_date: '2025-06-20', min_value: '90' }],
  ['/api/v2/cdp/analytics/cohorts', { period: 'daily', start_date: '2025-03-01', end_date: '2025-06-30', exclude_segments: 'Champions' }],
  ['/api/v2/cdp/analytics/cohorts', { start_date: '2023-07-01', end_date: '2025-06-30', registration_source: 'web' }],
  ['/api/cdp/v2/customers', { min_value: '100', offset: '5', limit: '30' }],
  ['/api/cdp/v2/customers', { registration_source: 'web', exclude_segments: 'Lost', limit: '1000' }],
  ['/api/cdp/v2/customers', { segments: 'Champions', offset: '100000' }],
]
describe('tenant summaries', () => {
  it.each(cases)('%s %j: the body from the summary equals the live body', async (path, query) => {
    expect(summaries.asOf(T)).toBe(NOW)
    expect(await body(path, query, true)).toEqual(await body(path, query, false))
  })

  it.each(filtered)('%s %j: the filtered body from the customer columns equals the live body', async (path, query) => {
    const before = columnarCount()
    expect(await body(path, query, true)).toEqual(await body(path, query, false))
    expect(columnarCount()).toBeGreaterThan(before) // answered from the columns, not silently live
  })

  it('the filtered cases have data to compare: movements, new and returning customers, a daily chart', async () => {
    const d = (await body('/api/v2/cdp/analytics/dashboard', { period: 'month', min_value: '120' }, true)) as {
      data: { segments: { movements: { upgrades: number; downgrades: number } }; trends: { revenue: { chart: number[] }; customers: { returning: number } } }
    }
    expect(d.data.segments.movements.upgrades).toBeGreaterThan(0)
    expect(d.data.segments.movements.downgrades).toBeGreaterThan(0)
    expect(d.data.trends.customers.returning).toBeGreaterThan(0)
    expect(d.data.trends.revenue.chart.filter((x) => x > 0).length).toBeGreaterThan(20)
  })

  it('are used: data written after the refresh shows only once a pass sees it moved', async () => {
    const before = (await body('/api/v2/cdp/analytics/rfm', {}, true)) as { data: { overview: { total_customers: number } } }
    await store.insert({
      table: 'customer_features',
      values: [{ tenant_id: T, customer_id: 100_000, email: 'new@t.test', frequency: 1, monetary: '10.00', segment: 'Recent Customers', rfm_score: '511', processed_at: '2025-07-01 00:00:01.000', version: 1 }],
      format: 'JSONEachRow',
    })
    const stale = (await body('/api/v2/cdp/analytics/rfm', {}, true)) as typeof before
    expect(stale.data.overview.total_customers).toBe(before.data.overview.total_customers)
    // A filtered request is selected from the summary's customer columns: as of the summary too.
    const filtered = (await body('/api/v2/cdp/analytics/rfm', { segments: 'Recent Customers' }, true)) as typeof before
    const filteredLive = (await body('/api/v2/cdp/analytics/rfm', { segments: 'Recent Customers' }, false)) as typeof before
    expect(filteredLive.data.overview.total_customers).toBe(filtered.data.overview.total_customers + 1)

    clock = NOW + 60_000
    expect(await summaries.pass()).toBe(1) // only the tenant whose data moved
    expect(moved).toEqual([T]) // and its cached answers are dropped
    const fresh = (await body('/api/v2/cdp/analytics/rfm', {}, true)) as typeof before
    expect(fresh.data.overview.total_customers).toBe(before.data.overview.total_customers + 1)
    expect(await body('/api/v2/cdp/analytics/rfm', { segments: 'Recent Customers' }, true)).toEqual(filteredLive)
    expect(fresh).toEqual(await body('/api/v2/cdp/analytics/rfm', {}, false))
    expect(await summaries.pass()).toBe(0) // nothing moved since
  })

  it('invalidate drops the summary at once, and a refresh that began before it does not bring it back', async () => {
    expect(summaries.lookup(T, 'rfm.groups')).toBeDefined()
    const pending = summaries.refresh(T)
    summaries.invalidate(T)
    await pending
    expect(summaries.asOf(T)).toBeNull()
    expect(summaries.lookup(T, 'rfm.groups')).toBeUndefined()
    await summaries.refresh(T)
    expect(summaries.asOf(T)).toBe(clock)
  })

  it('is not used once older than MAX_AGE_MS, and is refreshed as time passes', async () => {
    const asOf = summaries.asOf(T)!
    expect(summaries.lookup(T, 'rfm.groups')).toBeDefined()
    clock = asOf + MAX_AGE_MS + 1
    expect(summaries.asOf(T)).toBeNull()
    expect(summaries.lookup(T, 'rfm.groups')).toBeUndefined()
    expect(await summaries.pass()).toBe(2)
    expect(summaries.asOf(T)).toBe(clock)
  })
})

describe('body workers', () => {
  const endpointQuery = (path: string, query: Record<string, string>) => endpoint(path).query.parse({ tenant_id: String(T), ...query })
  const answersCount = async (outcome: string) => (await registry.getSingleMetric('cdp_analytics_worker_answers_total')!.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0
  let readyT = 0

  beforeAll(async () => {
    workers = new BodyWorkers({ size: 2, store, logger: silentLogger, columnsOf: (t) => summaries.columns(t) })
    await summaries.refresh(T) // published to both workers
    const until = Date.now() + 60_000
    while ((readyT = workers.ready(T)) < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
  }, 90_000)

  it('every worker prepares the summary it was given before it takes the tenant\'s requests', () => {
    expect(readyT).toBe(2)
    expect(workers!.ready(OTHER)).toBe(0) // not refreshed since the workers started: the main thread answers its requests
  })

  // Every kind of request, demographics narrowed by a filter too (its groups are a query the main thread runs for the worker).
  it.each([...cases, ...filtered, ['/api/v2/cdp/analytics/demographics', { min_value: '50' }] as [string, Record<string, string>]])('%s %j: a worker computes the body the main thread computes', async (path, query) => {
    const ran = await workers!.body(endpoint(path), endpointQuery(path, query), summaries.asOf(T)!)
    expect(ran).not.toBeNull()
    expect(JSON.stringify(ran!.body)).toBe(JSON.stringify(await body(path, query, true))) // what the answer's JSON holds, byte for byte
  })

  it('what a worker cannot answer (here an endpoint it does not know) comes back to the main thread', async () => {
    const live = await answersCount('live')
    const unknown = { ...endpoint('/api/v2/cdp/analytics/clv'), path: '/api/v2/cdp/analytics/nowhere' }
    expect(await workers!.body(unknown, endpointQuery('/api/v2/cdp/analytics/clv', {}), summaries.asOf(T)!)).toBeNull()
    expect(await answersCount('live')).toBe(live + 1)
  })

  it('a body that refuses a request in a worker (a 400 of its own) refuses it on the main thread with the same error, computed once', async () => {
    const path = '/api/v2/cdp/analytics/cohorts'
    // More daily cohorts than allowed: the body itself refuses.
    const query = { period: 'daily', start_date: '2020-01-01', end_date: '2025-06-01' }
    const refused = await answersCount('refused')
    const main: { status?: number; message?: string } = await body(path, query, true).then(() => ({}), (e: Error & { status?: number }) => ({ status: e.status, message: e.message }))
    expect(main).toMatchObject({ status: 400 })
    await expect(workers!.body(endpoint(path), endpointQuery(path, query), summaries.asOf(T)!)).rejects.toMatchObject(main)
    expect(await answersCount('refused')).toBe(refused + 1)
  })

  it('a worker that stops: the other answers meanwhile, and after a back-off another starts and prepares the summary', async () => {
    const slots = (workers as unknown as { slots: ({ worker: { terminate(): Promise<number> } } | null)[] }).slots
    await slots[0]!.worker.terminate()
    await new Promise((r) => setTimeout(r, 50)) // its exit event
    expect(workers!.ready(T)).toBe(1)
    const [path, query] = filtered[0]!
    const expected = JSON.stringify(await body(path, query, true))
    const until = Date.now() + 60_000
    let answered = 0
    while (workers!.ready(T) < 2 && Date.now() < until) {
      const ran = await workers!.body(endpoint(path), endpointQuery(path, query), summaries.asOf(T)!) // after the back-off, this starts the stopped one again
      if (ran) (answered++, expect(JSON.stringify(ran.body)).toBe(expected))
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(answered).toBeGreaterThan(0)
    expect(workers!.ready(T)).toBe(2)
  }, 90_000)

  it('through the router: a filtered request is computed in a worker, and answers what the main thread answers', async () => {
    const app = express()
    const withWorkers = analyticsRouter({ store, logger: silentLogger, now: () => clock, summaries, workers })
    const without = analyticsRouter({ store, logger: silentLogger, now: () => clock, summaries })
    app.use('/w', withWorkers)
    app.use('/m', without)
    const server = app.listen(0)
    await new Promise((r) => server.once('listening', r))
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const before = await answersCount('body')
      for (const url of [`/api/v2/cdp/analytics/clv?tenant_id=${T}&min_value=120`, `/api/v2/cdp/analytics/dashboard?tenant_id=${T}&period=month&min_value=90&format=csv`]) {
        const [w, m] = await Promise.all([fetch(base + '/w' + url), fetch(base + '/m' + url)])
        expect([w.status, w.headers.get('content-type')]).toEqual([m.status, m.headers.get('content-type')])
        expect(await w.text()).toBe(await m.text())
      }
      expect(await answersCount('body')).toBe(before + 2)
    } finally {
      await new Promise((r) => server.close(r))
    }
  })

  it('a summary dropped on the main thread is dropped in the workers: its requests go to the main thread', async () => {
    summaries.invalidate(T)
    expect(workers!.ready(T)).toBe(0)
    expect(await workers!.body(endpoint('/api/v2/cdp/analytics/clv'), endpointQuery('/api/v2/cdp/analytics/clv', { min_value: '100' }), clock)).toBeNull()
    await summaries.refresh(T)
  })

  it('closed, the workers answer nothing and the main thread answers everything', async () => {
    await workers!.close()
    expect(await workers!.body(endpoint('/api/v2/cdp/analytics/clv'), endpointQuery('/api/v2/cdp/analytics/clv', { min_value: '100' }), summaries.asOf(T)!)).toBeNull()
  })
})
