/**
 * Seeded pseudo-random numbers for the synthetic data generator. The same seed always yields the
 * same sequence on every platform, so fixtures and benchmarks are reproducible byte for byte.
 * Math.random is never used: it cannot be seeded.
 *
 * Generator: sfc32 (Chris Doty-Humphrey's Small Fast Chaotic PRNG, 128-bit state, passes
 * PractRand), seeded by the cyrb128 string hash. Both need only 32-bit integer arithmetic.
 */

/** cyrb128: hashes a string to four 32-bit words, the sfc32 seed. */
function cyrb128(text: string): [number, number, number, number] {
  let h1 = 1779033703
  let h2 = 3144134277
  let h3 = 1013904242
  let h4 = 2773480762
  for (let i = 0; i < text.length; i++) {
    const k = text.charCodeAt(i)
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067)
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233)
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213)
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179)
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067)
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233)
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213)
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179)
  h1 ^= h2 ^ h3 ^ h4
  h2 ^= h1
  h3 ^= h1
  h4 ^= h1
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0]
}

const TWO_POW_32 = 4294967296

export class Rng {
  private a: number
  private b: number
  private c: number
  private d: number

  /** A number seed is hashed as its decimal string, so 42 and '42' give the same stream. */
  constructor(seed: string | number) {
    const [a, b, c, d] = cyrb128(String(seed))
    this.a = a
    this.b = b
    this.c = c
    this.d = d
    // Discard the first outputs: they are still close to the raw hash.
    for (let i = 0; i < 12; i++) this.nextUint32()
  }

  /** Next raw 32-bit unsigned integer (sfc32 step). */
  nextUint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0
    this.d = (this.d + 1) | 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) | 0
    this.c = (this.c << 21) | (this.c >>> 11)
    this.c = (this.c + t) | 0
    return t >>> 0
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextUint32() / TWO_POW_32
  }

  /** Uniform in [min, max). */
  uniform(min = 0, max = 1): number {
    return min + (max - min) * this.next()
  }

  /** Uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    if (!Number.isInteger(min) || !Number.isInteger(max) || max < min) {
      throw new RangeError(`int(${min}, ${max}): need integers with min <= max`)
    }
    return min + Math.floor(this.next() * (max - min + 1))
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list')
    return items[Math.floor(this.next() * items.length)] as T
  }

  /** Weighted pick by linear scan: for short, ad hoc lists. Use WeightedTable for hot paths. */
  weighted<T>(items: readonly T[], weights: readonly number[]): T {
    if (items.length === 0 || items.length !== weights.length) {
      throw new RangeError('weighted: need as many weights as items, at least one')
    }
    let total = 0
    for (const w of weights) total += w
    let x = this.next() * total
    for (let i = 0; i < items.length; i++) {
      x -= weights[i] as number
      if (x < 0) return items[i] as T
    }
    return items[items.length - 1] as T
  }

  /** Standard normal by Box–Muller (no cached spare, so the stream position stays simple). */
  normal(mean = 0, sd = 1): number {
    const u1 = 1 - this.next() // (0, 1]: log(0) would be -Infinity
    const u2 = this.next()
    return mean + sd * Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2)
  }

  /** Gamma(shape k, scale θ), mean kθ, by Marsaglia–Tsang (2000); shape < 1 via the boost u^(1/k). */
  gamma(shape: number, scale = 1): number {
    if (!(shape > 0) || !(scale > 0)) throw new RangeError(`gamma(${shape}, ${scale}): need positive parameters`)
    if (shape < 1) {
      const u = 1 - this.next()
      return this.gamma(shape + 1, scale) * Math.pow(u, 1 / shape)
    }
    const d = shape - 1 / 3
    const c = 1 / Math.sqrt(9 * d)
    for (;;) {
      let x: number
      let v: number
      do {
        x = this.normal()
        v = 1 + c * x
      } while (v <= 0)
      v = v * v * v
      const u = 1 - this.next()
      const x2 = x * x
      if (u < 1 - 0.0331 * x2 * x2) return d * v * scale
      if (Math.log(u) < 0.5 * x2 + d * (1 - v + Math.log(v))) return d * v * scale
    }
  }

  /** Beta(a, b) as X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b). */
  beta(a: number, b: number): number {
    const x = this.gamma(a)
    const y = this.gamma(b)
    return x / (x + y)
  }

  /**
   * Poisson(λ) by Knuth's multiplication method. Large λ is split into chunks of at most 30
   * (a sum of Poissons is Poisson) so e^-λ never underflows; cost is O(λ), fine for our rates.
   */
  poisson(lambda: number): number {
    if (!(lambda >= 0)) throw new RangeError(`poisson(${lambda}): need λ >= 0`)
    let total = 0
    let rest = lambda
    while (rest > 0) {
      const chunk = Math.min(rest, 30)
      rest -= chunk
      const limit = Math.exp(-chunk)
      let k = 0
      let p = this.next()
      while (p > limit) {
        k++
        p *= this.next()
      }
      total += k
    }
    return total
  }

  /** Exponential with the given rate (mean 1/rate). */
  exponential(rate: number): number {
    if (!(rate > 0)) throw new RangeError(`exponential(${rate}): need a positive rate`)
    return -Math.log(1 - this.next()) / rate
  }

  /** A UUID-shaped string (version 4 and RFC 4122 variant bits set) drawn from this stream. */
  uuid(): string {
    const w0 = this.nextUint32()
    const w1 = (this.nextUint32() & 0xffff0fff) | 0x00004000 // version 4
    const w2 = ((this.nextUint32() & 0x3fffffff) | 0x80000000) >>> 0 // variant 10xx
    const w3 = this.nextUint32()
    return `${hex16(w0 >>> 16)}${hex16(w0)}-${hex16(w1 >>> 16)}-${hex16(w1)}-${hex16(w2 >>> 16)}-${hex16(w2)}${hex16(w3 >>> 16)}${hex16(w3)}`
  }
}

const HEX_BYTE = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'))

/** The low 16 bits of `n` as four hex digits. */
function hex16(n: number): string {
  return HEX_BYTE[(n >>> 8) & 0xff]! + HEX_BYTE[n & 0xff]!
}

/** Precomputed cumulative weights for repeated weighted picks (binary search, O(log n)). */
export class WeightedTable<T> {
  private readonly cumulative: number[]
  private readonly total: number

  constructor(
    readonly items: readonly T[],
    weights: readonly number[],
  ) {
    if (items.length === 0 || items.length !== weights.length) {
      throw new RangeError('WeightedTable: need as many weights as items, at least one')
    }
    let sum = 0
    this.cumulative = weights.map((w) => {
      if (!(w >= 0)) throw new RangeError(`WeightedTable: negative or NaN weight ${w}`)
      sum += w
      return sum
    })
    if (!(sum > 0)) throw new RangeError('WeightedTable: weights sum to zero')
    this.total = sum
  }

  sample(rng: Rng): T {
    const x = rng.next() * this.total
    let lo = 0
    let hi = this.cumulative.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((this.cumulative[mid] as number) > x) hi = mid
      else lo = mid + 1
    }
    return this.items[lo] as T
  }
}
