/**
 * Acceptance on a real shop's history (the UCI Online Retail invoices, Dec 2010 – Dec 2011), as a
 * new user would run it: `cdp start`, `cdp import` with the export's own column names and
 * `--currency GBP`, the tenant set to `reference_date=data_end`, a processing run. Then, as of
 * 2011-12-09: the churn levels equal an independent count from the file; the MBG/NBD fit and the
 * expected purchases equal lifetimes' (fitted with observation_period_end at the data's end, on
 * the same 18,528 invoices: the 4 with a genuine fraction of a cent are rejected); churn
 * probability agrees with the levels; no potential loss exceeds the value had the customer stayed
 * active. Switched back to `now`, the tenant ages as today; `as_of` answers one request as of
 * another day without changing the setting.
 */
import { afterEach, describe, expect, inject, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { openStore } from '../../common/store/clickhouse.ts'
import { cdp, freePort, killChildren, startServer } from '../cdp-process.ts'
import { tmpDir, waitFor } from '../helpers.ts'

afterEach(killChildren)

const RETAIL = path.resolve(import.meta.dirname, '../../../shared/data/retail/online_retail_invoices.csv')
const TENANT = 77
const TOKEN = 'retail-acceptance-admin-token-0123456789'
const DAY = 86_400_000
const END_DAY = Date.UTC(2011, 11, 9) / DAY

/**
 * lifetimes 0.11.3, ModifiedBetaGeoFitter (penalizer 0) on summary_data_from_transaction_data(…,
 * observation_period_end='2011-12-09', freq='D') of the file without the 4 invoices whose total
 * has a fraction of a cent (550193, 561226, 568200, 568375); expected purchases over 365.25 days
 * (our 12-month horizon). Script: test/third-party/retail_lifetimes.py (all invoices).
 */
const LIFETIMES = {
  customers: 4337,
  mbgnbd: { r: 0.8266354448941974, alpha: 68.97409425925858, a: 0.0018496757251381076, b: 11.941105196926763 },
  expected: { 12347: 5.716964426662125, 14911: 108.87796674351327 } as Record<number, number>,
  sumExpected: 18961.227779185796,
}

const within = (got: number, want: number, rel = 0.005) => expect(Math.abs(got - want), `${got} vs ${want}`).toBeLessThanOrEqual(rel * Math.abs(want))

/** The file read independently: each customer's purchase days (invoices with a whole-cent total). */
function purchaseDays(): Map<number, Set<number>> {
  const out = new Map<number, Set<number>>()
  for (const line of fs.readFileSync(RETAIL, 'utf8').trim().split('\n').slice(1)) {
    const [, date, customer, total] = line.split(',')
    const frac = total!.split('.')[1] ?? ''
    if (frac.length > 2 && !/^\d\d(0000|9999)/.test(frac)) continue // refused: a fraction of a cent
    const c = Number(customer)
    if (!out.has(c)) out.set(c, new Set())
    out.get(c)!.add(Date.parse(`${date}T00:00:00Z`) / DAY)
  }
  return out
}

function levelOf(days: number): string {
  return days < 30 ? 'active' : days < 60 ? 'at_risk' : days <= 90 ? 'churning' : 'churned'
}

describe.skipIf(!fs.existsSync(RETAIL))('a real shop history (UCI Online Retail; skipped without ../shared/data/retail)', () => {
  it('imported with mapped columns and aged to its data end: levels, fits and losses that agree', { timeout: 400_000 }, async () => {
    const dir = tmpDir('cdp-retail-')
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    const ch = inject('clickhouseUrl')
    const env = {
      CDP_RUNTIME: 'embedded',
      CDP_DATA_DIR: path.join(dir, 'data'),
      CDP_API_PORT: String(port),
      CDP_METRICS_PORT: '0',
      CDP_ADMIN_TOKEN: TOKEN,
      CDP_ANALYTICS_CACHE_ENTRIES: '0',
      LOG_LEVEL: 'warn',
      ...(ch ? { CLICKHOUSE_URL: ch } : {}),
    }
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }
    const api = async (method: string, p: string, body?: unknown) => {
      const r = await fetch(`${url}${p}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
      return { status: r.status, body: (await r.json()) as any }
    }
    const churn = async (query = '') => (await api('GET', `/api/v2/cdp/analytics/churn?tenant_id=${TENANT}${query}`)).body

    const server = await startServer('server', env, url)
    const imp = cdp(
      'import',
      ['import', RETAIL, '--tenant', String(TENANT), '--kind', 'orders', '--columns', 'order_id=InvoiceNo,occurred_at=InvoiceDate,customer_id=CustomerID,total=TotalPrice', '--currency', 'GBP', '--rejects', path.join(dir, 'rejects.jsonl')],
      env,
    )
    const done = await imp.waitExit(300_000)
    expect(done.code, imp.log()).toBe(0)
    const summary = JSON.parse(imp.out.trim().split('\n').at(-1)!)
    expect(summary).toMatchObject({ accepted: 18_528, rejected: 4 })
    const rejects = fs.readFileSync(path.join(dir, 'rejects.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    expect(rejects.map((r) => r.raw.split(',')[0]).sort()).toEqual(['550193', '561226', '568200', '568375'])
    expect(rejects.every((r) => r.errors[0].code === 'too_many_decimals')).toBe(true)

    const days = purchaseDays()
    expect(days.size).toBe(LIFETIMES.customers)
    await waitFor(async () => (await churn()).data?.overview?.total_customers === days.size || undefined, { what: `${days.size} scored customers`, timeoutMs: 180_000, intervalMs: 500 })
    // Aged against today, a history that ended in 2011 is all churned.
    expect((await churn()).data.overview.distribution.churned.count).toBe(days.size)

    const put = await api('PUT', `/api/v2/cdp/tenants/${TENANT}/settings`, { reference_date: 'data_end', tenant_name: 'Online Retail UK' })
    expect(put.status).toBe(200)
    expect(put.body.data).toMatchObject({ currency: 'GBP', reference_date: 'data_end', effective_reference_date: '2011-12-09' })
    const run = await api('POST', `/api/v2/cdp/process/${TENANT}`, { analyses: ['rfm', 'clv', 'churn'], force: true })
    expect(run.status).toBe(200)
    expect(run.body.metadata).toEqual({ reference_date: '2011-12-09', reference_date_setting: 'data_end', reference_date_source: 'setting', clv_model: 'mbgnbd', clv_method: 'maximum_likelihood' })

    // Churn levels as of 2011-12-09 equal a count from the file.
    const expected: Record<string, number> = { active: 0, at_risk: 0, churning: 0, churned: 0 }
    for (const d of days.values()) expected[levelOf(END_DAY - Math.max(...d))]!++
    const asOfEnd = await churn()
    expect(asOfEnd.metadata.reference_date).toBe('2011-12-09')
    const dist = asOfEnd.data.overview.distribution
    expect({ active: dist.active.count, at_risk: dist.at_risk.count, churning: dist.churning.count, churned: dist.churned.count }).toEqual(expected)

    // One request as of mid-2011: only the customers who had bought by then, the setting unchanged.
    const mid = Date.UTC(2011, 5, 30) / DAY
    const byMid = [...days.values()].filter((d) => Math.min(...d) <= mid).length
    const asOf = await churn('&as_of=2011-06-30')
    expect(asOf.metadata).toEqual({ reference_date: '2011-06-30', reference_date_setting: '2011-06-30', reference_date_source: 'as_of' })
    expect(asOf.data.overview.total_customers).toBe(byMid)
    expect((await api('GET', `/api/v2/cdp/tenants/${TENANT}/settings`)).body.data.reference_date).toBe('data_end')

    server.proc.kill('SIGTERM')
    await server.waitExit(60_000)

    // The stored fit and rows, read with the server stopped (one chdb process per path).
    const store = await openStore(ch ? { url: ch, database: 'cdp' } : { database: 'cdp', chdbPath: path.join(dir, 'data', 'clickhouse') })
    try {
      const q = async <T>(query: string) => (await store.query({ query, query_params: { t: TENANT }, format: 'JSONEachRow' })).json<T>()
      const [model] = await q<{ model: string }>('SELECT model FROM tenant_models FINAL WHERE tenant_id = {t:UInt64}')
      const clv = JSON.parse(model!.model).clv
      expect(clv.model).toBe('mbgnbd')
      for (const k of ['r', 'alpha', 'a', 'b'] as const) within(clv.params[k], LIFETIMES.mbgnbd[k])
      const rows = await q<{ customer_id: number; churn_risk: string; churn_probability: number; purchase_days: number; expected_purchases: number; potential_loss: number; predicted_value: number; p_alive: number }>(
        'SELECT customer_id, churn_risk, churn_probability, purchase_days, expected_purchases, potential_loss, predicted_value, p_alive FROM customer_features FINAL WHERE tenant_id = {t:UInt64} AND churn_risk IS NOT NULL',
      )
      expect(rows.length).toBe(days.size)
      for (const [id, want] of Object.entries(LIFETIMES.expected)) within(rows.find((r) => r.customer_id === Number(id))!.expected_purchases, want)
      within(rows.reduce((s, r) => s + r.expected_purchases, 0), LIFETIMES.sumExpected)

      // Churn probability agrees with the levels: means rise strictly, and no churned repeat buyer
      // is below the median active customer.
      const levels = ['active', 'at_risk', 'churning', 'churned']
      const mean = (l: string) => {
        const xs = rows.filter((r) => r.churn_risk === l).map((r) => r.churn_probability)
        return xs.reduce((a, b) => a + b, 0) / xs.length
      }
      const means = levels.map(mean)
      for (let i = 1; i < means.length; i++) expect(means[i]!, `${levels[i]} after ${levels[i - 1]}: ${means}`).toBeGreaterThan(means[i - 1]!)
      const active = rows.filter((r) => r.churn_risk === 'active').map((r) => r.churn_probability).sort((a, b) => a - b)
      const medianActive = active[Math.floor(active.length / 2)]!
      const churnedRepeat = rows.filter((r) => r.churn_risk === 'churned' && r.purchase_days > 1).map((r) => r.churn_probability)
      expect(churnedRepeat.length).toBeGreaterThan(100)
      expect(Math.min(...churnedRepeat)).toBeGreaterThanOrEqual(medianActive)
      // predicted_value = P(alive) × the 12-month value if active; the loss is at most that value.
      for (const r of rows) if (r.p_alive > 0.001) expect(r.potential_loss, `customer ${r.customer_id}`).toBeLessThanOrEqual(r.predicted_value / r.p_alive + 0.01)
    } finally {
      await store.close()
    }

    // Back to now: the tenant ages as today.
    const again = await startServer('server-2', env, url)
    expect((await api('PUT', `/api/v2/cdp/tenants/${TENANT}/settings`, { reference_date: 'now' })).status).toBe(200)
    const before = new Date().toISOString().slice(0, 10)
    const used = (await api('POST', `/api/v2/cdp/process/${TENANT}`, { analyses: ['churn'], force: true })).body.metadata.reference_date
    expect([before, new Date().toISOString().slice(0, 10)]).toContain(used)
    expect((await churn()).data.overview.distribution.churned.count).toBe(days.size)
    again.proc.kill('SIGTERM')
    await again.waitExit(60_000)
  })
})
