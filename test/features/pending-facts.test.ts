import { describe, expect, it } from 'vitest'
import { newer, type OrderFact } from '../../pipelines/features/order-facts.ts'
import { idTexts, PendingFacts, type Chain } from '../../pipelines/features/pending-facts.ts'
import { joinTexts } from '../../pipelines/features/inputs-reply.ts'

const fact = (version: number, cents: number, extra: Partial<OrderFact> = {}): OrderFact => ({ version, eventId: `e${version}-${cents}`, placedAt: 1_700_000_000_000 + version, cents, cancelled: false, ...extra })
const rows = (p: PendingFacts, chain: Chain) => p.facts(chain).map((f) => ({ ...f }))
/** A fact whose ids are texts of their own (the engine's path for an event it decoded itself). */
const put = (p: PendingFacts, chain: Chain, key: number, orderId: string, f: OrderFact) => p.put(chain, key, idTexts(orderId, f.eventId), 0, f)

describe('PendingFacts', () => {
  it('keeps a chain’s facts in the order they came, a later fact of an order in its first place', () => {
    const p = new PendingFacts()
    let a: Chain = 0
    a = put(p, a, 1, 'o1', fact(1, 100))
    a = put(p, a, 2, 'o2', fact(1, 200))
    a = put(p, a, 3, 'o3', fact(1, 300))
    a = put(p, a, 1, 'o1', fact(2, 150, { cancelled: true }))
    expect(rows(p, a)).toEqual([
      { orderId: 'o1', eventId: 'e2-150', version: 2, placedAt: 1_700_000_000_002, cents: 150, cancelled: true },
      { orderId: 'o2', eventId: 'e1-200', version: 1, placedAt: 1_700_000_000_001, cents: 200, cancelled: false },
      { orderId: 'o3', eventId: 'e1-300', version: 1, placedAt: 1_700_000_000_001, cents: 300, cancelled: false },
    ])
    expect(p.count).toBe(3)
  })

  it('tells two orders apart by their id when their keys are the same', () => {
    const p = new PendingFacts()
    let a: Chain = 0
    a = put(p, a, 7, 'x', fact(1, 1))
    a = put(p, a, 7, 'y', fact(1, 2))
    expect(p.facts(a).map((f) => f.orderId)).toEqual(['x', 'y'])
  })

  it('keeps chains apart and reuses released entries without their old facts', () => {
    const p = new PendingFacts()
    const chains: Chain[] = []
    const size = (c: number) => (c % 4) + 1
    for (let c = 0; c < 50; c++) {
      let chain: Chain = 0
      for (let o = 0; o < size(c); o++) chain = put(p, chain, c * 10 + o, `c${c}-o${o}`, fact(c, o))
      chains.push(chain)
    }
    const odd = Array.from({ length: 25 }, (_, k) => size(2 * k + 1)).reduce((s, n) => s + n, 0)
    expect(p.count).toBe(123)
    for (let c = 0; c < 50; c += 2) p.release(chains[c]!)
    expect(p.count).toBe(odd)
    // New chains take the freed entries; the odd customers' facts are untouched.
    let fresh: Chain = 0
    for (let o = 0; o < 70; o++) fresh = put(p, fresh, 1_000 + o, `n${o}`, fact(9, o))
    expect(p.facts(fresh).map((f) => f.orderId)).toEqual(Array.from({ length: 70 }, (_, o) => `n${o}`))
    for (let c = 1; c < 50; c += 2) expect(p.facts(chains[c]!).map((f) => f.orderId)).toEqual(Array.from({ length: size(c) }, (_, o) => `c${c}-o${o}`))
    expect(p.count).toBe(odd + 70)
  })

  it('merges a chain back by the fact rule: a newer fact wins wherever it is, the others are appended', () => {
    const p = new PendingFacts()
    // Taken by a write: o1 v2, o2 v5, o3 v1.
    let taken: Chain = 0
    taken = put(p, taken, 1, 'o1', fact(2, 10))
    taken = put(p, taken, 2, 'o2', fact(5, 20))
    taken = put(p, taken, 3, 'o3', fact(1, 30))
    // Pending meanwhile: o2 v3 (older than the taken one), o1 v4 (newer), o4.
    let now: Chain = 0
    now = put(p, now, 2, 'o2', fact(3, 21))
    now = put(p, now, 1, 'o1', fact(4, 11))
    now = put(p, now, 4, 'o4', fact(1, 40))
    now = p.merge(now, taken)
    expect(p.facts(now).map((f) => [f.orderId, f.version, f.cents, f.eventId])).toEqual([
      ['o2', 5, 20, 'e5-20'],
      ['o1', 4, 11, 'e4-11'],
      ['o4', 1, 40, 'e1-40'],
      ['o3', 1, 30, 'e1-30'],
    ])
    expect(p.count).toBe(4) // the two facts that lost are free
    expect(p.merge(0, 0)).toBe(0)
    const only = p.merge(0, put(p, 0, 5, 'o5', fact(1, 50)))
    expect(p.facts(only).map((f) => f.orderId)).toEqual(['o5'])
  })

  it('merges as order-facts.ts’ newer decides, ties included, whichever chain a fact is in', () => {
    // Every pair of facts of one order, in both roles: the merged fact is the newer of the two.
    const variants: OrderFact[] = []
    for (const version of [1, 2]) for (const cancelled of [false, true]) for (const cents of [5, 9]) for (const placedAt of [10, 20]) variants.push({ version, eventId: `e${variants.length}`, placedAt, cents, cancelled })
    for (const a of variants)
      for (const b of variants) {
        const p = new PendingFacts()
        const merged = p.merge(put(p, 0, 1, 'o', a), put(p, 0, 1, 'o', b))
        const want = newer(a, b) ? b : a
        expect(p.facts(merged)).toEqual([{ orderId: 'o', ...want }])
        expect(p.count).toBe(1)
      }
  })

  it('reads a fact’s ids from its batch’s texts, and keeps those texts exactly while a fact reads them', () => {
    const p = new PendingFacts()
    // Two batches as the decode thread answers them: order id 2i, event id 2i + 1 (one non-ASCII, one empty).
    const b1 = joinTexts(['o1', 'e1', 'ö2', 'e2', '', 'e3'])
    const b2 = joinTexts(['o1', 'e9'])
    const f = (version: number) => ({ version, placedAt: 5, cents: 7, cancelled: false })
    let a: Chain = p.put(0, 1, b1, 0, f(1))
    let b: Chain = p.put(0, 2, b1, 2, f(1))
    b = p.put(b, 3, b1, 4, f(1))
    expect([p.facts(a).map((x) => [x.orderId, x.eventId]), p.facts(b).map((x) => [x.orderId, x.eventId])]).toEqual([[['o1', 'e1']], [['ö2', 'e2'], ['', 'e3']]])
    a = p.put(a, 1, b2, 0, f(2)) // o1's newer fact, from the second batch
    expect(p.facts(a).map((x) => [x.orderId, x.eventId, x.version])).toEqual([['o1', 'e9', 2]])
    expect(p.textsHeld).toBe(2)
    p.release(b) // b1 is read by no fact now, and a later batch's fact came since: let go
    expect(p.textsHeld).toBe(1)
    p.release(a) // b2 is the latest batch: kept for the next put, until another's comes
    expect(p.textsHeld).toBe(1)
    const c = p.put(0, 4, idTexts('o4', 'e4'), 0, f(1))
    expect([p.textsHeld, p.count, p.facts(c).map((x) => x.orderId)]).toEqual([1, 1, ['o4']])
  })

  it('lets the latest batch’s texts go when another batch’s fact comes and none of its facts is left, and keeps the others', () => {
    const p = new PendingFacts()
    const f = { version: 1, placedAt: 5, cents: 7, cancelled: false }
    const kept = p.put(0, 1, joinTexts(['k1', 'ek1']), 0, f)
    const b = joinTexts(['b1', 'eb1', 'b2', 'eb2'])
    let chain = p.put(0, 2, b, 0, f)
    chain = p.put(chain, 3, b, 2, f)
    p.release(chain) // b is the latest: kept, though no fact reads it
    expect(p.textsHeld).toBe(2)
    const next = p.put(0, 4, joinTexts(['n1', 'en1']), 0, f) // b goes, and its slot is reused
    expect(p.textsHeld).toBe(2)
    expect([...p.facts(kept), ...p.facts(next)].map((x) => [x.orderId, x.eventId])).toEqual([['k1', 'ek1'], ['n1', 'en1']])
  })
})
