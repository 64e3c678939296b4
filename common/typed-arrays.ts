/**
 * A Float64Array of `get(i)` for i < n. What `Float64Array.from(items, fn)` gives, but
 * `Float64Array.from` with a mapping function walks its source through the iterator protocol and
 * calls the function the slow way: about 0.2 s per million elements, against 10–35 ms here.
 */
export function float64Of(n: number, get: (i: number) => number): Float64Array {
  const out = new Float64Array(n)
  for (let i = 0; i < n; i++) out[i] = get(i)
  return out
}

type GrowableArray = Float64Array | Float32Array | Int32Array | Uint32Array | Uint16Array | Uint8Array

/** A copy of `a` at length `n` (at least a.length), of the same type, its new elements `fill`. */
export function grown<A extends GrowableArray>(a: A, n: number, fill = 0): A {
  const b = new (a.constructor as new (length: number) => A)(n)
  b.set(a as never)
  if (fill !== 0) b.fill(fill as never, a.length)
  return b
}
