/**
 * GET /api/v2/cdp/analytics/clv/validation: the prediction-quality report through the API, on
 * CDNOW stored as a tenant's orders (the figures lifetimes gives: test/features/prediction-quality.test.ts)
 * and on a hand-made tenant for the refusals.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../common/store/clickhouse.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { TenantSettingsStore } from '../../common/store/tenant-settings.ts'
import { createApp } from '../../services/api/app.ts'
import { silentLogger, serve, migratedStore } from '../helpers.ts'
import { within } from '../cdnow.ts'
import { readDocumented } from './documented.ts'

const SAMPLE = path.resolve(import.meta.dirname, '../../../shared/data/clv/CDNOW_sample.txt')
const haveSample = fs.existsSync(SAMPLE)
const CDNOW = 801
const SMALL = 802
const NOW = Date.UTC(2025, 5, 15, 12)

let store: Store
let closeServer: (() => Promise<void>) | undefined
let base: string

const orderRow = (tenant: number, customer: number, id: string, placed: string, total: number) => ({
  tenant_id: tenant, customer_id: customer, order_id: id, last_event_id: id, status: 'paid', total: total.toFixed(2), refunded_amount: null, currency: 'USD',
  items_count: 1, placed_at: `${placed} 12:00:00.000`, updated_at: `${placed} 12:00:00.000`, is_cancelled: 0, source: 'test', version: 1,
})

beforeAll(async () => {
  store = await migratedStore()
  if (haveSample) {
    const rows = fs
      .readFileSync(SAMPLE, 'utf8')
      .split(/\r?\n/)
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => f.length === 5)
      // A $0 purchase is still a purchase to the models: a cent keeps it counting.
      .map(([, id, d, , dollars], i) => orderRow(CDNOW, Number(id), `cd${i}`, `${d!.slice(0, 4)}-${d!.slice(4, 6)}-${d!.slice(6, 8)}`, Math.max(0.01, Number(dollars))))
    await store.insert({ table: 'orders', values: rows, format: 'JSONEachRow' })
    const settings = new TenantSettingsStore(store)
    await settings.put({ ...(await settings.get(CDNOW)), reference_date: '1998-06-30' })
  }
  await store.insert({
    table: 'orders',
    values: [orderRow(SMALL, 1, 's1', '2025-01-05', 40), orderRow(SMALL, 1, 's2', '2025-03-01', 40), orderRow(SMALL, 2, 's3', '2025-02-10', 90), orderRow(SMALL, 3, 's4', '2025-05-20', 15)],
    format: 'JSONEachRow',
  })
  const app = createApp({ logger: silentLogger, log: {} as EventLog, codec: {} as EventCodec, readiness: [], analytics: { store, logger: silentLogger, now: () => NOW } })
  ;({ base, close: closeServer } = await serve(app))
}, 120_000)

afterAll(async () => {
  await closeServer?.()
  await store?.close()
})

const get = async (p: string) => readDocumented('GET', await fetch(base + p))

describe.skipIf(!haveSample)('prediction quality through the API, on CDNOW stored as a tenant', () => {
  it('BG/NBD: per bucket the holdout counts lifetimes has, the predictions within 1 %; the holdout ends at the tenant\'s reference date', async () => {
    const { status, body, headers } = await get(`/api/v2/cdp/analytics/clv/validation?tenant_id=${CDNOW}&calibration_end=1997-09-30&model=bgnbd`)
    expect(status).toBe(200)
    expect(headers.get('x-reference-date')).toBe('1998-06-30')
    const r = body.data
    expect(r).toMatchObject({ model: 'bgnbd', method: 'maximum_likelihood', calibration: { end: '1997-09-30', customers: 2357 }, holdout: { start: '1997-10-01', end: '1998-06-30', days: 273 } })
    expect(r.purchases.buckets.map((b: any) => b.actual_purchases)).toEqual([334, 306, 298, 156, 157, 112, 112, 407])
    const lifetimes = [317.5982, 229.6546, 223.4447, 152.028, 134.1597, 100.8461, 101.6172, 394.0602]
    r.purchases.buckets.forEach((b: any, i: number) => within(b.predicted_purchases, lifetimes[i]!, 0.01))
    within(r.purchases.totals.predicted_purchases, 1653.40872418, 0.01)
    expect(body.metadata).toMatchObject({ reference_date: '1998-06-30', reference_date_setting: '1998-06-30' })
    // The tenant's default model answers without `model`.
    expect((await get(`/api/v2/cdp/analytics/clv/validation?tenant_id=${CDNOW}&calibration_end=1997-09-30`)).body.data.model).toBe('mbgnbd')
  })
})

describe('prediction quality: small tenants and refusals', () => {
  it('a small tenant is validated with the reference prior; refusals say why', async () => {
    const ok = await get(`/api/v2/cdp/analytics/clv/validation?tenant_id=${SMALL}&calibration_end=2025-02-28`)
    expect(ok.status).toBe(200)
    expect(ok.body.data).toMatchObject({ method: 'reference_prior', calibration: { customers: 2 }, purchases: { totals: { customers: 2, actual_purchases: 1 } } })
    const late = await get(`/api/v2/cdp/analytics/clv/validation?tenant_id=${SMALL}&calibration_end=2025-06-15`)
    expect([late.status, late.body.error]).toEqual([400, 'Validation not possible'])
    const early = await get(`/api/v2/cdp/analytics/clv/validation?tenant_id=${SMALL}&calibration_end=2024-01-01`)
    expect([early.status, early.body.error]).toEqual([400, 'Validation not possible'])
    for (const q of ['', `tenant_id=${SMALL}`, `tenant_id=${SMALL}&calibration_end=2025-02-30`, `tenant_id=${SMALL}&calibration_end=2025-02-28&model=pareto`, `tenant_id=x&calibration_end=2025-02-28`]) {
      const r = await get(`/api/v2/cdp/analytics/clv/validation?${q}`)
      expect([r.status, r.body.error], q).toEqual([400, 'Invalid query parameters'])
    }
    expect((await get(`/api/v2/cdp/analytics/clv/validation?tenant_id=999999&calibration_end=2025-02-28`)).status).toBe(404)
  })
})
