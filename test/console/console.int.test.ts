import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchChromium } from '../../bench/browser.ts'
import { tmpDir, waitFor } from '../helpers.ts'

/**
 * The console in a real browser (Debian's Chromium, playwright-core) against `cdp start --demo`:
 * sign-in with the printed key, what each page shows against the API's own answers, an audience
 * sync created through the console reaching the API and the ads simulator, an integration's sync
 * started by an admin, a wrong key refused, and axe-core on every page. A screenshot of each page
 * goes to test-results/console/.
 */
const ROOT = path.resolve(import.meta.dirname, '../..')
const CDP = path.join(ROOT, 'bin/cdp.mjs')
const SHOTS = path.join(ROOT, 'test-results/console')
const DEMO_ADS_TOKEN = 'EAAB-demo-ads-token' // cli/demo.ts: the simulator's one valid token
const DEMO_AD_ACCOUNT = 'act_1000000001'

let child: ChildProcess
let url = ''
let key = ''
let admin = ''
let adsUrl = ''
let browser: Browser
let out = ''
/** Uncaught errors of the pages (each test ends with none). */
const pageErrors: string[] = []

const api = async <T>(p: string, token = key): Promise<T> => {
  const r = await fetch(url + p, { headers: { authorization: `Bearer ${token}` } })
  if (!r.ok) throw new Error(`${p}: ${r.status} ${await r.text()}`)
  return (await r.json()) as T
}

async function signedIn(token = key): Promise<{ context: BrowserContext; page: Page }> {
  // bypassCSP: axe-core is injected as an inline script, which the console's own policy refuses.
  const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, bypassCSP: true })
  const page = await context.newPage()
  page.on('pageerror', (e) => pageErrors.push(e.message))
  await page.goto(`${url}/console/`)
  await page.getByLabel('API key').fill(token)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 30_000 })
  return { context, page }
}

/** axe-core's serious and critical violations on the page as it is (id and where). */
async function accessibility(page: Page): Promise<string[]> {
  const source = fs.readFileSync(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8')
  await page.addScriptTag({ content: source })
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: { id: string; impact: string | null; nodes: { target: unknown[] }[] }[] }> } }).axe
    const r = await axe.run(document, { resultTypes: ['violations'] })
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, where: v.nodes.slice(0, 3).map((n) => String(n.target)) }))
  })
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}) at ${v.where.join(', ')}`)
}

/** Waits until nothing on the page is loading any more. */
async function settled(page: Page): Promise<void> {
  await page.waitForLoadState('networkidle')
  await page.locator('.state.loading').first().waitFor({ state: 'detached', timeout: 30_000 }).catch(() => undefined)
  await expect.poll(() => page.locator('.state.loading').count(), { timeout: 30_000 }).toBe(0)
}

/**
 * Loads `path` and checks it against the API's own answer until the two agree (at most a minute):
 * the demo's feature ticks and summary refreshes may fall between the two reads.
 */
async function untilAgreed(page: Page, path: string, what: string, check: () => Promise<{ agreed: boolean; detail: string }>): Promise<void> {
  let last = ''
  await waitFor(
    async () => {
      await page.goto(url + path)
      await settled(page)
      const r = await check()
      last = r.detail
      return r.agreed ? true : undefined
    },
    { what, timeoutMs: 60_000, intervalMs: 1000 },
  ).catch((e: Error) => {
    throw new Error(`${e.message}: ${last}`)
  })
}

async function shoot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SHOTS, { recursive: true })
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true })
}

beforeAll(async () => {
  // The console as it is in the sources (npm install built it once; a change since is rebuilt here).
  execFileSync('node', [path.join(ROOT, 'services/console/build.mjs')], { stdio: 'pipe' })
  browser = await launchChromium()
  const dataDir = path.join(tmpDir(), 'data')
  child = spawn('node', [CDP, 'start', '--demo', '--api-port', '0'], {
    env: { ...process.env, CDP_DATA_DIR: dataDir, LOG_LEVEL: 'info', CDP_FEATURES_TICK_MS: '2000', CDP_AUDIENCE_SYNC_WINDOW_MS: '1000', CDP_AUDIENCE_SYNC_PACING_MS: '200', CDP_ANALYTICS_SUMMARY_INTERVAL_MS: '2000', NODE_ENV: 'development' },
  })
  child.stdout!.on('data', (d) => (out += d))
  child.stderr!.on('data', (d) => (out += d))
  url = await waitFor(async () => /"url":"(http:[^"]+)"/.exec(out)?.[1], { what: 'the API url', timeoutMs: 60_000 })
  key = await waitFor(async () => /Demo API key for tenant 1[^\n]*\n\s+(\S+)/.exec(out)?.[1], { what: 'the printed demo key', timeoutMs: 30_000 })
  adsUrl = await waitFor(async () => /Ads platform simulator at (http:\S+):/.exec(out)?.[1], { what: 'the ads simulator url', timeoutMs: 30_000 })
  admin = fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim()
  await waitFor(async () => out.includes('demo: all events streamed'), { what: 'the demo stream', timeoutMs: 120_000 })
  await waitFor(
    async () => {
      const r = await api<{ data: { pagination: { total: number } } }>('/api/cdp/v2/customers?tenant_id=1&limit=1')
      return r.data.pagination.total >= 2000
    },
    { what: 'the demo customers', timeoutMs: 120_000, intervalMs: 1000 },
  ).catch((e: Error) => {
    throw new Error(`${e.message}\n${out.slice(-4000)}`)
  })
}, 300_000)

afterAll(async () => {
  await browser?.close()
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGTERM')
    await exited
  }
})

afterEach(() => {
  expect(pageErrors.splice(0)).toEqual([])
})

describe('the console in a real browser', () => {
  it('refuses a wrong key, and answers every other /console path with the page', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(`${url}/console/segments`)
    await page.getByLabel('API key').fill('not-a-real-key-1234567890')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 15_000 }).toContain('the API key is unknown or revoked')
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0)
    expect((await context.cookies()).map((c) => c.name)).not.toContain('cdp_session')
    await shoot(page, 'sign-in-refused')
    await context.close()
  })

  it('signs in with the printed key: an HttpOnly, SameSite=Strict cookie, the key nowhere in the page', async () => {
    const { context, page } = await signedIn()
    const cookie = (await context.cookies()).find((c) => c.name === 'cdp_session')
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' })
    expect(cookie!.value).not.toContain(key)
    expect(await page.content()).not.toContain(key)
    // Keyboard: the first Tab reaches the skip link, which moves the focus to the page's content.
    await page.keyboard.press('Tab')
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content')
    await page.keyboard.press('Enter')
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('main')
    expect(await page.title()).toBe('Overview · cdp console')
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByLabel('API key').waitFor()
    expect((await context.cookies()).map((c) => c.name)).not.toContain('cdp_session')
    await context.close()
  })

  it('shows the segment counts the API answers, and every page passes axe-core with no serious violation', async () => {
    const { context, page } = await signedIn()
    const problems: Record<string, string[]> = {}
    for (const [name, p] of [
      ['overview', '/console/'],
      ['segments', '/console/segments'],
      ['segment-customers', '/console/segments/Champions'],
      ['customer', '/console/customers/5'],
      ['value-and-churn', '/console/value'],
      ['cohorts', '/console/cohorts'],
      ['demographics', '/console/demographics'],
      ['audiences', '/console/audiences'],
      ['integrations', '/console/integrations'],
    ] as const) {
      await page.goto(url + p)
      await settled(page)
      expect(await page.locator('.state.error').count(), `${name} shows an error`).toBe(0)
      await shoot(page, name)
      const v = await accessibility(page)
      if (v.length) problems[name] = v
    }
    expect(problems).toEqual({})

    // The counts: the table on /segments against GET /rfm.
    await untilAgreed(page, '/console/segments', 'the segment counts shown equal to the API', async () => {
      const shown = await page.locator('table', { has: page.locator('caption', { hasText: /^Segments$/ }) }).locator('tbody tr').evaluateAll((rows) => rows.map((r) => [r.children[0]!.textContent!.trim(), Number(r.children[1]!.textContent!.replace(/[^\d]/g, ''))]))
      const rfm = await api<{ data: { distribution: { segment: string; customer_count: number }[] } }>('/api/v2/cdp/analytics/rfm?tenant_id=1')
      const expected = rfm.data.distribution.map((d) => [d.segment, d.customer_count])
      return { agreed: shown.length === 11 && JSON.stringify(shown) === JSON.stringify(expected), detail: `shown ${JSON.stringify(shown)}, API ${JSON.stringify(expected)}` }
    })
    await context.close()
  }, 240_000)

  it('draws one heatmap row per cohort, the CLV histogram and the at-risk list', async () => {
    const { context, page } = await signedIn()
    await untilAgreed(page, '/console/cohorts', 'one heatmap row per cohort of the API', async () => {
      const rows = await page.locator('[data-testid=cohort-heatmap] tbody tr th').allTextContents()
      const cohorts = (await api<{ data: { cohorts: { cohort: string }[] } }>('/api/v2/cdp/analytics/cohorts?tenant_id=1&period=monthly')).data.cohorts.map((c) => c.cohort)
      return { agreed: rows.length > 0 && JSON.stringify(rows) === JSON.stringify(cohorts), detail: `shown ${JSON.stringify(rows)}, API ${JSON.stringify(cohorts)}` }
    })
    await untilAgreed(page, '/console/value', 'the CLV histogram and the at-risk list of the API', async () => {
      const bars = await page.locator('[data-chart="Customers by CLV tier"] svg rect').count()
      const churn = await api<{ data: { at_risk_customers: { customer_id: number }[] } }>('/api/v2/cdp/analytics/churn?tenant_id=1&limit=50')
      const shown = await page.locator('table', { has: page.locator('caption', { hasText: 'At-risk customers' }) }).locator('tbody tr td:first-child a').evaluateAll((as) => as.map((a) => a.getAttribute('href')))
      const expected = churn.data.at_risk_customers.map((c) => `/console/customers/${c.customer_id}`)
      return { agreed: bars >= 3 && expected.length > 0 && JSON.stringify(shown) === JSON.stringify(expected), detail: `${bars} bars; at-risk shown ${shown.length}, API ${expected.length}` }
    })
    await context.close()
  }, 120_000)

  it('creates an "At Risk" audience sync that the API lists and the ads simulator holds', async () => {
    const { context, page } = await signedIn()
    await page.goto(`${url}/console/audiences`)
    await settled(page)
    await page.getByLabel('Segment').selectOption('At Risk')
    await page.getByLabel('Name (optional)').fill('Console: At Risk')
    await page.getByLabel('Ad account').fill(DEMO_AD_ACCOUNT)
    await page.getByLabel('Access token').fill(DEMO_ADS_TOKEN)
    await page.getByRole('button', { name: 'Create the sync' }).click()
    await expect.poll(() => page.getByRole('status').allTextContents(), { timeout: 30_000 }).toContainEqual(expect.stringContaining('Created "Console: At Risk"'))
    await page.locator('table tbody tr', { hasText: 'Console: At Risk' }).waitFor()

    type Sync = { name: string; segment: string; audience: { id: string | null; approximate_count: number | null } | null }
    const sync = await waitFor(
      async () => (await api<{ data: Sync[] }>('/api/v2/cdp/audience-syncs?tenant_id=1')).data.find((s) => s.name === 'Console: At Risk' && s.audience?.id),
      { what: 'the sync with its platform audience', timeoutMs: 90_000, intervalMs: 1000 },
    )
    expect(sync.segment).toBe('At Risk')
    const onPlatform = await fetch(`${adsUrl}/v18.0/${sync.audience!.id}?fields=name,approximate_count&access_token=${DEMO_ADS_TOKEN}`)
    expect(onPlatform.status).toBe(200)
    expect(((await onPlatform.json()) as { id: string }).id).toBe(sync.audience!.id)
    await context.close()
  }, 150_000)

  it('lets the admin switch to tenant 2 and start a sync of one of its integrations', async () => {
    const { context, page } = await signedIn(admin)
    const switcher = page.getByLabel('Tenant')
    await expect.poll(() => switcher.locator('option').allTextContents(), { timeout: 15_000 }).toEqual(expect.arrayContaining([expect.stringContaining('(#2)')]))
    await switcher.selectOption('2')
    await page.getByRole('button', { name: 'Switch' }).click()
    await page.waitForURL(/tenant=2/)
    await page.getByRole('link', { name: 'Integrations' }).click()
    await settled(page)
    const integrations = await api<{ data: { id: number; integration_type: string }[] }>('/api/v2/tenant-integrations/2', admin)
    const target = integrations.data[0]!
    await page.getByRole('link', { name: new RegExp(`^${target.integration_type.replace(/_/g, ' ')} · `) }).click()
    await settled(page)
    // Every link keeps the tenant the admin chose.
    expect(new URL(page.url()).searchParams.get('tenant')).toBe('2')
    expect(new URL(page.url()).searchParams.get('integration')).toBe(String(target.id))
    await page.getByRole('button', { name: 'Start a full sync' }).click()
    const message = await expect
      .poll(async () => (await page.getByRole('status').allTextContents()).find((t) => /^Sync \S+ queued/.test(t)), { timeout: 30_000 })
      .toBeTruthy()
      .then(async () => (await page.getByRole('status').allTextContents()).find((t) => /^Sync \S+ queued/.test(t))!)
    const syncId = /^Sync (\S+) queued/.exec(message)![1]!
    // The sync the console started runs: it is in the integration's history, and the console shows it there.
    await waitFor(
      async () => ((await api<{ data: { sync_id: string }[] }>(`/api/v2/tenant-integrations/integration/${target.id}/syncs`, admin)).data.some((r) => r.sync_id === syncId) ? true : undefined),
      { what: `sync ${syncId} in the history`, timeoutMs: 90_000, intervalMs: 1000 },
    )
    await page.getByRole('button', { name: 'Refresh' }).click()
    const shownIds = page.locator('table', { has: page.locator('caption', { hasText: 'Sync history' }) }).locator('tbody tr code')
    await expect.poll(() => shownIds.allTextContents(), { timeout: 15_000 }).toContain(syncId.slice(0, 13))
    await settled(page)
    await shoot(page, 'integration-sync-started')
    expect(await accessibility(page)).toEqual([]) // the admin's header (tenant switcher) and the integration's detail
    await context.close()
  }, 150_000)
})
