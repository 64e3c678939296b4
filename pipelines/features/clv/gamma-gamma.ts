/**
 * Gamma-Gamma spend model (Fader, Hardie & Lee 2005, "RFM and CLV"; Hardie note 025). Each transaction
 * value is Gamma(p, ν) with ν ~ Gamma(q, γ) across customers; only the mean z̄ of a customer's x repeat
 * transactions enters, so only customers with x > 0 and z̄ > 0 are fitted. The model assumes spend is
 * independent of frequency: check corr(x, z̄) is near 0 before trusting it (0.11 on CDNOW).
 */
import { minimizeWithWarmStart, type NelderMeadOptions } from './optimize.ts'
import { digamma, lgamma } from './special.ts'

export interface GammaGammaParams {
  p: number
  q: number
  gamma: number
}

export interface SpendObservation {
  /** Repeat purchases. */
  x: number
  /** Mean value of the repeat purchases. */
  zbar: number
  weight?: number
}

export interface GammaGammaFitOptions {
  /**
   * Keep q > 1 (default true) by fitting ln(q − 1), so the population mean pγ/(q−1) exists and is
   * positive. With q <= 1 the spend distribution has no mean and x = 0 customers get no estimate
   * (lifetimes issues #146/#362/#370: negative CLV). Turn off only to inspect the unconstrained MLE.
   */
  qConstraint?: boolean
  /** L2 penalty on (p, q, γ/s), s = mean z̄ (default 0), as lifetimes' `penalizer_coef`. */
  penalizer?: number
  optimizer?: NelderMeadOptions
  /** Above this many customers (default 40,000) the fit warm-starts on a sample (minimizeWithWarmStart); Infinity: plain Nelder–Mead. */
  warmStartAbove?: number
}

export interface GammaGammaFit {
  params: GammaGammaParams
  /** Σ w·ℓ in the original currency unit, without the penalty. */
  ll: number
  iterations: number
  evaluations: number
  converged: boolean
  /** Parameters that ended on the box |ln θ| <= 20 (spend scaled by its mean), e.g. when every customer has the same z̄. */
  atBound: (keyof GammaGammaParams)[]
  /** Σ weights of the customers used (x > 0, z̄ > 0); 0 means nothing could be fitted (see fitGammaGamma). */
  customers: number
  /** Weighted mean z̄ of the customers used (0 when none). */
  meanSpend: number
}

const LOG_BOUND = 20
/** Above this many customers the fit warm-starts on a sample (see minimizeWithWarmStart). */
const WARM_START_ABOVE = 40_000
const WARM_START_SAMPLE = 15_000

/**
 * The data reduced to what the likelihood needs per evaluation: per distinct x its total weight, and
 * per customer the weight, x and total repeat spend v = z̄·x; the parameter-free sums are kept once.
 */
interface SpendData {
  size: number
  w: Float64Array
  x: Float64Array
  v: Float64Array
  distinctX: Float64Array
  weightOfX: Float64Array
  totalWeight: number
  /** Σ w·x·ln z̄, Σ w·ln z̄, Σ w·x·ln x. */
  sumWXLogM: number
  sumWLogM: number
  sumWXLogX: number
}

function usable(o: SpendObservation): boolean {
  return Number.isFinite(o.x) && o.x > 0 && Number.isFinite(o.zbar) && o.zbar > 0 && (o.weight ?? 1) > 0
}

function toSpendData(rows: readonly SpendObservation[], scale: number): SpendData {
  const n = rows.length
  const w = new Float64Array(n)
  const x = new Float64Array(n)
  const v = new Float64Array(n)
  const byX = new Map<number, number>()
  let totalWeight = 0
  let sumWXLogM = 0
  let sumWLogM = 0
  let sumWXLogX = 0
  for (let i = 0; i < n; i++) {
    const o = rows[i]!
    const wi = o.weight ?? 1
    const m = o.zbar / scale
    w[i] = wi
    x[i] = o.x
    v[i] = m * o.x
    byX.set(o.x, (byX.get(o.x) ?? 0) + wi)
    totalWeight += wi
    const logM = Math.log(m)
    sumWXLogM += wi * o.x * logM
    sumWLogM += wi * logM
    sumWXLogX += wi * o.x * Math.log(o.x)
  }
  return { size: n, w, x, v, distinctX: Float64Array.from(byX.keys()), weightOfX: Float64Array.from(byX.values()), totalWeight, sumWXLogM, sumWLogM, sumWXLogX }
}

/**
 * Σ w·ℓ, ℓ = lnΓ(px+q) − lnΓ(px) − lnΓ(q) + q ln γ + (px−1) ln z̄ + px ln x − (px+q) ln(γ + z̄x)
 * (note 025 eq. 1a, the density of z̄). The ln Γ terms depend on x only and the ln z̄, ln x terms are
 * linear in p, so an evaluation costs one logarithm per customer.
 */
function spendLogLikelihood(params: GammaGammaParams, d: SpendData): number {
  const { p, q, gamma } = params
  let sum = d.totalWeight * (q * Math.log(gamma) - lgamma(q)) + p * (d.sumWXLogM + d.sumWXLogX) - d.sumWLogM
  for (let j = 0; j < d.distinctX.length; j++) {
    const px = p * d.distinctX[j]!
    sum += d.weightOfX[j]! * (lgamma(px + q) - lgamma(px))
  }
  const { w, x, v } = d
  for (let i = 0; i < d.size; i++) sum -= w[i]! * (p * x[i]! + q) * Math.log(gamma + v[i]!)
  return sum
}

/**
 * ∂(Σ w·ℓ)/∂(p, q, γ), the likelihood above differentiated (ψ the digamma function):
 *   ∂/∂p = Σ w·[x·(ψ(px+q) − ψ(px)) + x ln z̄ + x ln x − x ln(γ + z̄x)],
 *   ∂/∂q = Σ w·[ψ(px+q) − ψ(q) + ln γ − ln(γ + z̄x)],
 *   ∂/∂γ = Σ w·[q/γ − (px+q)/(γ + z̄x)].
 * One logarithm and one division per customer: the polish's gradient in one pass, not six.
 */
function spendLogLikelihoodGradient(params: GammaGammaParams, d: SpendData): number[] {
  const { p, q, gamma } = params
  let gp = d.sumWXLogM + d.sumWXLogX
  let gq = d.totalWeight * (Math.log(gamma) - digamma(q))
  let gGamma = (d.totalWeight * q) / gamma
  for (let j = 0; j < d.distinctX.length; j++) {
    const x = d.distinctX[j]!
    const psiPxq = digamma(p * x + q)
    gp += d.weightOfX[j]! * x * (psiPxq - digamma(p * x))
    gq += d.weightOfX[j]! * psiPxq
  }
  const { w, x, v } = d
  for (let i = 0; i < d.size; i++) {
    const wi = w[i]!
    const xi = x[i]!
    const logGv = Math.log(gamma + v[i]!)
    gp -= wi * xi * logGv
    gq -= wi * logGv
    gGamma -= (wi * (p * xi + q)) / (gamma + v[i]!)
  }
  return [gp, gq, gGamma]
}

/** ∂(Σ w·ℓ)/∂(p, q, γ) over the usable customers (x > 0, z̄ > 0), in their own currency unit. */
export function logLikelihoodGradient(params: GammaGammaParams, data: readonly SpendObservation[]): number[] {
  return spendLogLikelihoodGradient(params, toSpendData(data.filter(usable), 1))
}

/** Σ w·ℓ over the usable customers (x > 0, z̄ > 0); the others are skipped. */
export function totalLogLikelihood(params: GammaGammaParams, data: readonly SpendObservation[]): number {
  return spendLogLikelihood(params, toSpendData(data.filter(usable), 1))
}

/** ℓ of one customer (x > 0, z̄ > 0). */
export function logLikelihood(params: GammaGammaParams, x: number, zbar: number): number {
  return spendLogLikelihood(params, toSpendData([{ x, zbar }], 1))
}

/**
 * What the fit minimises, in u = (ln p, ln(q − 1) or ln q, ln γ) with spend in units of its mean
 * (so the currency does not matter): the mean negative log-likelihood over some buyers plus the
 * penalty, and the full objective's gradient. `rows` are usable ones (x > 0, z̄ > 0), at least one.
 */
export function spendObjective(rows: readonly SpendObservation[], options: GammaGammaFitOptions = {}) {
  const raw = toSpendData(rows, 1)
  let weighted = 0
  for (const o of rows) weighted += (o.weight ?? 1) * o.zbar
  const meanSpend = weighted / raw.totalWeight
  const scaled = toSpendData(rows, meanSpend)
  const qConstraint = options.qConstraint ?? true
  const penalizer = options.penalizer ?? 0
  const toParams = (u: readonly number[]): GammaGammaParams => ({
    p: Math.exp(u[0]!),
    q: qConstraint ? 1 + Math.exp(u[1]!) : Math.exp(u[1]!),
    gamma: Math.exp(u[2]!),
  })
  const objectiveOn = (d: SpendData) => (u: readonly number[]) => {
    const params = toParams(u)
    const penalty = penalizer * (params.p ** 2 + params.q ** 2 + params.gamma ** 2)
    return -spendLogLikelihood(params, d) / d.totalWeight + penalty
  }
  // The full objective's gradient in u (∂p/∂u₀ = p, ∂q/∂u₁ = q − 1 or q, ∂γ/∂u₂ = γ), for the polish.
  const fullGradient = (u: readonly number[]): number[] => {
    const params = toParams(u)
    const [gp, gq, gGamma] = spendLogLikelihoodGradient(params, scaled)
    const slope = (g: number, theta: number) => -g / scaled.totalWeight + 2 * penalizer * theta
    return [params.p * slope(gp!, params.p), (qConstraint ? params.q - 1 : params.q) * slope(gq!, params.q), params.gamma * slope(gGamma!, params.gamma)]
  }
  return { raw, meanSpend, scaled, qConstraint, toParams, objectiveOn, fullGradient }
}

/**
 * Maximum-likelihood fit on the customers with x > 0 and z̄ > 0 (others are ignored, as the model is
 * defined on repeat-purchase means). Spend is scaled by its mean during the fit, so the currency unit
 * does not matter. With no usable customer there is nothing to fit: the result has `customers: 0`,
 * `converged: false` and placeholder params {p: 1, q: 2, gamma: 1}, which the caller must not use.
 */
export function fitGammaGamma(data: readonly SpendObservation[], options: GammaGammaFitOptions = {}): GammaGammaFit {
  const rows = data.filter(usable)
  if (rows.length === 0) {
    return { params: { p: 1, q: 2, gamma: 1 }, ll: 0, iterations: 0, evaluations: 0, converged: false, atBound: [], customers: 0, meanSpend: 0 }
  }
  const { raw, meanSpend, scaled, qConstraint, toParams, objectiveOn, fullGradient } = spendObjective(rows, options)
  // Start at p = 1, q = 2 and γ matching the mean spend (pγ/(q−1) = 1 in scaled units).
  const u0 = [0, qConstraint ? 0 : Math.log(2), 0]
  const sample = rows.length > (options.warmStartAbove ?? WARM_START_ABOVE) ? objectiveOn(toSpendData(sampleRows(rows, WARM_START_SAMPLE), meanSpend)) : undefined
  const bounds = { lower: [-LOG_BOUND, -LOG_BOUND, -LOG_BOUND], upper: [LOG_BOUND, LOG_BOUND, LOG_BOUND] }
  const result = minimizeWithWarmStart(objectiveOn(scaled), sample, u0, { ...bounds, ...options.optimizer }, fullGradient)
  const fitted = toParams(result.x)
  const names = ['p', 'q', 'gamma'] as const
  const atBound = names.filter((_, i) => Math.abs(Math.abs(result.x[i]!) - LOG_BOUND) < 1e-3)
  const params = { ...fitted, gamma: fitted.gamma * meanSpend }
  // Reported in the original currency unit (in scaled units each ℓ would be larger by ln s).
  const ll = spendLogLikelihood(params, raw)
  return { params, ll, iterations: result.iterations, evaluations: result.evaluations, converged: result.converged, atBound, customers: raw.totalWeight, meanSpend }
}

/** A fixed, evenly spread pseudo-random subset of about `target` rows (as samplePatterns). */
function sampleRows<T>(rows: readonly T[], target: number): T[] {
  const threshold = (target / rows.length) * 0x1_0000_0000
  return rows.filter((_, i) => Math.imul(i + 1, 2654435761) >>> 0 < threshold)
}

/** Population mean spend pγ/(q−1); NaN when q <= 1 (no finite mean). */
export function populationMeanSpend(params: GammaGammaParams): number {
  return params.q > 1 ? (params.p * params.gamma) / (params.q - 1) : NaN
}

/**
 * E[M | x, z̄] = (1 − w)·pγ/(q−1) + w·z̄ with w = px/(px + q − 1) (note 025 eq. 5): the observed mean
 * shrunk towards the population mean, more so for few purchases. x = 0 (or z̄ unusable) gives the
 * population mean.
 *
 * q <= 1 (only reachable with hand-made params or `qConstraint: false`): there is no population mean.
 * For x > 0 the result is z̄ itself, the q → 1 limit of the formula (w → 1); for x = 0 it is
 * `fallback` (default 0: no spend is claimed for a customer we know nothing about).
 */
export function expectedAverageSpend(params: GammaGammaParams, x: number, zbar: number, fallback = 0): number {
  const { p, q } = params
  const observed = x > 0 && Number.isFinite(zbar) && zbar > 0
  if (q <= 1) return observed ? zbar : fallback
  const population = populationMeanSpend(params)
  if (!observed) return population
  const px = p * x
  const w = px / (px + q - 1)
  return (1 - w) * population + w * zbar
}
