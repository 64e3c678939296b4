/** `cdp apikey` and `cdp start` as child processes (authentication and rate limits in process: test/api/auth-rate-limit.test.ts). */
import { describe, expect, it } from 'vitest'
import net from 'node:net'
import fs from 'node:fs'
import path from 'node:path'
import { execFile, spawn } from 'node:child_process'
import { promisify } from 'node:util'
import type { AddressInfo } from 'node:net'
import { tmpDir, waitFor } from '../helpers.ts'

const CDP = path.resolve(import.meta.dirname, '../../bin/cdp.mjs')

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

describe('cdp apikey and cdp start', () => {
  const run = promisify(execFile)
  const cdp = (args: string[], env: Record<string, string> = {}) =>
    run('node', [CDP, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, maxBuffer: 64 << 20, timeout: 120_000 })

  async function freePort(): Promise<number> {
    const s = net.createServer()
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
    const port = (s.address() as AddressInfo).port
    await new Promise<void>((r) => s.close(() => r()))
    return port
  }

  it('create prints a key that authenticates against `cdp start`; the demo prints one; import authenticates with the dev admin token; revoke and list', async () => {
    const dir = path.join(tmpDir(), 'data')
    const env = { CDP_DATA_DIR: dir, NODE_ENV: 'development', CDP_ADMIN_TOKEN: '' }
    const created = JSON.parse((await cdp(['apikey', 'create', '--tenant', '5', '--name', 'ci'], env)).stdout)
    expect(created).toMatchObject({ tenant_id: 5, name: 'ci', key: expect.stringMatching(/^cdp_5_[A-Za-z0-9_-]{43}$/), key_id: expect.any(String) })
    const listed = (await cdp(['apikey', 'list', '--tenant', '5'], env)).stdout
    expect(listed).toContain(created.key_id)
    expect(listed).not.toContain(created.key)
    await expect(cdp(['apikey', 'create'], env)).rejects.toMatchObject({ code: 2 })

    const port = await freePort()
    const child = spawn('node', [CDP, 'start', '--demo', '--roles', 'api', '--api-port', String(port)], { env: { ...process.env, ...env, LOG_LEVEL: 'info' } })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)))
    try {
      const url = await waitFor(async () => /"url":"(http:[^"]+)"/.exec(out)?.[1], { what: 'the API url in the log', timeoutMs: 60_000 })
      const demoKey = await waitFor(async () => /^\s+(cdp_1_[A-Za-z0-9_-]{43})$/m.exec(out)?.[1], { what: 'the demo key on stdout' })
      expect(out).toContain(`curl -H "Authorization: Bearer ${demoKey}"`)
      // The development admin token: in a 0600 file named in a warning, never in the log.
      const tokenFile = path.join(dir, 'admin-token')
      const admin = fs.readFileSync(tokenFile, 'utf8').trim()
      expect(fs.statSync(tokenFile).mode & 0o777).toBe(0o600)
      expect(out).toContain(tokenFile)
      expect(out).not.toContain(admin)
      expect(out.split('\n').filter((l) => l.startsWith('{')).join('\n')).not.toContain(demoKey)

      expect((await fetch(`${url}/health`)).status).toBe(200)
      expect((await fetch(`${url}/api/cdp/v2/customers?tenant_id=5`)).status).toBe(401)
      expect([200, 404]).toContain((await fetch(`${url}/api/cdp/v2/customers?tenant_id=5`, { headers: bearer(created.key) })).status)
      expect((await fetch(`${url}/api/cdp/v2/customers?tenant_id=1`, { headers: bearer(created.key) })).status).toBe(403)
      expect([200, 404]).toContain((await fetch(`${url}/api/v2/cdp/analytics/rfm?tenant_id=1`, { headers: bearer(demoKey) })).status)
      expect((await fetch(`${url}/api/v2/cdp/analytics/rfm?tenant_id=5`, { headers: bearer(demoKey) })).status).toBe(403)

      // While start holds the embedded store, apikey says so instead of failing obscurely.
      const busy = await cdp(['apikey', 'list'], env).then(() => null, (e: { code: number; stderr: string }) => e)
      expect(busy?.code).toBe(1)
      expect(busy?.stderr).toMatch(/in use by process \d+.*stop it/)

      // cdp import goes through the running API with the admin token from the file.
      const file = path.join(path.dirname(dir), 'orders.jsonl')
      fs.writeFileSync(file, `${JSON.stringify({ customer_id: 1, order_id: 'I-1', currency: 'ARS', total: 5, occurred_at: '2025-01-01T00:00:00Z' })}\n`)
      const imported = JSON.parse((await cdp(['import', file, '--tenant', '5'], env)).stdout)
      expect(imported).toMatchObject({ tenant_id: 5, accepted: 1, rejected: 0 })
      // With a wrong admin token the import is refused (401).
      await expect(cdp(['import', file, '--tenant', '5'], { ...env, CDP_ADMIN_TOKEN: 'wrong-admin-token-0123456789' })).rejects.toMatchObject({ code: 1 })
    } finally {
      child.kill('SIGTERM')
      expect(await exited).toBe(0)
    }

    const revoked = JSON.parse((await cdp(['apikey', 'revoke', '--id', created.key_id], env)).stdout)
    expect(revoked).toMatchObject({ key_id: created.key_id, tenant_id: 5, revoked_at: expect.any(String) })
    const after = JSON.parse((await cdp(['apikey', 'list'], env)).stdout) as { keys: { key_id: string; revoked_at: string | null; name: string }[] }
    expect(after.keys.find((k) => k.key_id === created.key_id)?.revoked_at).toBeTruthy()
    expect(after.keys.find((k) => k.name === 'demo')?.revoked_at).toBeNull()
    expect(JSON.stringify(after)).not.toContain(created.key)
  })

  it('in production the API refuses to start without CDP_ADMIN_TOKEN', async () => {
    const dir = path.join(tmpDir(), 'data')
    const res = await cdp(['start', '--roles', 'api', '--api-port', '0'], { CDP_DATA_DIR: dir, NODE_ENV: 'production', CDP_ADMIN_TOKEN: '' }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    )
    expect(res.code).toBe(2)
    expect(res.stderr).toContain('CDP_ADMIN_TOKEN')
    expect(fs.existsSync(path.join(dir, 'admin-token'))).toBe(false)
  })
})
