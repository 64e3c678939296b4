/** `cdp hash` as a child process (the pure hashing rules: test/audience-sync/ads-hashing.test.ts). */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'

/** The expected digest, computed here from the spec's normalised string, independently of the module. */
const sha = (normalized: string) => createHash('sha256').update(Buffer.from(normalized, 'utf8')).digest('hex')

describe('cdp hash', () => {
  const CDP = new URL('../../bin/cdp.mjs', import.meta.url).pathname
  const cdp = async (args: string[]) => {
    const { execFile } = await import('node:child_process')
    return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile('node', [CDP, 'hash', ...args], { timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }))
    })
  }

  it('prints the digest of each value, the normalised string with --normalized, and refuses a bad column', async () => {
    const plain = await cdp(['--column', 'EMAIL', ' John@Example.com '])
    expect(plain).toMatchObject({ code: 0, stdout: `${sha('john@example.com')}\n` })
    const normalized = await cdp(['--column', 'LN', '--normalized', 'Müller-Lüdenscheidt', '!!'])
    expect(normalized.stdout).toBe(`"müllerlüdenscheidt"\t${sha('müllerlüdenscheidt')}\n""\t\n`)
    const bad = await cdp(['--column', 'ZIP', 'x'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--column must be one of EMAIL, PHONE, FN, LN/)
  })
})
