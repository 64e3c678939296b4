/**
 * BG/NBD (Fader, Hardie & Lee 2005, "Counting your customers the easy way"). While alive a customer buys
 * at Poisson rate λ ~ Gamma(r, α); after each purchase they drop out with probability p ~ Beta(a, b).
 * A customer with no repeat purchase can never have dropped out, so P(alive | x = 0) = 1: use MBG/NBD
 * (mbgnbd.ts) where one-time buyers need a churn probability.
 */
import type { Patterns } from './patterns.ts'
import { expit, lgamma, log1pExp } from './special.ts'
import {
  expectedPurchasesNumerator,
  kernelFunctions,
  type TransactionModel,
  type TransactionParams,
} from './transaction-model.ts'

/**
 * Σ w·ℓ over patterns in the "#NUM!-safe" form of Hardie note 027 (as pymc-marketing):
 * ℓ = D1 + D2 + ln(C3 + δ_{x>0}·C4), with
 * D1 = lnΓ(r+x) − lnΓ(r) + lnΓ(a+b) + lnΓ(b+x) − lnΓ(b) − lnΓ(a+b+x),
 * D2 = r·ln α − (r+x)·ln(α+t_x), C3 = ((α+t_x)/(α+T))^{r+x}, C4 = a/(b+x−1).
 */
export function patternLogLikelihood(params: TransactionParams, p: Patterns): number {
  const { r, alpha, a, b } = params
  const lgR = lgamma(r)
  const lgB = lgamma(b)
  const lgAB = lgamma(a + b)
  const logA = Math.log(a)
  const logAlpha = Math.log(alpha)
  const nx = p.xs.length
  const d1 = new Float64Array(nx)
  const logC4 = new Float64Array(nx)
  for (let j = 0; j < nx; j++) {
    const x = p.xs[j]!
    d1[j] = x === 0 ? 0 : lgamma(r + x) - lgR + lgAB + lgamma(b + x) - lgB - lgamma(a + b + x)
    logC4[j] = x > 0 ? logA - Math.log(b + x - 1) : -Infinity
  }
  const logAlphaTx = p.txs.map((t) => Math.log(alpha + t))
  const logAlphaT = p.Ts.map((t) => Math.log(alpha + t))
  const { x: xArr, w, xi, txi, Ti } = p
  let sum = 0
  for (let i = 0; i < p.size; i++) {
    const j = xi[i]!
    const lt = logAlphaTx[txi[i]!]!
    const rx = r + xArr[i]!
    const logC3 = rx * (lt - logAlphaT[Ti[i]!]!)
    // ln(C3 + C4) inlined (this loop is the whole cost of a fit); C4 = 0 when x = 0.
    const c4 = logC4[j]!
    const d = logC3 - c4
    const tail = c4 === -Infinity ? logC3 : d > 0 ? logC3 + Math.log1p(Math.exp(-d)) : c4 + Math.log1p(Math.exp(d))
    sum += w[i]! * (d1[j]! + r * logAlpha - rx * lt + tail)
  }
  return sum
}

/** ℓ of one customer, Σ w·ℓ over customers, and the maximum-likelihood fit (see TransactionFitOptions). */
export const { logLikelihood, totalLogLikelihood, fit: fitBgNbd } = kernelFunctions('bgnbd', patternLogLikelihood)

/** ln of the odds a/(b+x−1)·((α+T)/(α+t_x))^{r+x} that the customer dropped out after the last purchase. */
function logDeadOdds(params: TransactionParams, x: number, tx: number, T: number): number {
  const { r, alpha, a, b } = params
  return Math.log(a) - Math.log(b + x - 1) + (r + x) * (Math.log(alpha + T) - Math.log(alpha + tx))
}

/**
 * E[Y(t) | x, t_x, T]: expected purchases in (T, T + t] (FHL 2005 eq. 10),
 * ((a+b+x−1)/(a−1))·[1 − ((α+T)/(α+T+t))^{r+x}·₂F₁(r+x, b+x; a+b+x−1; t/(α+T+t))] / (1 + δ_{x>0}·odds).
 */
export function expectedPurchases(params: TransactionParams, t: number, x: number, tx: number, T: number): number {
  const ifAlive = expectedPurchasesIfAlive(params, t, x, tx, T)
  if (x === 0 || ifAlive === 0) return ifAlive
  return ifAlive * Math.exp(-log1pExp(logDeadOdds(params, x, tx, T)))
}

/**
 * E[Y(t) | x, t_x, T, alive at T]: the numerator of eq. 10, i.e. the unconditional E[X(t)] with the
 * posterior parameters (r + x, α + T, a, b + x) of a customer still alive.
 */
export function expectedPurchasesIfAlive(params: TransactionParams, t: number, x: number, _tx: number, T: number): number {
  if (t <= 0) return 0
  const { r, alpha, a, b } = params
  return expectedPurchasesNumerator(a, r + x, b + x, a + b + x - 1, t / (alpha + T + t))
}

/** E[X(t)]: expected repeat purchases in (0, t] of a customer acquired at 0 (FHL 2005 eq. 9). */
export function expectedPurchasesUnconditional(params: TransactionParams, t: number): number {
  return expectedPurchases(params, t, 0, 0, 0)
}

/** P(alive | x, t_x, T) = 1 / (1 + δ_{x>0}·odds); exactly 1 when x = 0. */
export function probabilityAlive(params: TransactionParams, x: number, tx: number, T: number): number {
  if (x === 0) return 1
  return expit(-logDeadOdds(params, x, tx, T))
}

export const bgNbd: TransactionModel = {
  name: 'bgnbd',
  fit: fitBgNbd,
  logLikelihood,
  totalLogLikelihood,
  expectedPurchases,
  expectedPurchasesIfAlive,
  expectedPurchasesUnconditional,
  probabilityAlive,
}
