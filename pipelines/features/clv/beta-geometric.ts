/**
 * The beta-geometric/NBD family that BG/NBD and MBG/NBD share. While alive a customer buys at
 * Poisson rate λ ~ Gamma(r, α); at each purchase that may end their life they drop out with
 * probability p ~ Beta(a, b). The two models differ in one thing only, `firstPurchaseDropout`:
 * - BG/NBD (Fader, Hardie & Lee 2005): only repeat purchases can end a life, so a customer with x
 *   repeat purchases had k = x dropout chances and P(alive | x = 0) = 1;
 * - MBG/NBD (Batislam, Denizel & Filiztekin 2007; erratum Wagner & Hoppe 2008): the first purchase
 *   can too, so k = x + 1 and one-time buyers get a churn probability.
 * With s = 1 for MBG/NBD and 0 for BG/NBD, every formula below is the published one of its model:
 *   ℓ = lnΓ(r+x) − lnΓ(r) + r·ln α + lnΓ(a+b) + lnΓ(b+x+s) − lnΓ(b) − lnΓ(a+b+x+s)
 *       − (r+x)·ln(α+T) + ln(1 + δ_{x+s>0}·odds),
 *   odds = a/(b+x+s−1) · ((α+T)/(α+t_x))^{r+x}   (the customer dropped out after the last purchase),
 * which for BG/NBD is Hardie note 027's "#NUM!-safe" D1 + D2 + ln(C3 + δ_{x>0}·C4) rearranged.
 */
import type { Patterns } from './patterns.ts'
import { digamma, expit, lgamma, log1pExp } from './special.ts'
import { expectedPurchasesNumerator, kernelFunctions, type TransactionModelName, type TransactionParams } from './transaction-model.ts'

export function betaGeometricFamily(name: TransactionModelName, firstPurchaseDropout: boolean) {
  const s = firstPurchaseDropout ? 1 : 0

  /** Σ w·ℓ over compressed (x, t_x, T) patterns: the whole cost of a fit is this loop. */
  function patternLogLikelihood(params: TransactionParams, p: Patterns): number {
    const { r, alpha, a, b } = params
    const lgR = lgamma(r)
    const lgB = lgamma(b)
    const lgAB = lgamma(a + b)
    const logA = Math.log(a)
    const logAlpha = Math.log(alpha)
    const nx = p.xs.length
    const base = new Float64Array(nx)
    const logOddsBase = new Float64Array(nx)
    for (let j = 0; j < nx; j++) {
      const x = p.xs[j]!
      // No dropout chance (BG/NBD, x = 0): the beta part is exactly 0 (kept exact, not lgamma's
      // rounding, so a and b stay flat where the data say nothing about them), and so are the odds.
      const chances = x + s > 0
      base[j] = lgamma(r + x) - lgR + r * logAlpha + (chances ? lgAB + lgamma(b + x + s) - lgB - lgamma(a + b + x + s) : 0)
      logOddsBase[j] = chances ? logA - Math.log(b + x + s - 1) : -Infinity
    }
    const logAlphaTx = p.txs.map((t) => Math.log(alpha + t))
    const logAlphaT = p.Ts.map((t) => Math.log(alpha + t))
    const { x: xArr, w, xi, txi, Ti } = p
    let sum = 0
    for (let i = 0; i < p.size; i++) {
      const j = xi[i]!
      const rx = r + xArr[i]!
      const lT = logAlphaT[Ti[i]!]!
      const logOdds = logOddsBase[j]! + rx * (lT - logAlphaTx[txi[i]!]!)
      // ln(1 + e^{logOdds}) inlined and without a branch (the same value bit for bit; a branch on
      // the sign was mispredicted for much of the data); e^{−∞} = 0 when there was no dropout chance.
      const softplus = Math.max(logOdds, 0) + Math.log1p(Math.exp(-Math.abs(logOdds)))
      sum += w[i]! * (base[j]! - rx * lT + softplus)
    }
    return sum
  }

  /**
   * ∂(Σ w·ℓ)/∂(r, α, a, b), by the formula above differentiated (ψ the digamma function):
   *   ∂ℓ/∂r = ψ(r+x) − ψ(r) + ln α − ln(α+T) + σ·(ln(α+T) − ln(α+t_x)),
   *   ∂ℓ/∂α = r/α − (r+x)/(α+T) + σ·(r+x)·(1/(α+T) − 1/(α+t_x)),
   *   ∂ℓ/∂a = ψ(a+b) − ψ(a+b+x+s) + σ/a,
   *   ∂ℓ/∂b = ψ(a+b) + ψ(b+x+s) − ψ(b) − ψ(a+b+x+s) − σ/(b+x+s−1),
   * with σ = odds/(1 + odds) (0, and no beta part, without a dropout chance). One pass over the
   * patterns, about as costly as the likelihood's: a fit's polish needs it where a central
   * difference would evaluate the likelihood eight times.
   */
  function patternLogLikelihoodGradient(params: TransactionParams, p: Patterns): number[] {
    const { r, alpha, a, b } = params
    const logA = Math.log(a)
    const logAlpha = Math.log(alpha)
    const nx = p.xs.length
    const dBaseR = new Float64Array(nx)
    const dBaseA = new Float64Array(nx)
    const dBaseB = new Float64Array(nx)
    const logOddsBase = new Float64Array(nx)
    const oddsPerB = new Float64Array(nx)
    // The digamma steps of every distinct x at once (running sums): O(max x), not O(Σ x).
    const chancesOf = Float64Array.from(p.xs, (x) => x + s)
    const stepsR = digammaSteps(r, p.xs)
    const stepsAB = digammaSteps(a + b, chancesOf)
    const gaps = digammaStepGaps(a, b, chancesOf)
    for (let j = 0; j < nx; j++) {
      const x = p.xs[j]!
      const chances = x + s > 0
      dBaseR[j] = stepsR[j]! + logAlpha
      if (chances) {
        dBaseA[j] = -stepsAB[j]!
        dBaseB[j] = gaps[j]!
        oddsPerB[j] = 1 / (b + x + s - 1)
      }
      logOddsBase[j] = chances ? logA - Math.log(b + x + s - 1) : -Infinity
    }
    const logAlphaTx = p.txs.map((t) => Math.log(alpha + t))
    const logAlphaT = p.Ts.map((t) => Math.log(alpha + t))
    const invAlphaTx = p.txs.map((t) => 1 / (alpha + t))
    const invAlphaT = p.Ts.map((t) => 1 / (alpha + t))
    const { x: xArr, w, xi, txi, Ti } = p
    let gr = 0
    let gAlpha = 0
    let ga = 0
    let gb = 0
    let weight = 0
    for (let i = 0; i < p.size; i++) {
      const j = xi[i]!
      const wi = w[i]!
      const rx = r + xArr[i]!
      const lT = logAlphaT[Ti[i]!]!
      const lTx = logAlphaTx[txi[i]!]!
      const iT = invAlphaT[Ti[i]!]!
      const logOdds = logOddsBase[j]! + rx * (lT - lTx)
      // σ(logOdds) from e^{−|logOdds|}, without overflow; 0 without a dropout chance.
      const e = Math.exp(-Math.abs(logOdds))
      const sigma = logOdds >= 0 ? 1 / (1 + e) : e / (1 + e)
      weight += wi
      gr += wi * (dBaseR[j]! - lT + sigma * (lT - lTx))
      gAlpha += wi * (-rx * iT + sigma * rx * (iT - invAlphaTx[txi[i]!]!))
      ga += wi * (dBaseA[j]! + sigma / a)
      gb += wi * (dBaseB[j]! - sigma * oddsPerB[j]!)
    }
    return [gr, gAlpha + (weight * r) / alpha, ga, gb]
  }

  /** ln of the odds that the customer dropped out after the last purchase; −∞ without a chance to. */
  function logDeadOdds(params: TransactionParams, x: number, tx: number, T: number): number {
    if (x + s === 0) return -Infinity
    const { r, alpha, a, b } = params
    return Math.log(a) - Math.log(b + x + s - 1) + (r + x) * (Math.log(alpha + T) - Math.log(alpha + tx))
  }

  /**
   * E[Y(t) | x, t_x, T, alive at T]: the unconditional E[X(t)] with the posterior parameters of a
   * customer still alive, ((a+b+x+s−1)/(a−1))·[1 − ((α+T)/(α+T+t))^{r+x}·₂F₁(r+x, b+x+s; a+b+x+s−1; t/(α+T+t))].
   */
  function expectedPurchasesIfAlive(params: TransactionParams, t: number, x: number, _tx: number, T: number): number {
    if (t <= 0) return 0
    const { r, alpha, a, b } = params
    return expectedPurchasesNumerator(a, r + x, b + x + s, a + b + x + s - 1, t / (alpha + T + t))
  }

  /** E[Y(t) | x, t_x, T]: expected purchases in (T, T + t] (FHL 2005 eq. 10; BDF 2007), the above / (1 + odds). */
  function expectedPurchases(params: TransactionParams, t: number, x: number, tx: number, T: number): number {
    const ifAlive = expectedPurchasesIfAlive(params, t, x, tx, T)
    if (ifAlive === 0) return 0
    const logOdds = logDeadOdds(params, x, tx, T)
    return logOdds === -Infinity ? ifAlive : ifAlive * Math.exp(-log1pExp(logOdds))
  }

  /**
   * E[X(t)]: expected repeat purchases in (0, t] of a customer acquired at 0 (FHL 2005 eq. 9); for
   * MBG/NBD the 1 / (1 + a/b) it gets at x = T = 0 is the chance of surviving the first purchase.
   */
  function expectedPurchasesUnconditional(params: TransactionParams, t: number): number {
    return expectedPurchases(params, t, 0, 0, 0)
  }

  /** P(alive | x, t_x, T) = 1 / (1 + odds); exactly 1 for BG/NBD at x = 0. */
  function probabilityAlive(params: TransactionParams, x: number, tx: number, T: number): number {
    const logOdds = logDeadOdds(params, x, tx, T)
    return logOdds === -Infinity ? 1 : expit(-logOdds)
  }

  const kernel = kernelFunctions(name, patternLogLikelihood, patternLogLikelihoodGradient)
  return { patternLogLikelihood, patternLogLikelihoodGradient, ...kernel, expectedPurchases, expectedPurchasesIfAlive, expectedPurchasesUnconditional, probabilityAlive }
}

/** Steps summed term by term, at most (a whole count of purchases, in practice). */
const MAX_STEPS = 10_000

/**
 * Σ_{k<n} term(k) for each n of `counts`, by one running sum over them in ascending order, so
 * O(max n) terms in all; NaN for an n that is not a whole number up to MAX_STEPS (the caller
 * computes those otherwise). Summed in the order digammaStep sums, so the same values.
 */
export function runningStepSums(counts: Float64Array, term: (k: number) => number): Float64Array {
  const out = new Float64Array(counts.length).fill(NaN)
  const order = Array.from(counts.keys()).sort((i, j) => counts[i]! - counts[j]!)
  let k = 0
  let sum = 0
  for (const j of order) {
    const n = counts[j]!
    if (!Number.isInteger(n) || n < 0 || n > MAX_STEPS) continue
    for (; k < n; k++) sum += term(k)
    out[j] = sum
  }
  return out
}

/**
 * ψ(z + n) − ψ(z) for each n of `counts`: Σ_{k<n} 1/(z+k) for a whole n (runningStepSums), exact
 * where the two ψ nearly cancel (z large); by ψ itself for the others.
 */
function digammaSteps(z: number, counts: Float64Array): Float64Array {
  const out = runningStepSums(counts, (k) => 1 / (z + k))
  for (let j = 0; j < out.length; j++) if (Number.isNaN(out[j]!)) out[j] = digamma(z + counts[j]!) - digamma(z)
  return out
}

/**
 * [ψ(b + n) − ψ(b)] − [ψ(a + b + n) − ψ(a + b)] for each n of `counts`: Σ_{k<n} a / ((b+k)(a+b+k))
 * for a whole n. On the rare-dropout ridge (a → 0, b → ∞) the four ψ cancel to a few parts in 10¹¹,
 * where the sum keeps every digit.
 */
function digammaStepGaps(a: number, b: number, counts: Float64Array): Float64Array {
  const out = runningStepSums(counts, (k) => a / ((b + k) * (a + b + k)))
  for (let j = 0; j < out.length; j++) if (Number.isNaN(out[j]!)) out[j] = digammaStep(b, counts[j]!) - digammaStep(a + b, counts[j]!)
  return out
}

/** ψ(z + n) − ψ(z) of one n (digammaSteps). */
export const digammaStep = (z: number, n: number): number => digammaSteps(z, Float64Array.of(n))[0]!

/** [ψ(b + n) − ψ(b)] − [ψ(a + b + n) − ψ(a + b)] of one n (digammaStepGaps). */
export const digammaStepGap = (a: number, b: number, n: number): number => digammaStepGaps(a, b, Float64Array.of(n))[0]!
