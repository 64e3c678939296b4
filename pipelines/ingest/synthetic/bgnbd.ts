import { Rng } from './random.ts'

/** A customer's repeat purchases x, the age of the last t_x and its own age T, in days (the fits' input). */
export interface DrawnCustomer {
  x: number
  tx: number
  T: number
}

/**
 * Customers drawn from the BG/NBD model itself (Fader, Hardie and Lee 2005): each has a purchase
 * rate λ ~ Gamma(r, 1/α) and a dropout probability p ~ Beta(a, b), an age T in whole days 1..maxT,
 * buys at Poisson times and may drop out after each purchase. For tests and benches that need
 * data with a known generating process and real dropout. Seeded: the same arguments give the
 * same customers.
 */
export function simulateBgNbd(n: number, p: { r: number; alpha: number; a: number; b: number }, maxT: number, seed: number): DrawnCustomer[] {
  const rng = new Rng(seed)
  const out: DrawnCustomer[] = []
  for (let i = 0; i < n; i++) {
    const T = 1 + Math.floor(rng.next() * maxT)
    const lambda = rng.gamma(p.r) / p.alpha
    const g = rng.gamma(p.a)
    const dropout = g / (g + rng.gamma(p.b))
    let t = 0
    let x = 0
    let tx = 0
    for (;;) {
      t += -Math.log(1 - rng.next()) / lambda
      if (t > T) break
      x++
      tx = t
      if (rng.next() < dropout) break
    }
    out.push({ x, tx: x === 0 ? 0 : Math.min(T, Math.round(tx)), T })
  }
  return out
}
