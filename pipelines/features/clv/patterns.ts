/**
 * Compression of per-customer (x, t_x, T) summaries into weighted patterns, as Fader & Hardie do in
 * their spreadsheets and lifetimes does with `weights`: the likelihood is evaluated once per distinct
 * pattern. Each pattern also points into tables of the distinct x, t_x and T values, so a likelihood
 * evaluation computes ln Γ(r + x), ln(α + t_x) and ln(α + T) once per distinct value, not per customer.
 */

import { float64Of } from '../../../common/typed-arrays.ts'

/** One customer (or `weight` identical customers): repeat purchases, recency and age in one time unit. */
export interface RfmObservation {
  /** Number of repeat purchases (purchase periods − 1). */
  x: number
  /** Time from the first to the last purchase (0 when x = 0). */
  tx: number
  /** Time from the first purchase to the end of the observation window. */
  T: number
  /** Number of customers with this pattern (default 1). */
  weight?: number
}

export interface Patterns {
  readonly size: number
  readonly x: Float64Array
  readonly tx: Float64Array
  readonly T: Float64Array
  readonly w: Float64Array
  /** Index of each pattern's x, t_x and T in the distinct-value tables below. */
  readonly xi: Int32Array
  readonly txi: Int32Array
  readonly Ti: Int32Array
  readonly xs: Float64Array
  readonly txs: Float64Array
  readonly Ts: Float64Array
  /** Σ w, Σ w·x and max T over the patterns. */
  readonly totalWeight: number
  readonly weightedX: number
  readonly maxT: number
}

/** Rejects summaries no model can explain (a caller bug, not a data condition to model). */
export function checkObservation(o: RfmObservation, i: number): void {
  const { x, tx, T } = o
  const w = o.weight ?? 1
  // The common case without allocating: every check passes.
  if (x >= 0 && x < Infinity && T >= 0 && T < Infinity && tx >= 0 && tx <= T && (x !== 0 || tx === 0) && w >= 0 && w < Infinity) return
  const bad = (why: string) => new RangeError(`customer ${i}: ${why} (x=${x}, tx=${tx}, T=${T}, weight=${w})`)
  if (!Number.isFinite(x) || x < 0) throw bad('x must be a finite number >= 0')
  if (!Number.isFinite(T) || T < 0) throw bad('T must be a finite number >= 0')
  if (!Number.isFinite(tx) || tx < 0 || tx > T) throw bad('tx must lie in [0, T]')
  if (x === 0 && tx !== 0) throw bad('tx must be 0 when x = 0')
  if (!Number.isFinite(w) || w < 0) throw bad('weight must be a finite number >= 0')
}

function distinctIndex(values: Float64Array): { table: Float64Array; index: Int32Array } {
  const ids = new Map<number, number>()
  const index = new Int32Array(values.length)
  const table: number[] = []
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!
    let id = ids.get(v)
    if (id === undefined) {
      id = table.length
      ids.set(v, id)
      table.push(v)
    }
    index[i] = id
  }
  return { table: Float64Array.from(table), index }
}

/** Build patterns from raw (x, t_x, T[, weight]) rows; zero-weight rows are dropped. Patterns come sorted by (x, T, t_x). */
export function compressPatterns(data: readonly RfmObservation[]): Patterns {
  let integral = true
  let unitWeights = true
  let maxX = 0
  let maxT = 0
  for (let i = 0; i < data.length; i++) {
    const o = data[i]!
    checkObservation(o, i)
    if (integral && !(Number.isInteger(o.x) && Number.isInteger(o.T) && Number.isInteger(o.tx))) integral = false
    if (unitWeights && o.weight !== undefined && o.weight !== 1) unitWeights = false
    if (o.x > maxX) maxX = o.x
    if (o.T > maxT) maxT = o.T
  }
  const px: number[] = []
  const ptx: number[] = []
  const pT: number[] = []
  const pw: number[] = []
  const add = (o: RfmObservation, w: number) => {
    px.push(o.x)
    ptx.push(o.tx)
    pT.push(o.T)
    pw.push(w)
  }
  const span = maxT + 1
  if (integral && unitWeights && (maxX + 1) * span * span <= Number.MAX_SAFE_INTEGER) return sortedPatterns(data, span)
  if (integral && (maxX + 1) * span * span <= Number.MAX_SAFE_INTEGER) {
    // Whole numbers (days, weeks): one exact numeric key per customer and one map, several times
    // faster at a million customers than a map per (x, T).
    const ids = new Map<number, number>()
    for (const o of data) {
      const w = o.weight ?? 1
      if (w === 0) continue
      const key = (o.x * span + o.T) * span + o.tx
      const id = ids.get(key)
      if (id === undefined) {
        ids.set(key, px.length)
        add(o, w)
      } else pw[id]! += w
    }
  } else {
    // Nested maps keyed by numbers (x → T → t_x) avoid building a string key per customer.
    const byX = new Map<number, Map<number, Map<number, number>>>()
    for (const o of data) {
      const w = o.weight ?? 1
      if (w === 0) continue
      let byT = byX.get(o.x)
      if (!byT) byX.set(o.x, (byT = new Map()))
      let byTx = byT.get(o.T)
      if (!byTx) byT.set(o.T, (byTx = new Map()))
      const id = byTx.get(o.tx)
      if (id === undefined) {
        byTx.set(o.tx, px.length)
        add(o, w)
      } else pw[id]! += w
    }
  }
  return inPatternOrder(px, ptx, pT, pw)
}

/**
 * Whole-number customers of weight 1 (a tenant's days): each customer's exact key (x, T, t_x) as
 * one number, the keys sorted, and each run of equal keys one pattern weighing its length. The
 * same patterns in the same order as the map below gives, several times faster at a million
 * customers (no map of a million keys, no sort of the patterns by three fields).
 */
function sortedPatterns(data: readonly RfmObservation[], span: number): Patterns {
  const keys = new Float64Array(data.length)
  for (let i = 0; i < data.length; i++) {
    const o = data[i]!
    keys[i] = (o.x * span + o.T) * span + o.tx
  }
  keys.sort()
  let n = 0
  for (let i = 0; i < keys.length; i++) if (i === 0 || keys[i] !== keys[i - 1]) n++
  const x = new Float64Array(n)
  const tx = new Float64Array(n)
  const T = new Float64Array(n)
  const w = new Float64Array(n)
  let p = -1
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!
    if (i === 0 || k !== keys[i - 1]) {
      p++
      const t = k % span
      const rest = (k - t) / span
      const Tv = rest % span
      x[p] = (rest - Tv) / span
      T[p] = Tv
      tx[p] = t
    }
    w[p]!++
  }
  return fromArrays(x, tx, T, w)
}

/**
 * The patterns sorted by (x, T, t_x). In the order of their first customer (customer ids), the
 * likelihood's loop met x = 0 and x > 0 patterns at random, and a BG/NBD fit on a million
 * customers took 3.3 s instead of 1.5 s (3.7 against 2.0 ms an evaluation): sorted, its branches
 * are predictable and the distinct-value tables are read in order.
 */
function inPatternOrder(px: number[], ptx: number[], pT: number[], pw: number[]): Patterns {
  const order = Uint32Array.from(px.keys()).sort((a, b) => px[a]! - px[b]! || pT[a]! - pT[b]! || ptx[a]! - ptx[b]!)
  const pick = (values: number[]) => {
    const out = new Float64Array(order.length)
    for (let i = 0; i < order.length; i++) out[i] = values[order[i]!]!
    return out
  }
  return fromArrays(pick(px), pick(ptx), pick(pT), pick(pw))
}

function fromArrays(x: Float64Array, tx: Float64Array, T: Float64Array, w: Float64Array): Patterns {
  const X = distinctIndex(x)
  const TX = distinctIndex(tx)
  const TT = distinctIndex(T)
  let totalWeight = 0
  let weightedX = 0
  let maxT = 0
  for (let i = 0; i < x.length; i++) {
    totalWeight += w[i]!
    weightedX += w[i]! * x[i]!
    if (T[i]! > maxT) maxT = T[i]!
  }
  return {
    size: x.length,
    x,
    tx,
    T,
    w,
    xi: X.index,
    txi: TX.index,
    Ti: TT.index,
    xs: X.table,
    txs: TX.table,
    Ts: TT.table,
    totalWeight,
    weightedX,
    maxT,
  }
}

/** The same patterns with time divided by `scale` (the fitters condition α by fitting in units of max T). */
export function scalePatterns(p: Patterns, scale: number): Patterns {
  const div = (a: Float64Array) => a.map((v) => v / scale)
  return { ...p, tx: div(p.tx), T: div(p.T), txs: div(p.txs), Ts: div(p.Ts), maxT: p.maxT / scale }
}

/**
 * A deterministic pseudo-random subset of about `target` patterns (weights kept), for a cheap warm
 * start on large inputs. Sampling patterns uniformly keeps the sampled log-likelihood an unbiased
 * (scaled) estimate of the full one, so its optimum is close to the full optimum.
 */
export function samplePatterns(p: Patterns, target: number): Patterns {
  if (p.size <= target) return p
  const keep: number[] = []
  const threshold = (target / p.size) * 0x1_0000_0000
  for (let i = 0; i < p.size; i++) {
    // Knuth's multiplicative hash of the index: fixed, well spread, no RNG state.
    const h = Math.imul(i + 1, 2654435761) >>> 0
    if (h < threshold) keep.push(i)
  }
  const pick = (a: Float64Array) => float64Of(keep.length, (k) => a[keep[k]!]!)
  return fromArrays(pick(p.x), pick(p.tx), pick(p.T), pick(p.w))
}
