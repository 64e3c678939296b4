/**
 * A bounded schemathesis run against the service as `cdp start` runs it (embedded runtime), with
 * every third-party platform served by its simulator: property-based requests generated from
 * /openapi.json (examples, coverage of every parameter's bounds, fuzzing), each answer checked:
 * no server error (5xx), and the answer matches the schema its operation documents for its status.
 * The run's summary is printed in the test output, its JUnit report left in .cache/schemathesis.
 *
 * schemathesis comes from the venv at .venv (CI's .ci/run installs it there with
 * confluent-kafka). Without it the test fails on CI and is skipped, with a message, elsewhere.
 *
 * Left out: the platforms' webhooks (/webhooks/*: signed by the platform, so every generated
 * request is refused before its body is read; test/api/bad-input.test.ts and the audience-sync
 * tests cover them).
 */
import { afterAll, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { start as startAds } from '../../services/simulators/ads-platform/index.ts'
import { start as startCommerce } from '../../services/simulators/commerce-platform/index.ts'
import { start as startMarketplace } from '../../services/simulators/marketplace/index.ts'
import { start as startSearchAds } from '../../services/simulators/search-ads/index.ts'
import { cdp, freePort, killChildren } from '../cdp-process.ts'
import { tmpDir, waitFor } from '../helpers.ts'

const ROOT = path.resolve(import.meta.dirname, '../..')
const ST = path.join(ROOT, '.venv', 'bin', 'st')
const REPORT_DIR = path.join(ROOT, '.cache', 'schemathesis')
const hasSt = fs.existsSync(ST)
const onCi = !['', '0', 'false'].includes((process.env.CI ?? '').toLowerCase())
const ADMIN = 'schemathesis-admin-token-0123456789'
/** Seconds of generated requests: bounded, so the suite stays well inside CI's budget. */
const BUDGET_S = Number(process.env.CDP_SCHEMATHESIS_SECONDS ?? 90)

if (!hasSt && !onCi) console.warn(`[schemathesis] skipped: ${ST} is missing. Create it with: python3 -m venv .venv && .venv/bin/pip install schemathesis`)

const closers: (() => Promise<unknown>)[] = []
afterAll(async () => {
  await killChildren()
  for (const c of closers.reverse()) await c().catch(() => {})
})

describe('schemathesis against the running service', () => {
  it.skipIf(!hasSt && !onCi)('no server error and no answer outside its documented schema', { timeout: 600_000 }, async () => {
    const ads = await startAds({ tokens: ['EAAB-schemathesis-token'], adAccounts: ['act_1000000001'] })
    const shop = await startCommerce({})
    const market = await startMarketplace({})
    const search = await startSearchAds({})
    closers.push(() => ads.close(), () => shop.close(), () => market.close(), () => search.close())
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const limit = '1000000'
    cdp('schemathesis-target', ['start'], {
      CDP_DATA_DIR: path.join(tmpDir('cdp-schemathesis-'), 'data'),
      CDP_ROLES: 'api',
      CDP_API_PORT: String(port),
      CDP_ADMIN_TOKEN: ADMIN,
      CDP_SECRETS_KEYS: `k1:${'3'.repeat(64)}`,
      LOG_LEVEL: 'error',
      CDP_RATE_LIMIT_ANALYTICS_PER_MINUTE: limit,
      CDP_RATE_LIMIT_OPERATIONS_PER_MINUTE: limit,
      CDP_RATE_LIMIT_JOBS_PER_MINUTE: limit,
      CDP_RATE_LIMIT_DEMOGRAPHICS_PER_15MIN: limit,
      CDP_ADS_API_BASE_URL: ads.url,
      CDP_ADS_APP_ACCESS_TOKEN: ads.appAccessToken,
      CDP_CONNECTORS_COMMERCE_PLATFORM_URL: shop.url,
      CDP_CONNECTORS_MARKETPLACE_URL: market.url,
      CDP_CONNECTORS_SEARCH_ADS_URL: search.url,
      CDP_CONNECTORS_SOCIAL_ADS_URL: ads.url,
    })
    await waitFor(async () => (await fetch(`${base}/health`).catch(() => null))?.ok, { what: 'the service', timeoutMs: 120_000, intervalMs: 250 })

    fs.mkdirSync(REPORT_DIR, { recursive: true })
    const junit = path.join(REPORT_DIR, 'junit.xml')
    const args = [
      'run', `${base}/openapi.json`,
      '--header', `Authorization: Bearer ${ADMIN}`,
      '--checks', 'not_a_server_error,response_schema_conformance',
      '--exclude-path-regex', '^/webhooks/',
      '--phases', 'examples,coverage,fuzzing',
      '--max-examples', '25',
      '--max-time', String(BUDGET_S),
      '--seed', '20261126',
      '--workers', '2',
      '--no-shrink',
      '--generation-database', 'none',
      '--request-timeout', '30',
      '--report', 'junit', '--report-junit-path', junit,
      '--no-color',
    ]
    const result = await new Promise<{ code: number; out: string }>((resolve) => {
      // Run from the report directory: schemathesis keeps its cache (.schemathesis/) in the working directory.
      execFile(ST, args, { cwd: REPORT_DIR, timeout: (BUDGET_S + 240) * 1000, maxBuffer: 64 << 20, env: { ...process.env, NO_COLOR: '1' } }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: `${stdout}\n${stderr}` })
      })
    })
    const summary = result.out.slice(Math.max(0, result.out.lastIndexOf('\n', result.out.lastIndexOf('SUMMARY'))))
    const failures = result.out.includes('FAILURES') ? result.out.slice(result.out.indexOf('FAILURES'), result.out.lastIndexOf('SUMMARY')) : ''
    // The whole output goes to a file; the log gets a digest without schemathesis' pytest-style
    // "==== 1 error, 2 warnings in 90s ====" banners, which CI would read as the run's closing line.
    const outputFile = path.join(REPORT_DIR, 'output.txt')
    fs.writeFileSync(outputFile, result.out)
    const digest = `${failures}${summary}`.split('\n').filter((line) => !/^=+( .* =+)?$/.test(line.trim())).join('\n')
    console.info(`[schemathesis] exit ${result.code}; JUnit report ${junit}; output ${outputFile}\n${digest}`)
    // Failures are what the two checks found; the exit code is 1 for those and also for
    // schemathesis' own "Runtime Error"s: Debian 12's Python 3.11.2 raises "AST constructor
    // recursion depth mismatch" (CPython issue 106905, fixed in 3.11.5) inside hypothesis now and
    // then while it describes a strategy, which says nothing about the service. They are reported,
    // not failed on; a run too hollow to mean anything is.
    const generated = Number(/(\d+) generated/.exec(result.out)?.[1] ?? 0)
    expect(generated, 'test cases schemathesis generated').toBeGreaterThan(1000)
    expect(result.out, failures).not.toMatch(/^Failures:/m)
    expect(result.out).not.toMatch(/Server error/)
    expect(result.out).not.toMatch(/Response violates schema/)
    const internal = result.out.match(/Runtime Error/g)?.length ?? 0
    if (internal) console.warn(`[schemathesis] ${internal} internal generation error(s) of schemathesis itself (see above); not failures of the service`)
  })
})
