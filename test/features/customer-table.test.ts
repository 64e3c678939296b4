/**
 * The feature consumer's columnar state (customer-table.ts, book-arena.ts): every customer's
 * fields, orders and e-mail read back as they were written, through growth, moves, compaction,
 * partitions dropped and slots reused; the books fold facts exactly as order-book.ts' arrays do.
 */
import { describe, expect, it } from 'vitest'
import { BookArena } from '../../pipelines/features/book-arena.ts'
import { CustomerTable } from '../../pipelines/features/customer-table.ts'
import { idTexts } from '../../pipelines/features/pending-facts.ts'
import { bookMerge, emptyBook, BookBuilder, gatherBook, orderKey, type OrderBook } from '../../pipelines/features/order-book.ts'
import { CountedOrders, type OrderFact } from '../../pipelines/features/order-facts.ts'
import { rng } from './histories.ts'

/** The doubles of a slot's book in the arena. */
const read = (a: BookArena, slot: number) => [...a.array(slot).subarray(a.start(slot), a.end(slot))]

describe('BookArena', () => {
  it('keeps every book exactly through appends, moves, clears, compaction and books larger than a chunk, within about twice what it holds', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const rand = rng(seed)
      const chunk = 64 // small chunks: the moves, compactions and big books happen in a few hundred steps
      const arena = new BookArena(chunk)
      const slots = 40
      arena.reserve(slots)
      const want: number[][] = Array.from({ length: slots }, () => [])
      let next = 1
      for (let step = 0; step < 3000; step++) {
        const s = Math.floor(rand() * slots)
        const r = rand()
        if (r < 0.05) {
          arena.clear(s)
          want[s] = []
        } else if (r < 0.07) {
          // A restore's exact append, now and then larger than a chunk.
          const n = 4 * (1 + Math.floor(rand() * 30))
          const at = arena.grow(s, n, true)
          for (let i = 0; i < n; i++) arena.array(s)[at + i] = next + i
          for (let i = 0; i < n; i++) want[s]!.push(next + i)
          next += n
        } else {
          const at = arena.grow(s, 4)
          for (let i = 0; i < 4; i++) arena.array(s)[at + i] = next + i
          want[s]!.push(next, next + 1, next + 2, next + 3)
          next += 4
        }
        if (step % 50 === 0 || step === 2999) {
          for (let k = 0; k < slots; k++) expect(read(arena, k), `seed ${seed} step ${step} slot ${k}`).toEqual(want[k])
          const f = arena.footprint()
          const live = want.reduce((n, b) => n + b.length, 0)
          expect(f.live).toBe(live)
          // Each book at most twice its size plus a header, mostly-waste chunks compacted, one chunk being filled.
          expect(f.doubles, `seed ${seed} step ${step}`).toBeLessThanOrEqual(2 * (2 * live + 2 * slots) + 2 * chunk + Math.max(0, ...want.map((b) => 2 * b.length + 2)))
        }
      }
    }
  })

  it('drops a chunk once every book in it has left, and reuses its place', () => {
    const arena = new BookArena(16)
    arena.reserve(4)
    for (const s of [0, 1]) arena.grow(s, 4, true) // 2 × (4 + header) = 12 of chunk 0
    arena.grow(2, 8, true) // 10 more: chunk 1
    expect(arena.footprint().chunks).toBe(2)
    arena.clear(0)
    arena.clear(1)
    expect(arena.footprint()).toEqual({ doubles: 16, live: 8, chunks: 1 })
    arena.grow(3, 40, true) // larger than a chunk: a chunk of its own, in the dropped one's place
    expect(arena.footprint()).toEqual({ doubles: 16 + 42, live: 48, chunks: 2 })
    arena.clear(3)
    expect(arena.footprint().chunks).toBe(1)
  })

  it('refuses a chunk too small for a book of two orders', () => {
    expect(() => new BookArena(9)).toThrow(RangeError)
  })
})

/** Random facts of a few orders, with same-version ties and repeats (as order-book.test.ts'). */
function facts(rand: () => number, n: number): { orderId: string; fact: OrderFact }[] {
  const out: { orderId: string; fact: OrderFact }[] = []
  for (let i = 0; i < n; i++) {
    out.push({
      orderId: `o${Math.floor(rand() * 8)}`,
      fact: {
        version: 4 * (1_700_000_000_000 + Math.floor(rand() * 3)) + Math.floor(rand() * 2),
        eventId: `e${i}`,
        placedAt: 1_690_000_000_000 + Math.floor(rand() * 4) * 86_400_000,
        cents: Math.floor(rand() * 5) * 1000 - (rand() < 0.1 ? 7000 : 0),
        cancelled: rand() < 0.2,
      },
    })
  }
  return out
}

const gathered = (fill: (into: CountedOrders) => void) => {
  const into = new CountedOrders()
  fill(into)
  return { agg: into.aggregates(), history: into.history() }
}

describe('CustomerTable', () => {
  it('folds each customer’s facts exactly as its own order book does, across many customers sharing the arena', () => {
    const rand = rng(7)
    const table = new CustomerTable()
    const books = new Map<number, OrderBook>()
    const slots = new Map<number, number>()
    for (let i = 0; i < 20_000; i++) {
      const id = Math.floor(rand() * 3_000)
      const c = table.get(1, id) ?? table.add(1, id, id % 4)
      slots.set(id, c)
      const book = books.get(id) ?? emptyBook()
      books.set(id, book)
      for (const { orderId, fact } of facts(rand, 1)) {
        const key = orderKey(`${id}:${orderId}`)
        expect(table.mergeOrder(c, key, fact)).toBe(bookMerge(book, key, fact))
      }
    }
    for (const [id, book] of books) {
      const c = slots.get(id)!
      expect(table.orderCount(c)).toBe(book.length / 4)
      expect(gathered((g) => table.gatherOrders(c, g))).toEqual(gathered((g) => gatherBook(book, g)))
    }
  })

  it('keeps identity, e-mails (any length, any script), emitted texts, versions and flags; a dropped partition frees its slots for others', () => {
    const table = new CustomerTable()
    const a = table.add(1, 7, 0)
    const b = table.add(2, 7, 1)
    const big = table.add(1, 2 ** 40, 1)
    expect(table.identity(a)).toEqual({ tenantId: 1, customerId: 7, partition: 0, email: '', emailVersion: 0 })
    expect(table.get(2, 7)).toBe(b)
    expect(table.get(1, 2 ** 40)).toBe(big)
    expect(table.get(3, 7)).toBeUndefined()
    table.setEmail(a, 'ana@example.com', 10)
    table.setEmail(b, 'josé.müller@ejemplo.ar', 11)
    table.setEmail(a, 'a@b.c', 12) // shorter: in place
    table.setEmail(big, 'x'.repeat(300) + '@example.com', 13)
    expect([table.email(a), table.email(b), table.email(big)]).toEqual(['a@b.c', 'josé.müller@ejemplo.ar', 'x'.repeat(300) + '@example.com'])
    expect(table.emailVersion(b)).toBe(11)
    table.setEmitted(a, 'Champions', '555')
    table.setEmitted(b, 'a segment this version does not know', null)
    expect([table.segment(a), table.score(a), table.segment(b), table.score(b), table.segment(big)]).toEqual(['Champions', '555', 'a segment this version does not know', null, null])
    table.setLast(a, 2 ** 52 + 1)
    table.setRowVersion(a, 1_700_000_000_000_123)
    table.setDirty(a, true)
    table.setDeleted(a, true)
    table.setDirty(a, false)
    expect([table.last(a), table.last(b), table.rowVersion(a), table.dirty(a), table.deleted(a), table.deleted(b)]).toEqual([2 ** 52 + 1, NaN, 1_700_000_000_000_123, false, true, false])
    table.addPendingFact(b, 11, idTexts('o1', 'e'), 0, { version: 1, placedAt: 0, cents: 1, cancelled: false })
    expect(table.pendingFacts(b)).toHaveLength(1)
    expect(table.tenantIds().sort()).toEqual([1, 2])
    expect(table.all()).toEqual([a, big, b])

    const genB = table.gen(b)
    table.dropPartition(1)
    expect([table.live(a), table.live(b), table.live(big)]).toEqual([true, false, false])
    expect(table.gen(b)).not.toBe(genB)
    expect(table.get(2, 7)).toBeUndefined()
    expect(table.tenantIds()).toEqual([1]) // tenant 2 had only customers of partition 1
    expect(table.count).toBe(1)
    // A new customer takes a freed slot, with nothing of the one before.
    const c = table.add(3, 9, 2)
    expect([b, big]).toContain(c)
    expect(table.identity(c)).toEqual({ tenantId: 3, customerId: 9, partition: 2, email: '', emailVersion: 0 })
    expect([table.segment(c), table.last(c), table.dirty(c), table.pendingFacts(c), table.orderCount(c)]).toEqual([null, NaN, false, [], 0])
    expect(table.footprint().pendingFacts).toBe(0) // b's fact went with its slot
    expect(table.email(a)).toBe('a@b.c')
  })

  it('reads every e-mail back after rounds of longer rewrites, whose old bytes the buffer sheds', () => {
    const table = new CustomerTable()
    const n = 200_000
    const email = (i: number, round: number) => (round < 0 || i % 5 === 0 ? `customer-${i}@example.com` : `customer-${i}-${'z'.repeat(round + 1)}@example.com`)
    for (let i = 0; i < n; i++) table.setEmail(table.add(1, i, i % 8), email(i, -1), i)
    // Four in five e-mails rewritten longer, round after round: most of the buffer becomes old bytes.
    for (let round = 0; round < 4; round++) for (let i = 0; i < n; i++) table.setEmail(table.get(1, i)!, email(i, round), n + i)
    for (let i = 0; i < n; i++) if (table.email(table.get(1, i)!) !== email(i, 3)) expect(table.email(table.get(1, i)!), `customer ${i}`).toBe(email(i, 3))
    const bytes = [...Array(n).keys()].reduce((s, i) => s + Buffer.byteLength(email(i, 3)), 0)
    expect(table.footprint().emailBytes).toBeLessThanOrEqual(4 * bytes)
  })

  it('gives a reused slot an empty e-mail after the buffer was rewritten smaller than where its old bytes were', () => {
    const table = new CustomerTable()
    for (let i = 0; i < 5_000; i++) table.setEmail(table.add(1, i, i < 4_990 ? 1 : 0), `customer-number-${i}@example.com`, i)
    table.dropPartition(1) // all but the last ten: their bytes are waste, the others' offsets far along
    const kept = table.all()
    // Longer e-mails for the ten left, until the buffer is rewritten without the waste: it is then small.
    for (let round = 1; round < 40; round++) for (const c of kept) table.setEmail(c, `${'x'.repeat(round * 50)}@example.com`, round)
    expect(table.footprint().emailBytes).toBeLessThan(1 << 17)
    const reused = table.add(2, 1, 0) // a freed slot whose bytes lay past the new buffer's end
    table.setEmail(reused, '', 1)
    table.setEmail(reused, 'late@example.com', 2)
    expect([table.email(reused), ...kept.map((c) => table.email(c).length)]).toEqual(['late@example.com', ...kept.map(() => 39 * 50 + 12)])
  })

  it('keeps each customer’s pending facts apart, through takes, give-backs, releases and slot reuse', () => {
    const table = new CustomerTable()
    const fact = (cents: number, version = 1) => ({ version, placedAt: 0, cents, cancelled: false })
    const ids = (c: number) => table.pendingFacts(c).map((f) => `${f.orderId}:${f.cents}`)
    const cs = [0, 1, 2, 3].map((i) => table.add(1, i, i % 2))
    cs.forEach((c, i) => table.addPendingFact(c, i, idTexts(`o${i}`, `e${i}`), 0, fact(i)))
    const taken = table.takePending(cs[1]!)
    expect(table.takePending(cs[1]!)).toBe(0) // nothing left to take
    table.addPendingFact(cs[1]!, 9, idTexts('o9', 'e9'), 0, fact(9))
    table.addPendingFact(cs[2]!, 2, idTexts('o2', 'e22'), 0, fact(22)) // replaced in place
    expect(cs.map(ids)).toEqual([['o0:0'], ['o9:9'], ['o2:22'], ['o3:3']])
    table.givePendingBack(cs[1]!, taken) // o1 comes after what came meanwhile
    expect(ids(cs[1]!)).toEqual(['o9:9', 'o1:1'])
    table.dropPartition(1) // customers 1 and 3: their facts' entries are free
    expect([ids(cs[0]!), ids(cs[2]!), table.footprint().pendingFacts]).toEqual([['o0:0'], ['o2:22'], 2])
    const d = table.add(2, 5, 0)
    expect(table.pendingFacts(d)).toEqual([])
    table.releasePending(table.takePending(cs[0]!))
    expect(table.footprint().pendingFacts).toBe(1)
  })

  it('appends a restore’s facts at their size to what the customer holds', () => {
    const table = new CustomerTable()
    const c = table.add(1, 1, 0)
    const builder = new BookBuilder()
    const f = (placedAt: number, cents: number): Omit<OrderFact, 'eventId'> => ({ version: 1, placedAt, cents, cancelled: false })
    builder.add(1, f(1_000, 100))
    builder.add(2, f(2_000, 200))
    table.appendOrders(c, builder)
    expect(builder.size).toBe(0)
    builder.add(3, f(3_000, 300))
    table.appendOrders(c, builder)
    table.appendOrders(c, builder) // nothing collected: nothing added
    expect(table.orderCount(c)).toBe(3)
    expect(gathered((g) => table.gatherOrders(c, g)).history).toEqual(gathered((g) => [1_000, 2_000, 3_000].forEach((t, i) => g.add(t, 100 * (i + 1), false))).history)
  })
})
