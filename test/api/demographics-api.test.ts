import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { openStore, type Store } from '../../common/store/clickhouse.ts'
import { runPipeline } from '../../common/runtime/pipeline.ts'
import { TOPICS } from '../../common/topics.ts'
import type { CustomerDemographics, CustomerUpserted } from '../../common/events.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import { demographicsPipeline } from '../../pipelines/demographics/pipeline.ts'
import { createApp } from '../../services/api/app.ts'
import { silentLogger, testConfig, tmpDir, uniqueName, waitFor } from '../helpers.ts'
import { expectDocumented } from './documented.ts'

/**
 * The demographics consumer (customers topic → customer_demographics and
 * cdp.customer-demographics.v1) with the issue's hand-made customers, and the demographics
 * endpoint against an independent recomputation.
 */
const NOW = Date.UTC(2025, 6, 1)
const T = 701
const OTHER = 702
const EMPTY = 703 // customers but no demographic data: 204

let store: Store
let rt: Runtime

function customer(tenant: number, id: number, over: Partial<CustomerUpserted>): CustomerUpserted {
  return {
    event_id: randomUUID(), tenant_id: tenant, occurred_at: NOW - 1000 + id, source: 'test', customer_id: id, email: `c${id}@shop.test`,
    first_name: null, last_name: 'Pérez', phone: null, national_id: null, street: null, city: null, province: null, postal_code: null,
    country: 'AR', registration_source: 'web', created_at: NOW - 86_400_000, source_ids: [], ...over,
  }
}

/** The issue's acceptance customers (CUIL check digits computed by hand: weights 5,4,3,2,7,6,5,4,3,2, 11 − sum mod 11). */
const HAND_MADE: Record<string, Partial<CustomerUpserted>> = {
  // 27-30123456-8: sum = 2·5+7·4+3·3+0·2+1·7+2·6+3·5+4·4+5·3+6·2 = 135; 135 mod 11 = 3; 11 − 3 = 8.
  cuilFemaleMaleName: { national_id: '27-30123456-8', first_name: 'Juan Carlos', city: 'Rosario', province: 'Sta Fe', postal_code: 'S2000' },
  dniWithDots: { national_id: '30.123.456', first_name: 'José María', city: 'Palermo', province: 'Capital Federal', postal_code: 'C1425ABC' },
  cordoba: { national_id: '25123456', first_name: 'María José', city: 'córdoba', province: 'Cba', postal_code: '5000' },
  foreignResident: { national_id: '62345678', first_name: 'Ana', province: 'Bs As' },
  garbage: { national_id: '30A23456', first_name: null, city: '', province: 'Atlantis', postal_code: '99999' },
  wrongCheckDigit: { national_id: '27301234560', first_name: 'Ana', city: 'Mendoza', province: 'Mendoza', postal_code: '5500' },
}

beforeAll(async () => {
  store = await openStore({ database: 'cdp', chdbPath: tmpDir() })
  rt = await openRuntime(testConfig('embedded'), silentLogger, { store })
}, 60_000)

afterAll(async () => {
  await rt?.close()
  await store?.close()
})

describe('demographics consumer', () => {
  it('enriches every customer, stores the result and publishes it; bad input leaves fields null with reasons', async () => {
    const tenant = 10_000 + Math.floor(Math.random() * 1e6)
    const names = Object.keys(HAND_MADE)
    await publishEvents(rt.log, rt.codec, 'customers', names.map((n, i) => customer(tenant, i + 1, HAND_MADE[n]!)))
    const p = await runPipeline(demographicsPipeline({ store, log: rt.log, codec: rt.codec, now: () => NOW, name: uniqueName('demo') }), { log: rt.log, codec: rt.codec, logger: silentLogger, fromBeginning: true })
    try {
      const rows = await waitFor(async () => {
        const rs = await store.query({ query: 'SELECT * FROM customer_demographics FINAL WHERE tenant_id = {t:UInt64} ORDER BY customer_id', query_params: { t: tenant }, format: 'JSONEachRow' })
        const r = await rs.json<Record<string, unknown>>()
        return r.length === names.length ? r : undefined
      }, { what: 'the enriched customers' })
      const by = Object.fromEntries(names.map((n, i) => [n, rows[i]!]))

      // CUIL prefix 27 is F even with a male first name; the DNI inside gives the age.
      expect(by.cuilFemaleMaleName).toMatchObject({ national_id_type: 'CUIL', gender: 'F', gender_source: 'cuil', estimated_age: 42, age_segment: '35-44', generation: 'Millennials', social_ads_age_range: '35_44', search_ads_age_range: '35-44', corrected_province: 'Santa Fe', corrected_city: 'Rosario', region: 'Región Centro', is_location_validated: 1 })
      expect(by.dniWithDots).toMatchObject({ national_id_type: 'DNI', gender: 'M', estimated_age: 42, corrected_province: 'Ciudad Autónoma de Buenos Aires', corrected_postal_code: 'C1425ABC', region: 'Región Metropolitana', location_correction_needed: 1, is_location_validated: 1, location_confidence: 1 })
      expect(by.cordoba).toMatchObject({ gender: 'F', estimated_age: 49, age_segment: '45-54', generation: 'Generación X', corrected_city: 'Córdoba', corrected_province: 'Córdoba', region: 'Región Centro', is_location_validated: 1 })
      expect(by.foreignResident).toMatchObject({ estimated_age: null, age_segment: null, gender: 'F', corrected_province: 'Buenos Aires', is_location_validated: 0 })
      expect(by.foreignResident!.issues).toContain('national_id_foreign_resident')
      expect(by.garbage).toMatchObject({ national_id_type: null, estimated_age: null, gender: null, corrected_province: null, region: null, location_confidence: 0, is_location_validated: 0 })
      expect(by.garbage!.issues).toEqual(expect.arrayContaining(['national_id_not_numeric', 'province_unknown', 'city_empty']))
      expect(by.wrongCheckDigit).toMatchObject({ estimated_age: null, gender: 'F', gender_source: 'first_name', region: 'Región Cuyo' })
      expect(by.wrongCheckDigit!.issues).toContain('national_id_invalid_check_digit')

      // The same results on the output topic, one per customer; the national id is never published.
      const seen: CustomerDemographics[] = []
      const raw: Buffer[] = []
      const consumer = await rt.log.consume({
        groupId: uniqueName('demo-out'),
        topics: [TOPICS.customerDemographics.name],
        fromBeginning: true,
        async onBatch(batch) {
          for (const r of batch.records) {
            const e = await rt.codec.decode<CustomerDemographics>(TOPICS.customerDemographics.name, r.value)
            if (e.tenant_id === tenant) (seen.push(e), raw.push(r.value!))
          }
        },
      })
      try {
        await waitFor(async () => seen.length >= names.length, { what: 'the demographics events' })
      } finally {
        await consumer.stop()
      }
      for (const v of raw) expect(v.toString('latin1')).not.toMatch(/30123456|25123456|62345678/)
      const e = seen.find((x) => x.customer_id === 1)!
      expect(e).toMatchObject({ gender: 'F', estimated_age: 42, region: 'Región Centro', is_location_validated: true, source: 'cdp.demographics' })
    } finally {
      await p.stop()
    }
  })
})

// ------------------------------------------------------------------------------------------
// The endpoint, on hand-made rows.

interface Person {
  id: number
  age: number | null
  gender: 'M' | 'F' | 'U' | null
  province: string | null
  region: string | null
  monetary: number
  orders: number
  tier: string | null
  segment: string | null
}
const seg = (age: number | null) => (age === null ? null : age >= 55 ? '55+' : age >= 45 ? '45-54' : age >= 35 ? '35-44' : age >= 25 ? '25-34' : age >= 18 ? '18-24' : null)
const GEN: Record<string, string> = { '18-24': 'Generación Z', '25-34': 'Millennials/Gen Z', '35-44': 'Millennials', '45-54': 'Generación X', '55+': 'Baby Boomers' }
const SOCIAL: Record<string, string> = { '18-24': '18_24', '25-34': '25_34', '35-44': '35_44', '45-54': '45_54', '55+': '55_plus' }
const search = (age: number) => (age >= 65 ? '65+' : age >= 55 ? '55-64' : seg(age)!)
const PEOPLE: Person[] = [
  { id: 1, age: 22, gender: 'F', province: 'Buenos Aires', region: 'Región Metropolitana', monetary: 100, orders: 1, tier: 'low', segment: 'Recent Customers' },
  { id: 2, age: 30, gender: 'M', province: 'Córdoba', region: 'Región Centro', monetary: 900, orders: 6, tier: 'high', segment: 'Champions' },
  { id: 3, age: 33, gender: 'F', province: 'Córdoba', region: 'Región Centro', monetary: 500, orders: 4, tier: 'medium', segment: 'Champions' },
  { id: 4, age: 41, gender: 'F', province: 'Buenos Aires', region: 'Región Metropolitana', monetary: 300, orders: 2, tier: 'low', segment: 'At Risk' },
  { id: 5, age: 58, gender: 'M', province: 'Mendoza', region: 'Región Cuyo', monetary: 200, orders: 3, tier: 'high', segment: 'Lost' },
  { id: 6, age: 70, gender: 'U', province: null, region: null, monetary: 50, orders: 1, tier: 'low', segment: 'Hibernating' },
  { id: 7, age: null, gender: 'M', province: 'Buenos Aires', region: 'Región Metropolitana', monetary: 0, orders: 0, tier: null, segment: null },
  { id: 8, age: null, gender: null, province: null, region: null, monetary: 40, orders: 1, tier: 'low', segment: 'Lost' }, // no demographics row at all
]

let server: http.Server
let base = ''
const ADMIN = 'admin-token-for-demographics-tests'

async function get(path: string) {
  const res = await fetch(base + path, { headers: { authorization: `Bearer ${ADMIN}` } })
  const text = await res.text()
  const body = text ? JSON.parse(text) : null
  expectDocumented('GET', res.url, res.status, body ?? undefined, res.headers.get('content-type')) // against its documented schema (documented.ts)
  return { status: res.status, body, text }
}

describe('GET /api/v2/cdp/analytics/demographics', () => {
  beforeAll(async () => {
    const feature = (tenant: number, p: Person) => ({
      tenant_id: tenant, customer_id: p.id, email: `p${p.id}@t.test`, frequency: p.orders, monetary: p.monetary.toFixed(2), historical_value: p.monetary.toFixed(2),
      // The order history (orders are counted from it; frequency counts purchase days): p.orders orders on distinct days.
      order_times: Array.from({ length: p.orders }, (_, i) => Date.UTC(2025, 0, 1 + i)), order_cents: Array.from({ length: p.orders }, () => 100),
      segment: p.segment, rfm_score: p.segment ? '333' : null, clv_tier: p.tier, processed_at: '2025-07-01 00:00:00.000', version: 1,
    })
    const demo = (tenant: number, p: Person) => {
      const s = seg(p.age)
      return {
        tenant_id: tenant, customer_id: p.id, version: 1, estimated_age: p.age, age_segment: s, generation: s ? GEN[s] : null,
        social_ads_age_range: s ? SOCIAL[s] : null, search_ads_age_range: p.age !== null && s ? search(p.age) : null, gender: p.gender,
        corrected_province: p.province, region: p.region, location_confidence: p.province ? 1 : 0, issues: [], enriched_at: '2025-07-01 00:00:00.000',
      }
    }
    await store.insert({ table: 'customer_features', format: 'JSONEachRow', values: [...PEOPLE.map((p) => feature(T, p)), feature(OTHER, PEOPLE[1]!), feature(EMPTY, PEOPLE[0]!)] })
    await store.insert({ table: 'customers', format: 'JSONEachRow', values: [T, OTHER, EMPTY].map((t) => ({ tenant_id: t, customer_id: 1, email: 'x@t.test', updated_at: '2025-07-01 00:00:00.000', version: 1 })) })
    await store.insert({
      table: 'customer_demographics',
      format: 'JSONEachRow',
      // Customer 8 not enriched; the other tenant's row must never count.
      values: [...PEOPLE.filter((p) => p.id !== 8).map((p) => demo(T, p)), demo(OTHER, { ...PEOPLE[1]!, age: 80 })],
    })
    const app = createApp({
      logger: silentLogger, log: {} as EventLog, codec: {} as EventCodec, readiness: [],
      analytics: { store, logger: silentLogger, now: () => NOW },
      auth: { adminToken: ADMIN, keys: { verify: async () => null } },
    })
    server = app.listen(0)
    await new Promise((r) => server.once('listening', r))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise((r) => server?.close(r))
  })

  /** The expected body, recomputed from PEOPLE by plain loops (the definitions of docs/demographics.md). */
  function expected(people: Person[]) {
    const r2 = (x: number) => Math.round(x * 100) / 100
    const avgOf = (xs: number[]) => (xs.length ? r2(xs.reduce((a, b) => a + b, 0) / xs.length) : null)
    const pctOf = (n: number, d: number) => (d ? r2((100 * n) / d) : 0)
    const ages = (ps: Person[]) => ps.filter((p) => p.age !== null).map((p) => p.age!)
    const total = people.length
    const withAge = people.filter((p) => p.age !== null).length
    const withSeg = people.filter((p) => seg(p.age) !== null).length
    const withGender = people.filter((p) => p.gender !== null).length
    const located = people.filter((p) => p.province !== null)
    return {
      summary: {
        total_customers: total, customers_with_age: withAge, customers_with_gender: withGender, customers_with_location: located.length,
        overall_avg_age: avgOf(ages(people)), completion_rates: { age: pctOf(withAge, total), gender: pctOf(withGender, total), location: pctOf(located.length, total) },
      },
      age_analysis: ['18-24', '25-34', '35-44', '45-54', '55+'].map((s) => {
        const ps = people.filter((p) => seg(p.age) === s)
        return {
          age_segment: s, generation: GEN[s], customer_count: ps.length, avg_age: avgOf(ages(ps)), avg_spent: avgOf(ps.map((p) => p.monetary)) ?? 0,
          avg_orders: avgOf(ps.map((p) => p.orders)) ?? 0, high_value_customers: ps.filter((p) => p.tier === 'high').length,
          male_count: ps.filter((p) => p.gender === 'M').length, female_count: ps.filter((p) => p.gender === 'F').length, percentage: pctOf(ps.length, withSeg),
        }
      }),
      gender_analysis: (['M', 'F', 'U', null] as const).map((g) => {
        const ps = people.filter((p) => p.gender === g)
        return {
          gender_label: g ? { M: 'Masculino', F: 'Femenino', U: 'Unisex/Otro' }[g] : 'Sin datos',
          gender_code: g, customer_count: ps.length, avg_spent: avgOf(ps.map((p) => p.monetary)) ?? 0, avg_orders: avgOf(ps.map((p) => p.orders)) ?? 0,
          avg_age: avgOf(ages(ps)), champions: ps.filter((p) => p.segment === 'Champions').length,
          millennials_core: ps.filter((p) => ['25-34', '35-44'].includes(seg(p.age) ?? '')).length, percentage: pctOf(ps.length, total),
        }
      }),
    }
  }

  it('answers the spec shape with numbers equal to a recomputation by hand', async () => {
    const { status, body } = await get(`/api/v2/cdp/analytics/demographics?tenant_id=${T}`)
    expect(status).toBe(200)
    expect(Object.keys(body).sort()).toEqual(['data', 'metadata', 'success'])
    expect(Object.keys(body.data).sort()).toEqual(['age_analysis', 'cross_demographic', 'gender_analysis', 'geographic_analysis', 'marketing_segments', 'summary', 'timestamp'])
    const want = expected(PEOPLE)
    expect(body.data.summary).toEqual(want.summary)
    // Hand-checked: 8 customers; ages 22, 30, 33, 41, 58, 70 → 42.33; genders of 1..7 (U counts); located 1, 2, 3, 4, 5, 7.
    expect(body.data.summary).toEqual({ total_customers: 8, customers_with_age: 6, customers_with_gender: 7, customers_with_location: 6, overall_avg_age: 42.33, completion_rates: { age: 75, gender: 87.5, location: 75 } })
    expect(body.data.age_analysis).toEqual(want.age_analysis)
    expect(body.data.age_analysis[1]).toEqual({ age_segment: '25-34', generation: 'Millennials/Gen Z', customer_count: 2, avg_age: 31.5, avg_spent: 700, avg_orders: 5, high_value_customers: 1, male_count: 1, female_count: 1, percentage: 33.33 })
    expect(body.data.gender_analysis).toEqual(want.gender_analysis)
    expect(body.data.gender_analysis[0]).toMatchObject({ gender_label: 'Masculino', gender_code: 'M', customer_count: 3, champions: 1, millennials_core: 1, avg_age: 44 })
    expect(body.data.geographic_analysis).toEqual([
      { province: 'Buenos Aires', region: 'Región Metropolitana', customer_count: 3, avg_spent: 133.33, avg_orders: 1, avg_age: 31.5, male_count: 1, female_count: 2, percentage: 50 },
      { province: 'Córdoba', region: 'Región Centro', customer_count: 2, avg_spent: 700, avg_orders: 5, avg_age: 31.5, male_count: 1, female_count: 1, percentage: 33.33 },
      { province: 'Mendoza', region: 'Región Cuyo', customer_count: 1, avg_spent: 200, avg_orders: 3, avg_age: 58, male_count: 1, female_count: 0, percentage: 16.67 },
    ])
    expect(body.data.cross_demographic).toEqual([
      { age_segment: '18-24', gender: 'F', region: 'Región Metropolitana', customer_count: 1, avg_spent: 100, avg_orders: 1 },
      { age_segment: '25-34', gender: 'F', region: 'Región Centro', customer_count: 1, avg_spent: 500, avg_orders: 4 },
      { age_segment: '25-34', gender: 'M', region: 'Región Centro', customer_count: 1, avg_spent: 900, avg_orders: 6 },
      { age_segment: '35-44', gender: 'F', region: 'Región Metropolitana', customer_count: 1, avg_spent: 300, avg_orders: 2 },
      { age_segment: '55+', gender: 'M', region: 'Región Cuyo', customer_count: 1, avg_spent: 200, avg_orders: 3 },
    ])
    expect(body.data.marketing_segments).toEqual([
      { social_ads_age_range: '18_24', search_ads_age_range: '18-24', gender: 'F', targetable_customers: 1, avg_spent: 100, high_value: 0 },
      { social_ads_age_range: '25_34', search_ads_age_range: '25-34', gender: 'F', targetable_customers: 1, avg_spent: 500, high_value: 0 },
      { social_ads_age_range: '25_34', search_ads_age_range: '25-34', gender: 'M', targetable_customers: 1, avg_spent: 900, high_value: 1 },
      { social_ads_age_range: '35_44', search_ads_age_range: '35-44', gender: 'F', targetable_customers: 1, avg_spent: 300, high_value: 0 },
      { social_ads_age_range: '55_plus', search_ads_age_range: '55-64', gender: 'M', targetable_customers: 1, avg_spent: 200, high_value: 1 },
      { social_ads_age_range: '55_plus', search_ads_age_range: '65+', gender: 'U', targetable_customers: 1, avg_spent: 50, high_value: 0 },
    ])
    expect(body.data.timestamp).toBe('2025-07-01T00:00:00.000')
  })

  it('the alias path answers the same; results are cached 15 minutes (Cache-Control on the overview)', async () => {
    const a = await get(`/api/v2/cdp/analytics/demographics?tenant_id=${T}`)
    const b = await get(`/api/cdp/v2/analytics/demographics?tenant_id=${T}`)
    expect(b.status).toBe(200)
    expect(b.body).toEqual(a.body)
  })

  it('the filters narrow the customers; generation accepts the short English labels', async () => {
    const f = await get(`/api/v2/cdp/analytics/demographics?tenant_id=${T}&gender=F&region=Centro`)
    expect(f.status).toBe(200)
    expect(f.body.data.summary).toEqual(expected(PEOPLE.filter((p) => p.gender === 'F' && p.region === 'Región Centro')).summary)
    const g = await get(`/api/v2/cdp/analytics/demographics?tenant_id=${T}&generation=Boomers`)
    expect(g.body.data.summary.total_customers).toBe(2) // 58 and 70
    // A filter that matches nobody: 200 with zeros, not the 204 of a tenant without data.
    const none = await get(`/api/v2/cdp/analytics/demographics?tenant_id=${T}&gender=U&region=Cuyo`)
    expect(none.status).toBe(200)
    expect(none.body.data.summary).toMatchObject({ total_customers: 0, customers_with_age: 0, overall_avg_age: null })
    const a = await get(`/api/v2/cdp/analytics/demographics?tenant_id=${T}&age_segment=25-34`)
    expect(a.body.data.age_analysis.map((r: { customer_count: number }) => r.customer_count)).toEqual([0, 2, 0, 0, 0])
  })

  it('422 for a filter value outside the allowed set, 400 for other bad parameters and for an unknown tenant, 204 without demographic data', async () => {
    for (const q of ['gender=X', 'age_segment=10-17', 'region=Antarctica', 'generation=Silent']) {
      const r = await get(`/api/v2/cdp/analytics/demographics?tenant_id=${T}&${q}`)
      expect(r.status, q).toBe(422)
      expect(r.body).toMatchObject({ success: false, error: 'Invalid filter value', details: { errors: [expect.objectContaining({ path: q.split('=')[0] })] } })
    }
    expect((await get(`/api/v2/cdp/analytics/demographics?tenant_id=abc`)).status).toBe(400)
    const unknown = await get(`/api/v2/cdp/analytics/demographics?tenant_id=999999`)
    expect(unknown.status).toBe(400)
    expect(unknown.body).toMatchObject({ success: false, error: 'Tenant not found' })
    const empty = await get(`/api/v2/cdp/analytics/demographics?tenant_id=${EMPTY}`)
    expect(empty.status).toBe(204)
    expect(empty.text).toBe('')
  })

  it('the customer list carries the demographic fields', async () => {
    const { status, body } = await get(`/api/cdp/v2/customers?tenant_id=${T}&limit=3`)
    expect(status).toBe(200)
    expect(body.data.customers[1]).toMatchObject({ profile_id: '2', estimated_age: 30, inferred_gender: 'M', age_segment: '25-34', generation: 'Millennials/Gen Z', social_ads_age_range: '25_34', search_ads_age_range: '25-34', corrected_province: 'Córdoba', region: 'Región Centro', location_confidence: 1 })
  })
})
