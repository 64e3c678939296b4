import { unescapeTsv } from '../../common/store/tsv.ts'
import { describe, expect, it } from 'vitest'
import { centsAtLeast, centsAtMost, countMarked, emailOf, descendingBy, indexesMarked, keptMarks, lowerBound, maskOf, pageInOrder, Population, selectMask, smallerSide, topRows, upperBound, wholeNumbers, type Condition, type CustomerColumns } from '../../services/api/analytics/customer-columns.ts'
import type { CommonOptions } from '../../services/api/analytics/options.ts'

/** The in-memory orders and searches of the filtered answers, against sorting (a seeded generator, with ties and nulls). */
function rng(seed: number) {
  let s = seed >>> 0
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32)
}

describe('customer columns: orders and searches', () => {
  it('a page of the top rows equals the same page of a full sort, ties broken by the second key', () => {
    const r = rng(42)
    const key = Float64Array.from({ length: 5000 }, () => Math.floor(r() * 300))
    const rows = Uint32Array.from({ length: 5000 }, (_, i) => i).filter((i) => i % 3 !== 0)
    const before = (a: number, b: number) => (key[a] !== key[b] ? key[a]! > key[b]! : a < b)
    const sorted = [...rows].sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0))
    for (const [limit, offset] of [[10, 0], [50, 7], [1000, 0], [5, 3300], [10, 3330]] as const) {
      expect(topRows(rows, before, limit, offset)).toEqual(sorted.slice(offset, offset + limit))
    }
  })

  it.each([1, 2, 3])('seed %i: pages walked down the shared descending order equal a sort of the selection (nulls as given, ties by customer id)', (seed) => {
    const r = rng(seed)
    const n = 3000
    const key = Float64Array.from({ length: n }, () => (r() < 0.1 ? Number.NaN : Math.floor(r() * 50) * 1.5))
    const customerId = Float64Array.from({ length: n }, (_, i) => ((i * 7919) % n) + 1) // not in index order
    const c = { size: n, customerId } as unknown as CustomerColumns
    const rows = Uint32Array.from({ length: n }, (_, i) => i).filter(() => r() < 0.6)
    for (const nullAs of [0, Number.NEGATIVE_INFINITY]) {
      const v = (i: number) => (Number.isNaN(key[i]!) ? nullAs : key[i]!)
      const sorted = [...rows].sort((a, b) => v(b) - v(a) || customerId[a]! - customerId[b]!)
      const order = descendingBy(c, key, nullAs)
      expect(descendingBy(c, key, nullAs)).toBe(order) // sorted once
      for (const [limit, offset] of [[10, 0], [100, 33], [7, rows.length - 3], [5, rows.length + 10]] as const) {
        expect(pageInOrder(order, maskOf(c, rows), limit, offset)).toEqual(sorted.slice(offset, offset + limit))
      }
    }
  })

  it('lowerBound / upperBound find the first position ≥ / > a value within a range of an ascending array', () => {
    const a = Float64Array.from([1, 3, 3, 3, 7, 9, 9, 12])
    expect([lowerBound(a, 0, 8, 3), upperBound(a, 0, 8, 3)]).toEqual([1, 4])
    expect([lowerBound(a, 0, 8, 0), upperBound(a, 0, 8, 12)]).toEqual([0, 8])
    expect([lowerBound(a, 4, 6, 8), upperBound(a, 4, 6, 9)]).toEqual([5, 6])
    expect([lowerBound(a, 2, 2, 5), upperBound(a, 3, 3, 5)]).toEqual([2, 3]) // empty range
    for (let x = 0; x <= 13; x += 0.5) {
      expect(lowerBound(a, 0, 8, x)).toBe([...a].filter((t) => t < x).length)
      expect(upperBound(a, 0, 8, x)).toBe([...a].filter((t) => t <= x).length)
    }
  })

  it('cents bounds: c ≥ centsAtLeast(v) exactly when c / 100 ≥ v (and the same for at most), for any decimal', () => {
    const r = rng(7)
    for (let k = 0; k < 20_000; k++) {
      const v = k % 3 === 0 ? r() * 1000 : k % 3 === 1 ? Math.round(r() * 100_000) / 100 : (r() - 0.5) * 1e6
      const [lo, hi] = [centsAtLeast(v), centsAtMost(v)]
      for (const c of [lo - 2, lo - 1, lo, lo + 1, hi - 1, hi, hi + 1, hi + 2]) {
        expect(c / 100 >= v).toBe(c >= lo)
        expect(c / 100 <= v).toBe(c <= hi)
      }
    }
    expect([centsAtLeast(0.1), centsAtMost(0.1), centsAtLeast(1e300), centsAtMost(-1e300)]).toEqual([10, 10, Infinity, -Infinity])
    // Beyond 2^53 / 100 (no Decimal(15,2) gets there): a bound at once, not a loop that never ends.
    expect([centsAtLeast(9.1e13), centsAtMost(9.1e13), centsAtLeast(-9.1e13)]).toEqual([Infinity, Infinity, -Infinity])
  })

  it.each([5, 6, 7, 1001, 1003])('%i customers: the smaller side lists the selected members, or the members left out, whichever is fewer', (n) => {
    const r = rng(n)
    const population = new Population(n, () => r() < 0.7)
    const members = [...population.marks.keys()].filter((i) => population.marks[i] === 1)
    expect(population.size).toBe(members.length)
    for (const share of [0, 0.05, 0.45, 0.55, 0.95, 1]) {
      const keep = keptMarks(Uint8Array.from({ length: n }, () => (r() < share ? 1 : 0)))
      const selected = members.filter((i) => keep[i] === 1)
      const left = members.filter((i) => keep[i] === 0)
      const side = smallerSide(keep, population)
      expect(side.kept).toBe(selected.length)
      if (selected.length * 2 > members.length) expect([side.sign, [...side.rows]]).toEqual([-1, left])
      else expect([side.sign, [...side.rows]]).toEqual([1, selected])
      expect(countMarked(keep)).toBe([...keep].filter((m) => m === 1).length)
      expect([...indexesMarked(keep, 0)]).toEqual([...keep.keys()].filter((i) => keep[i] === 0))
    }
  })

  it('wholeNumbers: a column of whole numbers as Int32 (missing as the lowest), else null', () => {
    const col = Float64Array.from([0, 5, Number.NaN, -3, 2 ** 31 - 1])
    expect([...wholeNumbers(col)!]).toEqual([0, 5, -(2 ** 31), -3, 2 ** 31 - 1])
    expect(wholeNumbers(col)).toBe(wholeNumbers(col)) // once per column
    expect(wholeNumbers(Float64Array.from([1, 2.5]))).toBeNull()
    expect(wholeNumbers(Float64Array.from([2 ** 31]))).toBeNull()
    expect(wholeNumbers(Float64Array.from([-(2 ** 31)]))).toBeNull() // would read as missing
  })

  it("a TabSeparated field's text: ClickHouse's escapes undone, plain text untouched", () => {
    expect(unescapeTsv('ana@shop.test')).toBe('ana@shop.test')
    expect(unescapeTsv('a\\\\b\\tc\\nd\\\'e@x.test')).toBe("a\\b\tc\nd'e@x.test")
  })

  it.each([1, 5, 6, 7, 1001, 1003])('%i customers: the selection passes (four marks a word, then the rest) keep exactly the customers every condition passes', (n) => {
    const r = rng(n + 11)
    const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!
    const whole = Float64Array.from({ length: n }, () => (r() < 0.1 ? Number.NaN : Math.floor(r() * 100) - 20)) // read as Int32
    const real = Float64Array.from({ length: n }, () => (r() < 0.1 ? Number.NaN : r() * 100))
    const codes = Uint32Array.from({ length: n }, () => Math.floor(r() * 5))
    const c = { size: n } as unknown as CustomerColumns
    for (let trial = 0; trial < 40; trial++) {
      const conditions: Condition[] = []
      const tests: ((i: number) => boolean)[] = []
      for (let k = 0; k < 1 + Math.floor(r() * 3); k++) {
        const col = pick([whole, real])
        const v = Math.floor(r() * 100) - 20 + pick([0, 0.5])
        const kind = pick(['present', 'atLeast', 'atMost', 'oneOf', 'nonzero'] as const)
        if (kind === 'present') (conditions.push({ present: col }), tests.push((i) => !Number.isNaN(col[i]!)))
        else if (kind === 'atLeast') (conditions.push({ atLeast: col, value: v }), tests.push((i) => col[i]! >= v))
        else if (kind === 'atMost') (conditions.push({ atMost: col, value: v }), tests.push((i) => col[i]! <= v))
        else if (kind === 'nonzero') (conditions.push({ nonzero: codes }), tests.push((i) => codes[i] !== 0))
        else {
          const allowed = [pick([0, 1, 2, 3, 4]), pick([1, 3])]
          conditions.push({ oneOf: codes, codes: allowed })
          tests.push((i) => allowed.includes(codes[i]!))
        }
      }
      const keep = selectMask(c, { tenant_id: 1 } as CommonOptions, 0, conditions)!
      expect([...keep]).toEqual(Array.from({ length: n }, (_, i) => (tests.every((t) => t(i)) ? 1 : 0)))
    }
  })

  it('emailOf reads each e-mail back from the shared code units, whatever its characters', () => {
    const emails = ['ana@shop.test', '', 'ñandú.pérez@correo.com.ar', '😀@x.test', 'x'.repeat(5000) + '@long.test']
    const emailStart = new Uint32Array(emails.length + 1)
    emails.forEach((e, i) => (emailStart[i + 1] = emailStart[i]! + e.length))
    const codes = new Uint16Array(emailStart[emails.length]!)
    let at = 0
    for (const e of emails) for (let j = 0; j < e.length; j++) codes[at++] = e.charCodeAt(j)
    const c = { emailCodes: codes, emailStart } as unknown as CustomerColumns
    expect(emails.map((_, i) => emailOf(c, i))).toEqual(emails)
  })
})
