import { describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { tmpDir, waitFor } from '../helpers.ts'

const CDP = path.resolve(import.meta.dirname, '../../bin/cdp.mjs')

/**
 * `npm run demo` with its defaults (no tick or summary interval shortened), started twice on one
 * data dir; stopped once `until` is done and its log has `logged` (when given).
 */
async function demo(dataDir: string, until: (url: string, key: string, admin: string) => Promise<void>, logged?: string) {
  // The test asks six overviews four times a second: far past the 100 analytics requests a minute
  // of a key (spec "Limits"), which answered 429 until the minute was over. What is measured here is
  // when the data shows, so the limit is lifted for this run.
  const child = spawn('node', [CDP, 'start', '--demo', '--api-port', '0'], { env: { ...process.env, CDP_DATA_DIR: dataDir, LOG_LEVEL: 'info', NODE_ENV: 'development', CDP_RATE_LIMIT_ANALYTICS_PER_MINUTE: '100000' } })
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)))
  try {
    const url = await waitFor(async () => /"url":"(http:[^"]+)"/.exec(out)?.[1], { what: 'the API url', timeoutMs: 90_000 })
    const key = await waitFor(async () => /Demo API key for tenant 1[^\n]*\n\s+(\S+)/.exec(out)?.[1], { what: 'the printed demo key', timeoutMs: 30_000 })
    await until(url, key, fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim())
    if (logged) await waitFor(async () => out.includes(logged), { what: `"${logged}" in the log`, timeoutMs: 90_000 })
  } finally {
    child.kill('SIGTERM')
  }
  expect(await exited).toBe(0)
  return out
}

describe('npm run demo', () => {
  it('shows the demo in every overview within seconds, and a second start on the same data is quiet and adds nothing twice', async () => {
    const dataDir = path.join(tmpDir(), 'data')
    const started = Date.now()
    const first = await demo(dataDir, async (url, key) => {
      const shown: Record<string, number> = {}
      const count = async (ep: string) => {
        const res = await fetch(`${url}/api/v2/cdp/analytics/${ep}?tenant_id=1`, { headers: { authorization: `Bearer ${key}` } })
        if (res.status === 429) throw new Error(`${ep}: 429 rate limited, the measurement would wait for the window`)
        const b = (await res.json()) as { data: Record<string, unknown> }
        if (ep === 'segments/performance') return (b.data.segments as { metrics: { size: number } }[]).reduce((s, x) => s + x.metrics.size, 0)
        if (ep === 'dashboard') return (b.data.kpis as { total_customers: number }).total_customers
        if (ep === 'cohorts') return (b.data.cohorts as unknown[]).length
        return (b.data.overview as { total_customers: number }).total_customers
      }
      const endpoints = ['rfm', 'clv', 'churn', 'segments/performance', 'dashboard', 'cohorts']
      await waitFor(
        async () => {
          for (const ep of endpoints) if (!(ep in shown) && (await count(ep)) > 0) shown[ep] = (Date.now() - started) / 1000
          return Object.keys(shown).length === endpoints.length
        },
        { what: 'every overview showing the demo', timeoutMs: 90_000, intervalMs: 250 },
      )
      console.log(`[demo-at-once] seconds from start until each overview shows the demo: ${JSON.stringify(shown)}`)
      // The issue asks 15 s on a developer machine; a loaded CI gets twice that.
      for (const ep of endpoints) expect(shown[ep], ep).toBeLessThan(30)
      // The overviews may show the demo before its last events are streamed: the second start
      // below must find all of them there.
    }, 'demo: all events streamed')
    expect(first).toContain('demo: all events streamed')

    // Again on the same data: no error in its log, and still one integration of each type for tenant 2.
    const second = await demo(dataDir, async (url, _key, admin) => {
      const r = await waitFor(
        async () => {
          const res = await fetch(`${url}/api/v2/tenant-integrations/2`, { headers: { authorization: `Bearer ${admin}` } })
          const b = (await res.json()) as { data: { integration_type: string }[] }
          return res.ok && b.data.length >= 2 ? b.data : undefined
        },
        { what: "tenant 2's integrations", timeoutMs: 60_000 },
      )
      expect(r.map((i) => i.integration_type).sort()).toEqual(['commerce_platform', 'marketplace'])
    })
    const errors = second.split('\n').filter((l) => l.startsWith('{') && (JSON.parse(l) as { level: number }).level >= 50)
    expect(errors, errors.join('\n')).toEqual([])
  }, 300_000)
})
