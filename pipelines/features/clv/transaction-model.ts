/**
 * What BG/NBD and MBG/NBD share: the parameter set, the common interface the product selects by name,
 * and the maximum-likelihood fit (pattern compression, time scaling, log-parameters, penalty, bounds).
 */
import { minimizeWithWarmStart, type MinimizeResult, type NelderMeadOptions } from './optimize.ts'
import { compressPatterns, samplePatterns, scalePatterns, type Patterns, type RfmObservation } from './patterns.ts'
import { hyp2f1Signed } from './special.ts'

export type TransactionModelName = 'bgnbd' | 'mbgnbd'

/** Purchase rate λ ~ Gamma(shape r, rate α); dropout probability p ~ Beta(a, b). α is in the data's time unit. */
export interface TransactionParams {
  r: number
  alpha: number
  a: number
  b: number
}

export interface TransactionFitOptions {
  /**
   * L2 penalty coefficient on the parameters, as lifetimes' `penalizer_coef` (default 0): the objective is
   * −Σwℓ/Σw + penalizer·(r² + (α/s)² + a² + b²), with α taken in the scaled time unit s = max T.
   */
  penalizer?: number
  /**
   * Starting point (original time unit); defaults are data driven. Several points: the fit runs
   * from each in turn until a run converges and keeps the best objective of the runs made (a
   * likelihood with a flat ridge, such as MBG/NBD's a → 0, b → ∞ when dropout is rare, can hold
   * Nelder–Mead far from the optimum from one start and not from another).
   */
  initial?: Partial<TransactionParams> | readonly Partial<TransactionParams>[]
  /**
   * A Gaussian prior on the log-parameters, centred on `params` (original time unit) with
   * precision `precision` per parameter: the fit maximises Σwℓ + ln prior (a MAP estimate). With
   * few customers the estimate stays near `params`; as customers accumulate their likelihood
   * outweighs the fixed prior and the estimate moves to their own maximum.
   */
  prior?: { params: TransactionParams; precision: number }
  /** Overrides for the Nelder–Mead settings. */
  optimizer?: NelderMeadOptions
  /**
   * Above this many distinct (x, t_x, T) patterns (default 2,000: WARM_START_ABOVE) the fit starts with Nelder–Mead on a
   * fixed pseudo-random sample of 15,000 patterns and finishes with a quasi-Newton polish on all of
   * them, from the sample's Hessian and with the likelihood's gradient in closed form where the model
   * has one (falling back to full Newton, then Nelder–Mead, if it stalls). Infinity: always plain Nelder–Mead.
   */
  warmStartAbove?: number
}

export interface TransactionFit {
  model: TransactionModelName
  params: TransactionParams
  /** Σ w·ℓ in the data's original time unit (comparable with published values), without the penalty. */
  ll: number
  iterations: number
  evaluations: number
  converged: boolean
  /**
   * Parameters that ended on the box |ln θ| <= LOG_PARAM_BOUND (in scaled time): the likelihood keeps
   * improving towards 0 or ∞ there (e.g. nobody repeats, so r → 0). The values are finite but only the
   * predictions they imply are meaningful, not the parameters themselves.
   */
  atBound: (keyof TransactionParams)[]
  /** Σ weights (customers) and distinct (x, t_x, T) patterns. */
  customers: number
  patterns: number
}

export interface TransactionModel {
  readonly name: TransactionModelName
  fit(data: readonly RfmObservation[], options?: TransactionFitOptions): TransactionFit
  /** ℓ of one customer. */
  logLikelihood(params: TransactionParams, x: number, tx: number, T: number): number
  /** Σ w·ℓ over customers. */
  totalLogLikelihood(params: TransactionParams, data: readonly RfmObservation[]): number
  /** E[purchases in (T, T + t] | x, t_x, T]. */
  expectedPurchases(params: TransactionParams, t: number, x: number, tx: number, T: number): number
  /**
   * E[purchases in (T, T + t] | x, t_x, T, alive at T]: what the customer buys had they not
   * dropped out by now. expectedPurchases = probabilityAlive · this (a dead customer buys nothing).
   * It does not depend on t_x: the last purchase's time says only whether the customer is still
   * alive (probabilityAlive); a live customer's purchase rate is learnt from x and T. Callers
   * (features.ts ClvMemo) share it between customers of one (x, T).
   */
  expectedPurchasesIfAlive(params: TransactionParams, t: number, x: number, tx: number, T: number): number
  /** E[repeat purchases in (0, t]] for a new customer. */
  expectedPurchasesUnconditional(params: TransactionParams, t: number): number
  /** P(still alive at T | x, t_x, T); churn = 1 − this. */
  probabilityAlive(params: TransactionParams, x: number, tx: number, T: number): number
}

/** Box on the log-parameters in scaled time: θ ∈ [e^−20, e^20] ≈ [2e-9, 4.9e8]. */
export const LOG_PARAM_BOUND = 20

const PARAM_NAMES = ['r', 'alpha', 'a', 'b'] as const
/**
 * Above this many patterns a fit is minimizeWithWarmStart's: Nelder–Mead to a loose tolerance on at
 * most WARM_START_SAMPLE of them (all of them up to that size), then Newton on all. It reaches the
 * optimum plain Nelder–Mead reaches in about half the evaluations (the first fit of a streamed
 * backlog, 6,800 patterns: 396 against 728, 90 ms against 165), and sits closer to it.
 */
const WARM_START_ABOVE = 2_000
const WARM_START_SAMPLE = 15_000

/** Σ w·ℓ over compressed patterns; the model-specific part of a fit. */
export type PatternLogLikelihood = (params: TransactionParams, patterns: Patterns) => number
/** ∂(Σ w·ℓ)/∂(r, α, a, b) over compressed patterns, when the model has it in closed form. */
export type PatternLogLikelihoodGradient = (params: TransactionParams, patterns: Patterns) => number[]

/**
 * What follows from a model's likelihood kernel alone, the same for every model: ℓ of one customer,
 * Σ w·ℓ over customers (weights default to 1) and the maximum-likelihood fit.
 */
export function kernelFunctions(model: TransactionModelName, kernel: PatternLogLikelihood, gradient?: PatternLogLikelihoodGradient) {
  return {
    logLikelihood: (params: TransactionParams, x: number, tx: number, T: number): number => kernel(params, compressPatterns([{ x, tx, T }])),
    totalLogLikelihood: (params: TransactionParams, data: readonly RfmObservation[]): number => kernel(params, compressPatterns(data)),
    fit: (data: readonly RfmObservation[], options?: TransactionFitOptions): TransactionFit => fitTransactionModel(model, kernel, compressPatterns(data), options, gradient),
    /** The fit on patterns already compressed (compressPatterns): a caller fitting the same data twice compresses it once. */
    fitPatterns: (patterns: Patterns, options?: TransactionFitOptions): TransactionFit => fitTransactionModel(model, kernel, patterns, options, gradient),
  }
}

/**
 * What a fit minimises, in u = ln θ with time in units of max T (as lifetimes, so α and the penalty
 * are on a data-independent scale): the mean negative log-likelihood over some patterns (all of
 * them, or a sample) plus the penalty and the prior's share; and, given the model's gradient, the
 * full objective's gradient.
 */
export function transactionObjective(kernel: PatternLogLikelihood, patterns: Patterns, options: TransactionFitOptions = {}, gradient?: PatternLogLikelihoodGradient) {
  const scale = patterns.maxT > 0 ? patterns.maxT : 1
  const scaled = scalePatterns(patterns, scale)
  const penalizer = options.penalizer ?? 0
  const toParams = (u: readonly number[]): TransactionParams => ({ r: Math.exp(u[0]!), alpha: Math.exp(u[1]!), a: Math.exp(u[2]!), b: Math.exp(u[3]!) })
  const prior = options.prior
  const priorAt = prior ? PARAM_NAMES.map((k) => Math.log(k === 'alpha' ? prior.params.alpha / scale : prior.params[k])) : null
  // −ln prior up to a constant; divided by the patterns' weight like the likelihood, so a sample's objective keeps the full prior's share.
  const priorCost = (u: readonly number[]) => (priorAt ? (prior!.precision / 2) * u.reduce((s, ui, i) => s + (ui - priorAt[i]!) ** 2, 0) : 0)
  const objectiveOn = (p: Patterns) => (u: readonly number[]) => {
    const params = toParams(u)
    const penalty = penalizer * (params.r ** 2 + params.alpha ** 2 + params.a ** 2 + params.b ** 2)
    return -(kernel(params, p) - priorCost(u) * (p.totalWeight / patterns.totalWeight)) / p.totalWeight + penalty
  }
  // The full objective's gradient in u = ln θ (∂/∂u = θ·∂/∂θ), for the polish: one pass over the
  // patterns where a central difference takes eight.
  const fullGradient = gradient
    ? (u: readonly number[]): number[] => {
        const params = toParams(u)
        const g = gradient(params, scaled)
        return PARAM_NAMES.map((k, i) => {
          const theta = params[k]
          const priorSlope = priorAt ? prior!.precision * (u[i]! - priorAt[i]!) : 0
          return -(theta * g[i]! - priorSlope) / scaled.totalWeight + 2 * penalizer * theta * theta
        })
      }
    : undefined
  return { scale, scaled, toParams, objectiveOn, fullGradient }
}

export function fitTransactionModel(
  model: TransactionModelName,
  kernel: PatternLogLikelihood,
  patterns: Patterns,
  options: TransactionFitOptions = {},
  gradient?: PatternLogLikelihoodGradient,
): TransactionFit {
  if (patterns.size === 0) throw new RangeError(`${model}: no customers to fit`)
  const { scale, scaled, toParams, objectiveOn, fullGradient } = transactionObjective(kernel, patterns, options, gradient)

  // Default start: r = 1 and α matching the observed repeat rate (E[λ] = r/α), a = b = 1.
  const rate = patterns.weightedX / Math.max(1e-12, sumWT(scaled))
  const bound = LOG_PARAM_BOUND
  const startAt = (init: Partial<TransactionParams>): number[] => {
    const start = {
      r: init.r ?? 1,
      alpha: init.alpha !== undefined ? init.alpha / scale : rate > 0 ? clamp(1 / rate, 1e-3, 1e3) : 1,
      a: init.a ?? 1,
      b: init.b ?? 1,
    }
    return PARAM_NAMES.map((k) => clamp(Math.log(start[k]), -bound, bound))
  }
  const nmOptions: NelderMeadOptions = {
    lower: [-bound, -bound, -bound, -bound],
    upper: [bound, bound, bound, bound],
    ...options.optimizer,
  }
  const large = patterns.size > (options.warmStartAbove ?? WARM_START_ABOVE)
  const sample = large ? objectiveOn(samplePatterns(scaled, WARM_START_SAMPLE)) : undefined
  const starts: readonly Partial<TransactionParams>[] = Array.isArray(options.initial) ? options.initial : [(options.initial as Partial<TransactionParams> | undefined) ?? options.prior?.params ?? {}]
  if (starts.length === 0) throw new RangeError(`${model}: initial must name at least one starting point`)
  // A converged run wins over one that stopped at the iteration cap, unless the latter is better
  // by more than noise (a flat boundary optimum, say, where neither run means much).
  const better = (run: MinimizeResult, best: MinimizeResult) => {
    const noise = 1e-8 * (1 + Math.abs(best.fx))
    return run.converged === best.converged ? run.fx < best.fx : run.converged ? run.fx <= best.fx + noise : run.fx < best.fx - noise
  }
  let result: MinimizeResult | undefined
  let iterations = 0
  let evaluations = 0
  for (const init of starts) {
    const run = minimizeWithWarmStart(objectiveOn(scaled), sample, startAt(init), nmOptions, fullGradient)
    iterations += run.iterations
    evaluations += run.evaluations
    if (!result || better(run, result)) result = run
    if (run.converged) break
  }
  result = result!

  const u = result.x
  const atBound = PARAM_NAMES.filter((_, i) => Math.abs(Math.abs(u[i]!) - bound) < 1e-3)
  const fitted = toParams(u)
  const params: TransactionParams = { ...fitted, alpha: fitted.alpha * scale }
  // Reported in the original time unit (in scaled time ℓ would be larger by x·ln(scale)).
  const ll = kernel(params, patterns)
  return { model, params, ll, iterations, evaluations, converged: result.converged, atBound, customers: patterns.totalWeight, patterns: patterns.size }
}

function sumWT(p: Patterns): number {
  let s = 0
  for (let i = 0; i < p.size; i++) s += p.w[i]! * p.T[i]!
  return s
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v))
}

/**
 * (c / (a − 1)) · [1 − (1 − z)^{k} · ₂F₁(k, m; c; z)], the numerator shared by the BG/NBD family's
 * expected-purchase formulas (k = r + x, m = b + x [+1], c = a + b + x [−1 or 0]).
 *
 * Two removable singularities are stepped around rather than special-cased algebraically:
 * - a = 1: both factors vanish (0/0); within 1e-7 of it the value is the mean of a = 1 ± 1e-6, which
 *   is accurate to O(1e-12).
 * - c a non-positive integer (BG/NBD with x = 0 and a + b = 1 exactly, lifetimes issue #302): ₂F₁ has a
 *   pole but c·₂F₁ does not; c is moved by 1e-9. For c < 0 the series is negative and the signed form
 *   keeps the product correct (lifetimes returns NaN there).
 */
export function expectedPurchasesNumerator(a: number, k: number, m: number, c: number, z: number): number {
  if (Math.abs(a - 1) < 1e-7) {
    const h = 1e-6
    return 0.5 * (expectedPurchasesNumerator(1 - h, k, m, c - (a - (1 - h)), z) + expectedPurchasesNumerator(1 + h, k, m, c - (a - (1 + h)), z))
  }
  if (c <= 0 && Number.isInteger(c)) c += 1e-9
  const f = hyp2f1Signed(k, m, c, z)
  if (f.sign === 0) return f.log === -Infinity ? c / (a - 1) : NaN
  const logProduct = k * Math.log1p(-z) + f.log
  // 1 − s·e^L, with expm1 keeping precision when the product is close to 1 (short horizons).
  const bracket = f.sign === 1 ? -Math.expm1(logProduct) : 1 + Math.exp(logProduct)
  return (c / (a - 1)) * bracket
}
