/** `cdp segments` as a child process (the segment map and scoring: test/features/rfm.test.ts). */
import { describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import path from 'node:path'
import { ALL_SCORES, SEGMENTS, SEGMENT_MAP } from '../../pipelines/features/segments.ts'

const run = promisify(execFile)
const CDP = path.resolve(import.meta.dirname, '../../bin/cdp.mjs')

describe('cdp segments', () => {
  it('--json prints one object with the 125 scores in ascending order', async () => {
    const { stdout } = await run('node', [CDP, 'segments', '--json'], { timeout: 60_000 })
    const parsed = JSON.parse(stdout) as Record<string, string>
    expect(Object.keys(parsed)).toHaveLength(125)
    expect(Object.keys(parsed)).toEqual([...ALL_SCORES])
    expect(parsed).toEqual({ ...SEGMENT_MAP })
  })

  it('without --json prints a table grouped by segment', async () => {
    const { stdout } = await run('node', [CDP, 'segments'], { timeout: 60_000 })
    for (const s of SEGMENTS) expect(stdout).toContain(s)
    expect(stdout).toContain('231*')
    expect(stdout).toContain('333+')
  })
})
