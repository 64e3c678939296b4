import { describe, expect, it } from 'vitest'
import { execFile, spawn } from 'node:child_process'
import { promisify } from 'node:util'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { tmpDir, waitFor } from '../helpers.ts'

const run = promisify(execFile)
const CDP = path.resolve(import.meta.dirname, '../../bin/cdp.mjs')

function cdp(args: string[], env: Record<string, string> = {}) {
  return run('node', [CDP, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, maxBuffer: 64 << 20, timeout: 120_000 })
}

/** `cdp start` on `env` answers with its URL, and SIGTERM stops it with exit 0 (nothing left held). */
async function startsAndStops(env: NodeJS.ProcessEnv): Promise<void> {
  const child = spawn('node', [CDP, 'start', '--api-port', '0'], { env: { ...env, LOG_LEVEL: 'info' } })
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  await waitFor(async () => /"url":"(http:[^"]+)"/.exec(out)?.[1], { what: 'the API url in the log', timeoutMs: 60_000 })
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)))
  child.kill('SIGTERM')
  expect(await exited).toBe(0)
}

describe('cdp command line', () => {
  it('generate is deterministic; import publishes every valid record; replay rebuilds from the log', async () => {
    const dir = tmpDir()
    const env = { CDP_DATA_DIR: path.join(dir, 'data') }
    const a = path.join(dir, 'a.jsonl')
    const b = path.join(dir, 'b.jsonl')
    await cdp(['generate', '--tenant', '5', '--customers', '40', '--seed', 's1', '--from', '2024-01-01', '--to', '2025-01-01', '--out', a])
    await cdp(['generate', '--tenant', '5', '--customers', '40', '--seed', 's1', '--from', '2024-01-01', '--to', '2025-01-01', '--out', b])
    expect(fs.readFileSync(a).equals(fs.readFileSync(b))).toBe(true)
    const lines = fs.readFileSync(a, 'utf8').trim().split('\n').length
    expect(lines).toBeGreaterThan(40)

    const imported = await cdp(['import', a, '--tenant', '5'], env)
    const summary = JSON.parse(imported.stdout)
    expect(summary).toMatchObject({ tenant_id: 5, accepted: lines, rejected: 0, customers: 40, rejects_file: null })
    expect(summary.orders).toBe(lines - 40)

    const replayed = await cdp(['replay'], env)
    // Raw projections read both topics; the demographic enrichment reads the 40 customers.
    expect(JSON.parse(replayed.stdout)).toMatchObject({ projections: { replayed_records: lines }, demographics: { replayed_records: 40 } })
  })

  it('import reports rejected CSV rows with their line, raw row and reason, and --strict fails', async () => {
    const dir = tmpDir()
    const csv = path.join(dir, 'orders.csv')
    fs.writeFileSync(csv, 'customer_id,order_id,total,occurred_at\n1,A,10.50,2025-01-01T00:00:00Z\n2,B,1.234,2025-01-01T00:00:00Z\n"3","C","7","2025-01-02"\n4,D,5\n')
    const env = { CDP_DATA_DIR: path.join(dir, 'data') }
    const res = await cdp(['import', csv, '--tenant', '9', '--currency', 'ARS'], env)
    expect(JSON.parse(res.stdout)).toMatchObject({ accepted: 2, rejected: 2, orders: 2, acknowledged: 2, skipped: 0, status: 'done', rejects_file: `${csv}.rejects.jsonl` })
    const rejects = fs.readFileSync(`${csv}.rejects.jsonl`, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    expect(rejects).toEqual([
      { line: 3, raw: '2,B,1.234,2025-01-01T00:00:00Z', errors: [{ path: 'total', code: 'too_many_decimals', message: expect.any(String) }] },
      { line: 5, raw: '4,D,5', errors: [{ path: '', code: 'wrong_field_count', message: 'row has 3 fields, header has 4' }] },
    ])
    await expect(cdp(['import', csv, '--tenant', '9', '--currency', 'ARS', '--strict'], env)).rejects.toMatchObject({ code: 1 })
    await expect(cdp(['import', csv])).rejects.toMatchObject({ code: 2 })
  })

  it('start answers /health, and SIGTERM drains and exits 0', async () => {
    const dir = tmpDir()
    const child = spawn('node', [CDP, 'start', '--api-port', '0'], { env: { ...process.env, CDP_DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'info' } })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    const url = await waitFor(async () => /"url":"(http:[^"]+)"/.exec(out)?.[1], { what: 'the API url in the log', timeoutMs: 60_000 })
    const health = await fetch(`${url}/health`)
    expect(health.status).toBe(200)
    expect(await health.json()).toMatchObject({ status: 'ok', runtime: 'embedded' })
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)))
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
    expect(out).toContain('"msg":"stopped"')
  })

  it('launched by npm or npx, start stops (draining) when its launcher is killed: no orphan holds the port and the data dir', async () => {
    const dir = tmpDir()
    // npx runs `sh -c 'cdp start'`; killing npx kills that shell, not its child. `; true` keeps sh from exec-ing node.
    const launcher = spawn('sh', ['-c', `node ${CDP} start --api-port 0; true`], { env: { ...process.env, CDP_DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'info', npm_command: 'exec' } })
    let out = ''
    launcher.stdout.on('data', (d) => (out += d))
    await waitFor(async () => /"url":"(http:[^"]+)"/.exec(out)?.[1], { what: 'the API url in the log', timeoutMs: 60_000 })
    const pid = Number(/"pid":(\d+)/.exec(out)![1])
    expect(pid).not.toBe(launcher.pid)
    launcher.kill('SIGKILL')
    const alive = () => {
      try {
        process.kill(pid, 0)
        return true
      } catch {
        return false
      }
    }
    await waitFor(async () => !alive(), { what: `the orphaned cdp (pid ${pid}) to exit`, timeoutMs: 30_000, intervalMs: 100 })
    expect(out).toContain('"msg":"stopped"')
  })

  it('logs: JSON lines through a pipe, readable lines when CDP_LOG_FORMAT=pretty (what a terminal gets), secrets redacted either way', async () => {
    const script = "import { createLogger } from './common/logger.ts'; createLogger({ name: 'cdp' }).info({ tenant_id: 7, token: 'secret-value' }, 'hello log')"
    const line = (format: string) => run('node', ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: path.resolve(import.meta.dirname, '../..'), env: { ...process.env, CDP_LOG_FORMAT: format, LOG_LEVEL: 'info' } })
    const piped = (await line('auto')).stdout.trim()
    expect(JSON.parse(piped)).toMatchObject({ level: 30, msg: 'hello log', tenant_id: 7, token: '***' })
    const pretty = (await line('pretty')).stdout.trim()
    expect(() => JSON.parse(pretty)).toThrow()
    expect(pretty).toMatch(/INFO.*hello log/)
    expect(pretty).toContain('tenant_id: 7')
    expect(pretty).not.toContain('secret-value')
  })

  it('a bad config or a missing reference directory: start exits 2 within seconds with one line and no stack trace, and the data dir starts afterwards', async () => {
    const dir = tmpDir()
    const env = { ...process.env, CDP_DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'warn', CDP_API_PORT: '0' }
    const cases: [Record<string, string>, RegExp][] = [
      [{ CDP_API_PORT: 'eighty' }, /^cdp: invalid configuration: apiPort \(CDP_API_PORT\): /],
      [{ CDP_RUNTIME: 'distributed' }, /^cdp: invalid configuration: .*KAFKA_BROKERS is required/],
      [{ CDP_DEMOGRAPHICS_REFERENCE_DIR: path.join(dir, 'missing') }, /^cdp: reference directory .*missing: /],
    ]
    for (const [over, line] of cases) {
      const started = Date.now()
      const failed = await run('node', [CDP, 'start'], { env: { ...env, ...over }, timeout: 60_000 }).then(() => null, (e: { code: number; stderr: string }) => e)
      expect(failed?.code, JSON.stringify(over)).toBe(2)
      expect((Date.now() - started) / 1000).toBeLessThan(30)
      const lines = failed!.stderr.trim().split('\n')
      expect(lines, failed!.stderr).toHaveLength(1)
      expect(lines[0]).toMatch(line)
      expect(failed!.stderr).not.toMatch(/\n\s+at /)
    }
    // Nothing held on.
    await startsAndStops(env)
  })

  it('a taken port: start exits 1 within seconds with one line naming the port, releases the data dir, and a second start succeeds', async () => {
    const dir = tmpDir()
    const held = net.createServer()
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', r))
    const port = (held.address() as net.AddressInfo).port
    const env = { ...process.env, CDP_DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'warn', CDP_API_PORT: String(port) }
    const started = Date.now()
    const failed = await run('node', [CDP, 'start'], { env, timeout: 60_000 }).then(() => null, (e: { code: number; stderr: string }) => e)
    const seconds = (Date.now() - started) / 1000
    console.log(`[bad-start] exit ${failed?.code} after ${seconds.toFixed(1)} s: ${failed?.stderr.trim()}`)
    expect(failed?.code).toBe(1)
    expect(seconds).toBeLessThan(30) // the issue asks 10 s; a loaded CI gets room
    expect(failed!.stderr.trim().split('\n')).toEqual([`cdp: port ${port} on 127.0.0.1 is already in use (set CDP_API_PORT or CDP_METRICS_PORT, or stop the process holding it)`])
    await new Promise((r) => held.close(r))
    // Nothing held on: the same data dir starts now.
    await startsAndStops(env)
  })

  it('--version, every --help exits 0, and a mistyped command is answered with the nearest one', async () => {
    const pkg = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string }
    expect((await cdp(['--version'])).stdout.trim()).toBe(`cdp ${pkg.version}`)
    const help = (await cdp(['--help'])).stdout
    for (const bench of ['ingest', 'features', 'api', 'hashing', 'demographics', 'sync', 'identity']) expect(help).toContain(bench)
    for (const args of [['bench', '--help'], ['bench', 'features', '--help'], ['start', '--help'], ['apikey', '--help']]) await cdp(args) // rejects on a non-zero exit
    const typo = await cdp(['strat']).then(() => null, (e: { code: number; stderr: string }) => e)
    expect(typo?.code).toBe(2)
    expect(typo?.stderr).toContain("unknown command 'strat' (did you mean 'start'?)")
  })

  it('generate --publish retries a lost server like import, then stops with exit 1 and says what was published', async () => {
    const s = net.createServer()
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
    const port = (s.address() as net.AddressInfo).port
    await new Promise<void>((r) => s.close(() => r()))
    const api = `http://127.0.0.1:${port}`
    const dir = tmpDir()
    const res = await cdp(['generate', '--tenant', '5', '--customers', '5', '--publish', '--api', api, '--retry-for', '1'], { CDP_DATA_DIR: path.join(dir, 'data') }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    )
    expect(res.code).toBe(1)
    expect(res.stderr).toContain(`cdp generate: ingest API at ${api}: fetch failed (ECONNREFUSED); retry 1 in 0.5 s`)
    expect(res.stderr).toMatch(/cdp generate: stopped: the event sink stayed unreachable: gave up after \d+ attempts in 1 s: fetch failed \(ECONNREFUSED\)/)
    expect(res.stderr).toContain('  published: 0 events (0 customers, 0 orders)')
    expect(res.stderr).not.toMatch(/\n\s+at /) // no stack trace
  })
})
