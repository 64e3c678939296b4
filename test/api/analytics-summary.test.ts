import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrate, openStore, type Store } from '../../common/store/clickhouse.ts'
import { ctxFor } from '../../services/api/analytics/router.ts'
import { ANALYTICS_ENDPOINTS, SUMMARY_QUERIES } from '../../services/api/analytics/endpoints.ts'
import { asOfSummary, MAX_AGE_MS, TenantSummaries } from '../../services/api/analytics/summary.ts'
import { createRecomputeEngine } from '../../pipelines/features/recompute.ts'
import { seedTenant } from '../../bench/features.ts'
import { silentLogger, tmpDir } from '../helpers.ts'

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
const moved: number[] = []

const endpoint = (path: string) => ANALYTICS_ENDPOINTS.find((e) => e.path === path)!
async function body(path: string, query: Record<string, string>, withSummaries: boolean) {
  const ep = endpoint(path)
  const ctx = ctxFor({ store, logger: silentLogger, now: () => clock, summaries: withSummaries ? summaries : undefined })
  return ep.body(asOfSummary(ctx, T), ep.query.parse({ tenant_id: String(T), ...query }))
}

beforeAll(async () => {
  store = await openStore({ database: 'cdp', chdbPath: tmpDir() })
  await migrate(store, silentLogger)
  await seedTenant(store, T, 400, 4000)
  await seedTenant(store, OTHER, 50, 500)
  const engine = createRecomputeEngine({ store, logger: silentLogger, partitions: 4, now: () => NOW })
  for (const t of [T, OTHER]) await engine.run(t, { analyses: ['rfm', 'clv', 'churn'], batchSize: 1000, force: true, signal: new AbortController().signal })
  summaries = new TenantSummaries({ store, logger: silentLogger, endpoints: ANALYTICS_ENDPOINTS, queries: SUMMARY_QUERIES, now: () => clock, intervalMs: 60_000, onDataMoved: (t) => moved.push(t) })
  expect(await summaries.pass()).toBe(2) // both tenants have data
}, 120_000)

afterAll(async () => {
  await summaries?.stop()
  await store?.close()
})

describe('tenant summaries', () => {
  const cases: [string, Record<string, string>][] = [
    ...SUMMARY_QUERIES.map((s): [string, Record<string, string>] => [s.path, { ...s.query }]),
    ['/api/v2/cdp/analytics/rfm', { segment: 'Champions', include_details: 'true', limit: '5' }],
    ['/api/v2/cdp/analytics/clv', { offset: '7', sort_by: 'orders' }],
    ['/api/v2/cdp/analytics/clv', { offset: '3', limit: '5' }],
    ['/api/v2/cdp/analytics/clv', { offset: '995', limit: '10' }],
    ['/api/v2/cdp/analytics/churn', { include_predictions: 'true', offset: '3' }],
  ]
  it.each(cases)('%s %j: the body from the summary equals the live body', async (path, query) => {
    expect(summaries.asOf(T)).toBe(NOW)
    expect(await body(path, query, true)).toEqual(await body(path, query, false))
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
    // A filtered request never reads the summary: it sees the new customer at once.
    const filtered = (await body('/api/v2/cdp/analytics/rfm', { segments: 'Recent Customers' }, true)) as typeof before
    const filteredLive = (await body('/api/v2/cdp/analytics/rfm', { segments: 'Recent Customers' }, false)) as typeof before
    expect(filtered).toEqual(filteredLive)

    clock = NOW + 60_000
    expect(await summaries.pass()).toBe(1) // only the tenant whose data moved
    expect(moved).toEqual([T]) // and its cached answers are dropped
    const fresh = (await body('/api/v2/cdp/analytics/rfm', {}, true)) as typeof before
    expect(fresh.data.overview.total_customers).toBe(before.data.overview.total_customers + 1)
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
