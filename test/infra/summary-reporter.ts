import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import type { Reporter, TestModule } from 'vitest/node'

/** Where the closing line is also written, for `.ci/run` to print once more as its very last line. */
export const SUMMARY_FILE = process.env.CDP_TEST_SUMMARY_FILE ?? '.cache/test-summary.txt'

/**
 * Prints one plain closing line after vitest's own summary: `tests: N passed, N failed, N skipped`.
 * CI reads a run's closing lines to tell that tests ran; vitest's coloured table is not a form it
 * knows, so without this line a green run was recorded as one that "ran no test".
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0
    let failed = 0
    let skipped = 0
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state
        if (state === 'passed') passed++
        else if (state === 'failed') failed++
        else skipped++
      }
      // A file that failed to load has no tests but is a failure all the same.
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) failed++
    }
    failed += unhandledErrors.length
    const line = `tests: ${passed} passed, ${failed} failed, ${skipped} skipped`
    process.stdout.write(`\n${line}\n`)
    // Whatever teardown prints after this (the broker and registry stopping, on stderr), `.ci/run`
    // ends with this line again, read from the file.
    mkdirSync(dirname(SUMMARY_FILE), { recursive: true })
    writeFileSync(SUMMARY_FILE, `${line}\n`)
  }
}
