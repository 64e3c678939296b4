/**
 * `cdp bench console` (npm run bench:console): the console's size and first load.
 *
 * 1. Builds the console (`services/console/build.mjs`, as `npm install` does) and sums its files,
 *    raw and gzipped (zlib level 6, what a compressing proxy sends). Target: < 300 KB gzipped.
 * 2. Starts `cdp start --demo` in a temporary folder (or uses `--url` and `--key` of a running
 *    one), waits for the demo's customers, then opens the overview in Debian's Chromium
 *    (playwright-core) `--runs` times, each in a fresh browser context (empty cache, a new
 *    session): the time from navigation start to the first chart drawn (an `svg` inside
 *    `[data-chart]`), read from the page's own clock. Target: < 1 s on localhost.
 *
 * Progress on stderr; a table and one JSON line on stdout.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { launchChromium } from './browser.ts'
import { benchFlags, intFlag, loadAverages, machineInfo, noteLoad, percentile, progress } from './common.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const DIST = path.join(ROOT, 'services/console/dist')
const BUNDLE_TARGET_KB = 300
const FIRST_CHART_TARGET_MS = 1000

const FLAGS = {
  runs: { type: 'string' },
  url: { type: 'string' },
  key: { type: 'string' },
  help: { type: 'boolean' },
} as const

const HELP = `usage: cdp bench console [--runs N] [--url URL --key KEY]

Builds the console and prints its size (raw and gzipped), then times the overview's first chart
in Debian's Chromium, each run in a fresh browser context, against \`cdp start --demo\` (started
here in a temporary folder unless --url and --key name a running one).

  --runs N     page loads to time (default 7)
  --url URL    a running API (e.g. http://127.0.0.1:8080) instead of a demo started here
  --key KEY    an API key of tenant 1 there (with --url)

Progress on stderr; a table and one JSON line on stdout.
`

const kb = (bytes: number) => Math.round(bytes / 102.4) / 10

function bundleSizes(): { files: { file: string; bytes: number; gzip: number }[]; bytes: number; gzip: number } {
  const files: { file: string; bytes: number; gzip: number }[] = []
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name)
      if (e.isDirectory()) walk(p)
      else {
        const body = fs.readFileSync(p)
        files.push({ file: path.relative(DIST, p), bytes: body.length, gzip: zlib.gzipSync(body, { level: 6 }).length })
      }
    }
  }
  walk(DIST)
  return { files, bytes: files.reduce((s, f) => s + f.bytes, 0), gzip: files.reduce((s, f) => s + f.gzip, 0) }
}

async function startDemo(): Promise<{ url: string; key: string; child: ChildProcess }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdp-bench-console-'))
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/cdp.mjs'), 'start', '--demo', '--api-port', '0'], { env: { ...process.env, CDP_DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout!.on('data', (d) => (out += d))
  child.stderr!.on('data', (d) => (out += d))
  const until = async <T>(what: string, f: () => Promise<T | undefined> | T | undefined, ms = 180_000): Promise<T> => {
    const end = Date.now() + ms
    for (;;) {
      const v = await f()
      if (v !== undefined) return v
      if (child.exitCode !== null) throw new Error(`the demo exited while waiting for ${what}:\n${out.slice(-3000)}`)
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}:\n${out.slice(-3000)}`)
      await new Promise((r) => setTimeout(r, 500))
    }
  }
  const url = await until('the API', () => /"url":"(http:[^"]+)"/.exec(out)?.[1])
  const key = await until('the demo key', () => /Demo API key for tenant 1[^\n]*\n\s+(\S+)/.exec(out)?.[1])
  progress(`demo at ${url}; waiting for its customers`)
  await until('the demo customers', async () => {
    const r = await fetch(`${url}/api/cdp/v2/customers?tenant_id=1&limit=1`, { headers: { authorization: `Bearer ${key}` } }).catch(() => null)
    if (!r?.ok) return undefined
    return ((await r.json()) as { data: { pagination: { total: number } } }).data.pagination.total >= 2000 ? true : undefined
  })
  return { url, key, child }
}

export async function run(argv: string[]): Promise<number> {
  const flags = benchFlags(argv, FLAGS, HELP)
  if (!flags) return 0
  const runs = intFlag(flags.runs, 'runs', 7)
  const machine = machineInfo()
  const loadAtStart = loadAverages()
  noteLoad(loadAtStart, machine.cpus)

  progress('building the console')
  const b0 = performance.now()
  execFileSync(process.execPath, [path.join(ROOT, 'services/console/build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] })
  const buildMs = performance.now() - b0
  const sizes = bundleSizes()

  const demo = flags.url ? null : await startDemo()
  const url = flags.url ?? demo!.url
  const key = flags.key ?? demo!.key
  if (!key) throw new Error('--url needs --key')
  const browser = await launchChromium()
  const times: number[] = []
  try {
    for (let i = 0; i < runs; i++) {
      const context = await browser.newContext({ viewport: { width: 1366, height: 900 } })
      const signIn = await context.request.post(`${url}/api/v2/cdp/session`, { data: { api_key: key } })
      if (!signIn.ok()) throw new Error(`sign-in refused: ${signIn.status()} ${await signIn.text()}`)
      const page = await context.newPage()
      await page.goto(`${url}/console/`)
      await page.waitForSelector('[data-chart] svg', { timeout: 30_000 })
      const ms = await page.evaluate(() => performance.now())
      times.push(ms)
      progress(`load ${i + 1}/${runs}: first chart at ${Math.round(ms)} ms`)
      await context.close()
    }
  } finally {
    await browser.close()
    if (demo) {
      const exited = new Promise((r) => demo.child.once('exit', r))
      demo.child.kill('SIGTERM')
      await exited
    }
  }
  const sorted = [...times].sort((a, b) => a - b)
  const median = percentile(sorted, 50)
  const worst = sorted[sorted.length - 1]!
  const result = {
    bench: 'console',
    build_s: Math.round(buildMs) / 1000,
    bundle_kb: kb(sizes.bytes),
    bundle_gzip_kb: kb(sizes.gzip),
    bundle_gzip_target_kb: BUNDLE_TARGET_KB,
    bundle_ok: kb(sizes.gzip) < BUNDLE_TARGET_KB,
    files: sizes.files.map((f) => ({ file: f.file, kb: kb(f.bytes), gzip_kb: kb(f.gzip) })),
    first_chart_ms: { median: Math.round(median), max: Math.round(worst), runs },
    first_chart_target_ms: FIRST_CHART_TARGET_MS,
    first_chart_ok: median < FIRST_CHART_TARGET_MS,
    machine,
    loadavg: { start: loadAtStart, end: loadAverages() },
  }
  const mark = (ok: boolean) => (ok ? '✓' : '✗')
  const lines = [
    '',
    '| figure | value | target |',
    '|---|---|---|',
    `| bundle (${sizes.files.length} files) | ${result.bundle_kb} KB, ${result.bundle_gzip_kb} KB gzipped | < ${BUNDLE_TARGET_KB} KB gzipped ${mark(result.bundle_ok)} |`,
    `| first chart of the overview, fresh context (${runs} loads) | median ${result.first_chart_ms.median} ms, max ${result.first_chart_ms.max} ms | < ${FIRST_CHART_TARGET_MS} ms ${mark(result.first_chart_ok)} |`,
    `| build | ${result.build_s} s | |`,
  ]
  process.stdout.write(`${lines.join('\n')}\n\n${JSON.stringify(result)}\n`)
  return 0
}
