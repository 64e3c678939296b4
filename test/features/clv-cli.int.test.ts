/** `cdp eval clv` as a child process (the models and the CDNOW fits: test/features/clv.test.ts). */
import { describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import path from 'node:path'
import { FHL, GG_PUBLISHED, SUMMARY, haveSummary, needsData, within } from '../cdnow.ts'

describe('CDNOW summary', () => {
  it.skipIf(!haveSummary)(`\`cdp eval clv --summary FILE\` prints exactly one JSON line${needsData}`, async () => {
    const cdp = path.resolve(import.meta.dirname, '../../bin/cdp.mjs')
    const { stdout } = await promisify(execFile)('node', [cdp, 'eval', 'clv', '--summary', SUMMARY], { timeout: 60_000 })
    const lines = stdout.split('\n').filter((l) => l !== '')
    expect(lines).toHaveLength(1)
    const out = JSON.parse(lines[0]!)
    expect(Object.keys(out)).toEqual(['bgnbd', 'gammagamma'])
    expect(Object.keys(out.bgnbd)).toEqual(['r', 'alpha', 'a', 'b', 'll'])
    expect(Object.keys(out.gammagamma)).toEqual(['p', 'q', 'gamma'])
    for (const k of ['r', 'alpha', 'a', 'b'] as const) within(out.bgnbd[k], FHL[k], 0.005)
    within(out.bgnbd.ll, -9582.4, 0.005)
    for (const k of ['p', 'q', 'gamma'] as const) within(out.gammagamma[k], GG_PUBLISHED[k], 0.005)
  })

  it('`cdp eval clv` without --summary is a usage error; an unreadable file exits 1', async () => {
    const cdp = path.resolve(import.meta.dirname, '../../bin/cdp.mjs')
    const run = (args: string[]) =>
      promisify(execFile)('node', [cdp, ...args], { timeout: 60_000 }).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
      )
    expect((await run(['eval', 'clv'])).code).toBe(2)
    const missing = await run(['eval', 'clv', '--summary', '/nonexistent/summary.csv'])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('cannot read /nonexistent/summary.csv')
  })
})
