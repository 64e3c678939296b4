/**
 * The published CDNOW figures the CLV tests check against (sources: ../shared/notes/clv_models.md
 * sections 4 and 5), the CDNOW summary file of ../shared/data, and a relative-error check.
 */
import fs from 'node:fs'
import path from 'node:path'
import { expect } from 'vitest'
import type { TransactionParams } from '../pipelines/features/clv/index.ts'

/** Published BG/NBD fit on CDNOW (Fader, Hardie & Lee 2005), weeks. */
export const FHL: TransactionParams = { r: 0.243, alpha: 4.414, a: 0.793, b: 2.426 }
/** Published Gamma-Gamma fit on the 946 CDNOW repeat buyers. */
export const GG_PUBLISHED = { p: 6.25, q: 3.74, gamma: 15.44 }

export const SUMMARY = path.resolve(import.meta.dirname, '../../shared/data/clv/cdnow_customers_summary_with_transactions.csv')
export const haveSummary = fs.existsSync(SUMMARY)
/** Appended to a test's title when the data is absent, so the skip says why. */
export const needsData = haveSummary ? '' : ` [SKIPPED: ${SUMMARY} not found; the ../shared data folder is absent]`

export function within(actual: number, expected: number, relative: number) {
  expect(Math.abs(actual - expected) / Math.abs(expected), `${actual} vs ${expected}`).toBeLessThanOrEqual(relative)
}
