/**
 * Special functions for the customer-base models, all in log space so that customers with thousands of
 * repeat purchases or ages of thousands of days never overflow. Pure, no dependencies.
 */

const HALF_LOG_2PI = 0.5 * Math.log(2 * Math.PI)

// Lanczos approximation, g = 7, n = 9 (Godfrey's coefficients): ~1e-15 relative on [0.5, 10].
const LANCZOS_G = 7
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
] as const

// Stirling series coefficients B_2k / (2k(2k-1)) for k = 1..7; the next term is below 1e-17 for x >= 10.
const STIRLING = [1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156] as const

/**
 * ln Γ(x) for real x (ln |Γ(x)| for negative non-integers; +Infinity at the poles 0, -1, -2, …).
 * Stirling's series for x >= 10, Lanczos on [0.5, 10), ln Γ(x+1) − ln x below 0.5 (keeps tiny x exact
 * without a sine), reflection for x <= 0.
 */
export function lgamma(x: number): number {
  if (Number.isNaN(x)) return NaN
  if (x === Infinity) return Infinity
  if (x <= 0) {
    if (Number.isInteger(x)) return Infinity
    return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - lgamma(1 - x)
  }
  if (x < 0.5) return lgamma(x + 1) - Math.log(x)
  if (x >= 10) {
    const inv = 1 / x
    const inv2 = inv * inv
    let series = 0
    for (let k = STIRLING.length - 1; k >= 0; k--) series = series * inv2 + STIRLING[k]!
    return (x - 0.5) * Math.log(x) - x + HALF_LOG_2PI + series * inv
  }
  const z = x - 1
  let sum = LANCZOS[0]
  for (let i = 1; i < LANCZOS.length; i++) sum += LANCZOS[i]! / (z + i)
  const t = z + LANCZOS_G + 0.5
  return HALF_LOG_2PI + (z + 0.5) * Math.log(t) - t + Math.log(sum)
}

// ψ's asymptotic series: B_2k / (2k) for k = 1..7 (the next term is below 1e-17 for x >= 10).
const DIGAMMA_SERIES = [1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12] as const

/**
 * ψ(x) = d ln Γ(x) / dx for x > 0 (NaN otherwise: the fits' parameters are positive). Shifted up by
 * ψ(x) = ψ(x + 1) − 1/x to x >= 10, then ln x − 1/(2x) − Σ B_2k / (2k x^2k).
 */
export function digamma(x: number): number {
  if (!(x > 0)) return NaN
  if (x === Infinity) return Infinity
  let shift = 0
  for (; x < 10; x++) shift -= 1 / x
  const inv2 = 1 / (x * x)
  let series = 0
  for (let k = DIGAMMA_SERIES.length - 1; k >= 0; k--) series = series * inv2 + DIGAMMA_SERIES[k]!
  return shift + Math.log(x) - 0.5 / x - series * inv2
}

/** ln B(a, b) = ln Γ(a) + ln Γ(b) − ln Γ(a + b). */
export function logBeta(a: number, b: number): number {
  return lgamma(a) + lgamma(b) - lgamma(a + b)
}

/** ln(e^a + e^b) without overflow; −Infinity inputs are fine. */
export function logAddExp(a: number, b: number): number {
  if (a === -Infinity) return b
  if (b === -Infinity) return a
  return a > b ? a + Math.log1p(Math.exp(b - a)) : b + Math.log1p(Math.exp(a - b))
}

/** ln Σ e^{v_i}; −Infinity for an empty list. */
export function logSumExp(values: readonly number[]): number {
  let max = -Infinity
  for (const v of values) if (v > max) max = v
  if (max === -Infinity || !Number.isFinite(max)) return max
  let sum = 0
  for (const v of values) sum += Math.exp(v - max)
  return max + Math.log(sum)
}

/** ln(1 + e^x) (softplus), exact in both tails. */
export function log1pExp(x: number): number {
  return x > 0 ? x + Math.log1p(Math.exp(-x)) : Math.log1p(Math.exp(x))
}

/** The logistic function 1 / (1 + e^{−x}), stable for large |x|. */
export function expit(x: number): number {
  if (x >= 0) return 1 / (1 + Math.exp(-x))
  const e = Math.exp(x)
  return e / (1 + e)
}

/** A real number as (ln |v|, sign): `sign` is 1, −1 or 0 (then `log` is −Infinity). */
export interface SignedLog {
  log: number
  sign: 1 | -1 | 0
}

const SERIES_EPS = 1e-17
const SERIES_MAX_TERMS = 1_000_000
const RESCALE_ABOVE = 1e250

/**
 * The Gauss series Σ (a)_k (b)_k / ((c)_k k!) z^k for 0 <= z < 1 as a signed log. Terms and the partial
 * sum are rescaled whenever they grow past 1e250 (the scale goes into `offset`), so a series whose
 * terms peak at e^10000 is summed without overflow. Parameters may be negative (c not a pole).
 */
function gaussSeries(a: number, b: number, c: number, z: number): SignedLog {
  let term = 1
  let sum = 1
  let offset = 0
  // Past this index every Pochhammer factor is positive, so the ratio of terms tends to z monotonically.
  const settled = Math.max(0, -a, -b, -c) + 1
  for (let k = 0; k < SERIES_MAX_TERMS; k++) {
    const ratio = ((a + k) * (b + k) * z) / ((c + k) * (k + 1))
    term *= ratio
    sum += term
    if (term === 0) break
    const absTerm = Math.abs(term)
    if (absTerm > RESCALE_ABOVE || Math.abs(sum) > RESCALE_ABOVE) {
      const scale = Math.max(absTerm, Math.abs(sum))
      term /= scale
      sum /= scale
      offset += Math.log(scale)
    }
    if (k >= settled && Math.abs(ratio) < 1) {
      // Geometric bound on the tail with the current ratio (or z, whichever is larger).
      const q = Math.max(Math.abs(ratio), z)
      if ((Math.abs(term) * q) / (1 - q) <= SERIES_EPS * Math.abs(sum)) break
    }
    if (!Number.isFinite(sum)) return { log: NaN, sign: 0 }
  }
  if (sum === 0) return { log: -Infinity, sign: 0 }
  return { log: offset + Math.log(Math.abs(sum)), sign: sum > 0 ? 1 : -1 }
}

/**
 * ln |₂F₁(a, b; c; z)| and its sign, for 0 <= z < 1 and c not in {0, −1, −2, …}.
 *
 * The direct Gauss series is used when its parameters are small; when a and b are large (the
 * conditional expectations pass r + x and b + x for customers with many purchases) the terms would
 * peak far out, so the Euler transform ₂F₁(a,b;c;z) = (1−z)^{c−a−b} ₂F₁(c−a, c−b; c; z) is used
 * instead: for the BG/NBD arguments c−a and c−b do not grow with x, so that series converges at rate z.
 * lifetimes takes the same transform when the direct value overflows.
 */
export function hyp2f1Signed(a: number, b: number, c: number, z: number): SignedLog {
  if (!(z >= 0 && z < 1)) return { log: NaN, sign: 0 }
  if (z === 0) return { log: 0, sign: 1 }
  const direct = Math.abs(a) + Math.abs(b)
  const euler = Math.abs(c - a) + Math.abs(c - b)
  if (euler < direct) {
    const s = gaussSeries(c - a, c - b, c, z)
    if (s.sign !== 0 && Number.isFinite(s.log)) return { log: (c - a - b) * Math.log1p(-z) + s.log, sign: s.sign }
  }
  return gaussSeries(a, b, c, z)
}

/** ln ₂F₁(a, b; c; z) for 0 <= z < 1; NaN when the function is not positive there. */
export function logHyp2f1(a: number, b: number, c: number, z: number): number {
  const s = hyp2f1Signed(a, b, c, z)
  return s.sign === 1 ? s.log : NaN
}
