/** `cdp eval demographics` and `cdp bench demographics` as child processes (the rules: test/demographics/demographics.test.ts). */
import { describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const run = promisify(execFile)
const CDP = path.resolve(import.meta.dirname, '../../bin/cdp.mjs')
const DATA = path.resolve(import.meta.dirname, '../../../shared/data/ar')
const haveData = fs.existsSync(DATA)
const needsData = haveData ? '' : ` [SKIPPED: ${DATA} not found; the ../shared data folder is absent]`

describe('evaluation (../shared/data/ar)', () => {
  it.skipIf(!haveData)(`\`cdp eval demographics\` prints the figures and one JSON line${needsData}`, async () => {
    const { stdout } = await run('node', [CDP, 'eval', 'demographics', '--data', DATA], { timeout: 120_000 })
    const lines = stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^demographics evaluation/)
    const report = JSON.parse(lines.at(-1)!)
    expect(report.gender.names).toBeGreaterThan(40_000)
    expect(report.gender.accuracy_recognised).toBeGreaterThan(0.97)
    expect(report.postal.accuracy).toBeGreaterThan(0.9)
    expect(report.aliases.resolved).toBeGreaterThan(0.95)
    expect(report.age.age_mae_years).toBeLessThan(1)
  })

  it('`cdp eval demographics` without its data exits 1 with a clear message', async () => {
    const err = await run('node', [CDP, 'eval', 'demographics', '--data', '/nonexistent/ar'], { timeout: 60_000 }).catch((e: { code: number; stderr: string }) => e)
    expect((err as { code: number }).code).toBe(1)
    expect((err as { stderr: string }).stderr).toMatch(/data directory \/nonexistent\/ar not found/)
  })

  it('a reference directory without reference files is a configuration error: exit 2, the reason, no stack trace', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'cdp-no-reference-'))
    const err = await run('node', [CDP, 'bench', 'demographics', '--customers', '10', '--reference-dir', empty], { timeout: 60_000 }).catch((e: { code: number; stderr: string }) => e)
    expect((err as { code: number }).code).toBe(2)
    expect((err as { stderr: string }).stderr).toBe(`cdp: reference directory ${empty} holds none of localities.csv, first_names.csv, province_aliases.csv, postal_codes.csv\n`)
  })
})
