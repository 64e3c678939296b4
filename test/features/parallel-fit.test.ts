import { describe, expect, it } from 'vitest'
import { buildTenantModel, clvInputs, fitClv } from '../../pipelines/features/model.ts'
import { buildTenantModelParallel, fitClvParallel, fitClvParallelWithWork, fitWorkerCounts, prefillClvMemo, prestartFitWorkers } from '../../pipelines/features/parallel-fit.ts'
import { ClvMemo, clvFeatures, expectedCurve } from '../../pipelines/features/features.ts'
import { compressPatterns, mbgNbdNeedsSeed, fitMbgNbdFromDefault, TRANSACTION_MODELS } from '../../pipelines/features/clv/index.ts'
import type { CustomerAggregates } from '../../pipelines/features/order-facts.ts'
import type { Logger } from '../../common/logger.ts'
import { simulateBgNbd } from '../../pipelines/ingest/synthetic/bgnbd.ts'

/**
 * The CLV fit on several threads (parallel-fit.ts) is the one-thread fit (model.ts fitClv), to the
 * last bit: on data with dropout (MBG/NBD's first run suffices) and without (its second run, from
 * the BG/NBD optimum, is the one kept), for both models.
 */
const DAY = 86_400_000
const TODAY = Date.UTC(2026, 5, 30)
const today = Math.floor(TODAY / DAY)

/** Aggregates of customers drawn as (x, t_x, T) in days, each repeat purchase worth 20–80 (varying, so Gamma-Gamma has something to fit). */
function shop(rows: { x: number; tx: number; T: number }[]): CustomerAggregates[] {
  return rows.map((r, i) => {
    const first = today - Math.round(r.T)
    const x = r.x
    const tx = Math.round(r.tx)
    const avg = 2000 + ((i * 7919) % 6000)
    return {
      orderCount: x + 1,
      monetaryCents: 3000 + x * avg,
      firstOrderAt: first * DAY,
      lastOrderAt: (first + tx) * DAY,
      purchaseDays: x + 1,
      firstDay: first,
      lastDay: first + tx,
      repeatPurchases: x,
      repeatSpanDays: tx,
      repeatAvgCents: x > 0 ? avg : 0,
    }
  })
}

describe('CLV fit on worker threads', () => {
  const withDropout = shop(simulateBgNbd(4000, { r: 0.8, alpha: 40, a: 0.6, b: 2.5 }, 700, 11))
  // Every customer buys at a steady rate and none drops out: MBG/NBD's first run ends on the ridge.
  const noDropout = shop(Array.from({ length: 4000 }, (_, i) => {
    const T = 100 + (i % 600)
    const x = Math.max(0, Math.floor(T / (20 + (i % 40))))
    return { x, tx: x > 0 ? T - (i % 15) : 0, T }
  }))

  it.each([
    ['mbgnbd', 'with dropout', withDropout],
    ['mbgnbd', 'without dropout', noDropout],
    ['bgnbd', 'with dropout', withDropout],
  ] as const)('%s, %s: the same fit as one thread', async (model, _what, aggs) => {
    const one = fitClv(aggs, TODAY, model)!
    // The workers answer (a failed worker is refitted here, which would hide it): no warning.
    const warnings: unknown[] = []
    const logger = { warn: (...args: unknown[]) => void warnings.push(args) } as unknown as Logger
    const many = (await fitClvParallelWithWork(aggs, TODAY, model, TODAY, { minCustomers: 0, logger }))!
    expect(warnings).toEqual([])
    expect(many.clv).toEqual(one)
    expect(one.gg).not.toBeNull()
    // The purchase model's fit with its work: MBG/NBD without dropout counts both runs' evaluations,
    // so a parallel path that skipped the second run (or ran it when not due) would differ here.
    const inputs = clvInputs(aggs, model, TODAY)!
    expect(many.transaction).toEqual(TRANSACTION_MODELS[model].fit(inputs.data, inputs.options))
  }, 120_000)

  it('covers both MBG/NBD paths: the first run alone, and the second run kept', () => {
    const data = (aggs: CustomerAggregates[]) => aggs.map((a) => ({ x: a.repeatPurchases, tx: a.repeatSpanDays, T: today - a.firstDay! }))
    expect(mbgNbdNeedsSeed(fitMbgNbdFromDefault(compressPatterns(data(withDropout))))).toBe(false)
    expect(mbgNbdNeedsSeed(fitMbgNbdFromDefault(compressPatterns(data(noDropout))))).toBe(true)
  })

  it('purchase curves summed up front, half on a worker, are the ones the memo computes as it goes', async () => {
    const fit = fitClv(withDropout, TODAY, 'mbgnbd')!
    const warnings: unknown[] = []
    const logger = { warn: (...args: unknown[]) => void warnings.push(args) } as unknown as Logger
    const filled = new ClvMemo(1_000_000)
    const curves = await prefillClvMemo(filled, fit, withDropout, today, 12, { minCurves: 0, logger })
    expect(warnings).toEqual([])
    expect(curves).toBeGreaterThan(1000)
    // Every curve is in the memo (a miss would be computed again, the same values): one per distinct (x, T).
    expect(curves).toBe(new Set(withDropout.filter((a) => a.orderCount > 0).map((a) => `${a.repeatPurchases} ${Math.max(today - a.firstDay!, a.repeatSpanDays)}`)).size)
    expect(filled.room(1_000_000 - curves)).toBe(true)
    expect(filled.room(1_000_000 - curves + 1)).toBe(false)
    for (const c of withDropout) expect(clvFeatures(c, fit, today, undefined, filled)).toEqual(clvFeatures(c, fit, today, undefined, new ClvMemo()))
    // The curves themselves, unrounded: the worker's half equals the memo's own function to the last bit.
    for (const c of withDropout.filter((a) => a.orderCount > 0)) {
      const T = Math.max(today - c.firstDay!, c.repeatSpanDays)
      expect(filled.curve(fit, c.repeatPurchases, T, 12)).toEqual(expectedCurve(fit, c.repeatPurchases, T, 12))
    }
    // Below the threshold it leaves the memo alone.
    expect(await prefillClvMemo(new ClvMemo(), fit, withDropout, today, 12)).toBe(0)
  })

  it('starts workers ahead of a fit and reuses them: a fit and the CLV sums after it start none', async () => {
    // Workers the earlier tests stopped end asynchronously: wait until none is left ending.
    for (let i = 0; i < 100 && fitWorkerCounts().alive > fitWorkerCounts().idle; i++) await new Promise((r) => setTimeout(r, 50))
    prestartFitWorkers(2)
    const ready = fitWorkerCounts()
    expect(ready.idle).toBe(2)
    expect(ready.alive).toBe(2)
    prestartFitWorkers(2)
    expect(fitWorkerCounts().started).toBe(ready.started)
    // MBG/NBD without dropout keeps both workers busy (Gamma-Gamma and the second run).
    const fit = (await fitClvParallel(noDropout, TODAY, 'mbgnbd', TODAY, { minCustomers: 0 }))!
    expect(await prefillClvMemo(new ClvMemo(), fit, noDropout, today, 12, { minCurves: 0 })).toBeGreaterThan(100)
    expect(fitWorkerCounts()).toEqual({ alive: 2, idle: 2, started: ready.started })
  }, 120_000)

  it('answers null without a buyer', async () => {
    expect(await fitClvParallel([], TODAY, 'mbgnbd', TODAY)).toBeNull()
    expect(await fitClvParallel([], TODAY, 'mbgnbd', TODAY, { minCustomers: 0 })).toBeNull()
  })

  it('buildTenantModelParallel builds buildTenantModel\'s model: a reference day other than the clock, a current fit kept, a stale one refitted', async () => {
    const now = TODAY + 3 * DAY // the wall clock; the reference is TODAY (imported history)
    const opts = { clvModel: 'mbgnbd' as const, refitClv: true, referenceMs: TODAY }
    const fresh = buildTenantModel(withDropout, now, opts)
    expect(await buildTenantModelParallel(withDropout, now, opts)).toEqual(fresh)
    // Not asked to refit and the fit is current: kept as it is (no fit at all).
    const kept = { clvModel: 'mbgnbd' as const, refitClv: false, previous: fresh, referenceMs: TODAY }
    expect((await buildTenantModelParallel(withDropout.slice(0, 100), now, kept)).clv).toBe(fresh.clv)
    expect(await buildTenantModelParallel(withDropout.slice(0, 100), now, kept)).toEqual(buildTenantModel(withDropout.slice(0, 100), now, kept))
    // Another model, or another reference day: refitted, as buildTenantModel does.
    for (const stale of [{ ...kept, clvModel: 'bgnbd' as const }, { ...kept, referenceMs: TODAY - DAY }]) {
      const m = await buildTenantModelParallel(withDropout, now, stale)
      expect(m).toEqual(buildTenantModel(withDropout, now, stale))
      expect(m.clv).not.toBe(fresh.clv)
    }
  })
})
