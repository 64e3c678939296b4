import type { TransactionParams } from './transaction-model.ts'
import type { RfmObservation } from './patterns.ts'

/**
 * Customers drawn from the BG/NBD model itself (Fader, Hardie and Lee 2005): each has a purchase
 * rate λ ~ Gamma(r, α) and a dropout probability p ~ Beta(a, b), an age T in whole days 1..maxT,
 * buys at Poisson times and may drop out after each purchase. For tests and benches that need
 * data with a known generating process and real dropout. Seeded: the same arguments give the
 * same customers.
 */
export function simulateBgNbd(n: number, p: TransactionParams, maxT: number, seed: number): RfmObservation[] {
  let s = seed
  const rnd = () => {
    s = (s + 0x6d2b79f5) | 0
    let t = Math.imul(s ^ (s >>> 15), 1 | s)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const normal = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd())
  const gamma = (k: number): number => {
    if (k < 1) return gamma(k + 1) * rnd() ** (1 / k)
    const d = k - 1 / 3
    const c = 1 / Math.sqrt(9 * d)
    for (;;) {
      let x: number
      let v: number
      do {
        x = normal()
        v = 1 + c * x
      } while (v <= 0)
      v = v * v * v
      if (Math.log(rnd()) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v
    }
  }
  const out: RfmObservation[] = []
  for (let i = 0; i < n; i++) {
    const T = 1 + Math.floor(rnd() * maxT)
    const lambda = gamma(p.r) / p.alpha
    const g = gamma(p.a)
    const dropout = g / (g + gamma(p.b))
    let t = 0
    let x = 0
    let tx = 0
    for (;;) {
      t += -Math.log(1 - rnd()) / lambda
      if (t > T) break
      x++
      tx = t
      if (rnd() < dropout) break
    }
    out.push({ x, tx: x === 0 ? 0 : Math.min(T, Math.round(tx)), T })
  }
  return out
}

