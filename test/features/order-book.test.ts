/**
 * The feature consumer's compact state (order-book.ts, common/hash53.ts, featuresDigest): the
 * packed order book folds facts exactly as a Map of fact objects does, in any order and with
 * duplicates and same-version ties; the state store restores the fact the book keeps; a
 * customer's digest changes with any one of its values.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Hash53, hash53 } from '../../common/hash53.ts'
import { insertJsonRows, loadMigrations, type Store } from '../../common/store/clickhouse.ts'
import { eachPartitionFact, type StoredFact } from '../../pipelines/features/feature-store.ts'
import { featuresDigest, computeFeatures } from '../../pipelines/features/features.ts'
import { bookAppend, BookBuilder, bookFacts, bookMerge, bookSize, emptyBook, orderKey, sameBook } from '../../pipelines/features/order-book.ts'
import { aggregate, EMPTY_AGGREGATES, mergeFact, newer, orderHistory, type OrderFact } from '../../pipelines/features/order-facts.ts'
import { factRow } from '../../pipelines/features/rows.ts'
import { rng, shuffle } from './histories.ts'
import { migratedStore } from '../helpers.ts'

describe('hash53', () => {
  it('is cyrb53 as published, and tells strings apart', () => {
    // Published reference values of cyrb53 with seed 0.
    expect(hash53('a')).toBe(7929297801672961)
    expect(hash53('b')).toBe(8684336938537663)
    expect(hash53('revenge')).toBe(4051478007546757)
    expect(hash53('revenue')).toBe(8309097637345594)
    const seen = new Set<number>()
    for (let i = 0; i < 100_000; i++) seen.add(hash53(`order-${i}`))
    expect(seen.size).toBe(100_000)
    for (const h of seen) expect(Number.isSafeInteger(h) && h >= 0).toBe(true)
  })

  it('mixes numbers by their bits (-0 as 0) and strings with their length', () => {
    const d = (f: (h: Hash53) => Hash53) => f(new Hash53()).digest()
    expect(d((h) => h.number(0))).toBe(d((h) => h.number(-0)))
    expect(d((h) => h.number(1))).not.toBe(d((h) => h.number(1 + Number.EPSILON)))
    expect(d((h) => h.string('ab').string('c'))).not.toBe(d((h) => h.string('a').string('bc')))
  })
})

/** Random facts of a few orders, many of them at the same version (ties) and some repeated. */
function facts(seed: number, n: number): { orderId: string; fact: OrderFact }[] {
  const rand = rng(seed)
  const out: { orderId: string; fact: OrderFact }[] = []
  for (let i = 0; i < n; i++) {
    const fact: OrderFact = {
      version: 4 * (1_700_000_000_000 + Math.floor(rand() * 3)) + Math.floor(rand() * 2),
      eventId: `e${i}`,
      placedAt: 1_690_000_000_000 + Math.floor(rand() * 4) * 86_400_000,
      cents: Math.floor(rand() * 5) * 1000 - (rand() < 0.1 ? 7000 : 0),
      cancelled: rand() < 0.2,
    }
    out.push({ orderId: `o${Math.floor(rand() * 6)}`, fact })
    if (rand() < 0.3) out.push(out[Math.floor(rand() * out.length)]!)
  }
  return out
}

describe('order book', () => {
  it('folds like a Map of facts, whatever the order of arrival: same aggregates, same history, same book', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const all = facts(seed, 3 + (seed % 40))
      const map = new Map<string, OrderFact>()
      for (const { orderId, fact } of all) mergeFact(map, orderId, fact)
      const first = emptyBook()
      for (const { orderId, fact } of all) bookMerge(first, orderKey(orderId), fact)
      expect(bookSize(first)).toBe(map.size)
      expect(aggregate(bookFacts(first))).toEqual(aggregate(map.values()))
      expect(orderHistory(bookFacts(first))).toEqual(orderHistory(map.values()))
      for (const order of [shuffle(all, rng(seed + 1000)), [...all].reverse()]) {
        const book = emptyBook()
        for (const { orderId, fact } of order) bookMerge(book, orderKey(orderId), fact)
        expect(sameBook(first, book), `seed ${seed}`).toBe(true)
      }
    }
  })

  it('reports a change only when the fact supersedes the one held', () => {
    const book = emptyBook()
    const base: OrderFact = { version: 40, eventId: 'b', placedAt: 1_000, cents: 500, cancelled: false }
    expect(bookMerge(book, 1, base)).toBe(true)
    expect(bookMerge(book, 1, base)).toBe(false) // the same fact again
    expect(bookMerge(book, 1, { ...base, eventId: 'a' })).toBe(false) // same state, another event: nothing to write
    expect(bookMerge(book, 1, { ...base, version: 39, cents: 9_999 })).toBe(false) // older
    expect(bookMerge(book, 1, { ...base, cents: 400 })).toBe(false) // a tie, and smaller
    expect(bookMerge(book, 1, { ...base, cents: 600 })).toBe(true) // a tie, and larger
    expect(bookMerge(book, 1, { ...base, cents: 0, cancelled: true })).toBe(true) // a tie: cancelled wins
    expect([...bookFacts(book)]).toEqual([{ placedAt: 1_000, cents: 0, cancelled: true }])
    expect(bookMerge(book, 2, { ...base, cents: -2_500 })).toBe(true) // a credit note, another order
    expect([...bookFacts(book)]).toEqual([{ placedAt: 1_000, cents: 0, cancelled: true }, { placedAt: 1_000, cents: -2_500, cancelled: false }])
    expect(aggregate(bookFacts(book))).toEqual(EMPTY_AGGREGATES)
  })

  it('keeps placement times, totals and flags exactly; BookBuilder makes the same book; sameBook compares states, not positions', () => {
    const book = emptyBook()
    const at = Date.UTC(2099, 11, 31, 23, 59, 59, 999)
    bookAppend(book, 7, { version: Number.MAX_SAFE_INTEGER - 3, placedAt: at, cents: 2 ** 40 + 1, cancelled: true })
    bookAppend(book, 8, { version: 1, placedAt: 0, cents: -1, cancelled: false })
    expect([...bookFacts(book)]).toEqual([{ placedAt: at, cents: 2 ** 40 + 1, cancelled: true }, { placedAt: 0, cents: -1, cancelled: false }])
    const swapped = emptyBook()
    bookAppend(swapped, 8, { version: 1, placedAt: 0, cents: -1, cancelled: false })
    bookAppend(swapped, 7, { version: Number.MAX_SAFE_INTEGER - 3, placedAt: at, cents: 2 ** 40 + 1, cancelled: true })
    expect(sameBook(book, swapped)).toBe(true)
    const builder = new BookBuilder()
    builder.add(7, { version: Number.MAX_SAFE_INTEGER - 3, placedAt: at, cents: 2 ** 40 + 1, cancelled: true })
    builder.add(8, { version: 1, placedAt: 0, cents: -1, cancelled: false })
    const built = builder.take()
    expect(built).toEqual(book)
    expect(builder.take()).toEqual([]) // taken: the next customer starts empty
    builder.add(8, { version: 1, placedAt: 0, cents: -1, cancelled: false })
    expect(sameBook(builder.take(), swapped)).toBe(false) // one order of two
    expect(built).toEqual(book) // a later take does not touch an earlier book
    bookMerge(swapped, 8, { version: 2, eventId: 'x', placedAt: 0, cents: -1, cancelled: false })
    expect(sameBook(book, swapped)).toBe(false)
    expect(sameBook(undefined, book)).toBe(false)
  })
})

describe('featuresDigest', () => {
  it('is equal for equal values and moves with any one of them', () => {
    const agg = aggregate([{ placedAt: Date.UTC(2025, 0, 5), cents: 12_345, cancelled: false }, { placedAt: Date.UTC(2025, 2, 5), cents: 5_000, cancelled: false }])
    const v = computeFeatures(agg, null, Date.UTC(2025, 5, 1))
    expect(featuresDigest({ ...v })).toBe(featuresDigest(v))
    const digests = new Set([featuresDigest(v)])
    for (const k of Object.keys(v) as (keyof typeof v)[]) {
      const x = v[k]
      const moved = { ...v, [k]: typeof x === 'number' ? x + 1 : x === null ? 0 : `${x}!` }
      digests.add(featuresDigest(moved))
      if (x !== null) digests.add(featuresDigest({ ...v, [k]: null }))
    }
    const nonNull = Object.values(v).filter((x) => x !== null).length
    expect(digests.size).toBe(1 + Object.keys(v).length + nonNull)
  })
})

describe('state store restore', () => {
  let store: Store
  beforeAll(async () => {
    store = await migratedStore()
  })
  afterAll(async () => {
    await store?.close()
  })

  it('restores the fact the book keeps from unmerged rows, whichever of a tie was stored last', async () => {
    // A consumer only ever writes a fact that supersedes the one it held, so the row a merge keeps
    // (the last inserted of a version) is the winner too; rows not merged yet are chosen by the rule.
    await store.command({ query: 'SYSTEM STOP MERGES feature_order_facts' })
    const id = { tenantId: 5, customerId: 9, partition: 3, email: '', emailVersion: 0 }
    const tie: OrderFact[] = [
      { version: 80, eventId: 'z-small', placedAt: 1_000, cents: 100, cancelled: false },
      { version: 80, eventId: 'a-large', placedAt: 1_000, cents: 900, cancelled: false },
      { version: 79, eventId: 'zz-older', placedAt: 1_000, cents: 5_000, cancelled: false },
    ]
    // Order a gets them in one order, order b in the other, each in its own insert.
    for (const f of tie) await insertJsonRows(store, 'feature_order_facts', [factRow(id, 'a', f)])
    for (const f of [...tie].reverse()) await insertJsonRows(store, 'feature_order_facts', [factRow(id, 'b', f)])
    const restored: StoredFact[] = []
    const n = await eachPartitionFact(store, 3, (f) => restored.push(f))
    expect(n).toBe(2)
    const winner = tie.reduce((a, b) => (newer(a, b) ? b : a))
    expect(winner.eventId).toBe('a-large')
    for (const f of restored) expect({ orderId: f.orderId, cents: f.cents, version: f.version }).toEqual({ orderId: f.orderId, cents: 900, version: 80 })
    expect(restored.map((f) => f.orderId).sort()).toEqual(['a', 'b'])
  })

  it('reads a partition in slices (small tenants together, a large one by ranges of its ids): the same facts, each once, a customer\'s together', async () => {
    const facts: ReturnType<typeof factRow>[] = []
    const fact = (tenantId: number, customerId: number, orderId: string, version: number, cents: number) =>
      factRow({ tenantId, customerId, partition: 6, email: '', emailVersion: 0 }, orderId, { version, eventId: `e${version}`, placedAt: 86_400_000 * version, cents, cancelled: false })
    // Tenant 7: 40 customers of 3 orders, ids spread up to 2^40; tenants 8 and 9: two customers each.
    for (let i = 0; i < 40; i++) for (let o = 0; o < 3; o++) facts.push(fact(7, 1 + Math.floor((i * 2 ** 40) / 40), `t7-${i}-${o}`, 1 + o, 100 * i + o))
    for (const t of [8, 9]) for (const c of [1, 2]) facts.push(fact(t, c, `t${t}-${c}`, 1, t * 10 + c))
    facts.push(fact(7, 1, 't7-0-0', 9, 12_345)) // a newer fact of an order already stored: one fact restored
    await insertJsonRows(store, 'feature_order_facts', facts)
    const read = async (perRead: number) => {
      const out: StoredFact[] = []
      const n = await eachPartitionFact(store, 6, (f) => out.push(f), perRead)
      expect(n).toBe(out.length)
      return out
    }
    const whole = await read(1_000_000)
    expect(whole).toHaveLength(40 * 3 + 4)
    expect(whole.find((f) => f.orderId === 't7-0-0')).toMatchObject({ version: 9, cents: 12_345 })
    const byOrder = (fs: StoredFact[]) => [...fs].sort((a, b) => (a.orderId < b.orderId ? -1 : 1))
    for (const perRead of [1, 5, 30, 121]) {
      const sliced = await read(perRead)
      expect(byOrder(sliced)).toEqual(byOrder(whole))
      const seen = new Set<string>()
      let last = ''
      for (const f of sliced) {
        const k = `${f.tenantId}:${f.customerId}`
        if (k === last) continue
        expect(seen.has(k)).toBe(false) // each customer's facts come in one run
        seen.add(k)
        last = k
      }
      expect(seen.size).toBe(44)
    }
  })

  it('slices by exact ids: customers past 2^53 lose no fact to a range cut short', async () => {
    // 2^60 + 1 and 2^60 + 3 read as one double; a range ending at that double would miss the second.
    await store.command({
      query: `INSERT INTO feature_order_facts (partition, tenant_id, customer_id, order_id, version, event_id, placed_at, total_cents, cancelled)
              SELECT 7, 11, arrayJoin([{a:UInt64}, {b:UInt64}]) AS c, concat(toString(c), '-', toString(number)), 1, 'e', toDateTime64('2025-01-01 00:00:00', 3, 'UTC'), 100, 0
              FROM numbers(2)`,
      query_params: { a: (2n ** 60n + 1n).toString(), b: (2n ** 60n + 3n).toString() },
    })
    for (const perRead of [1, 3, 1_000]) {
      const orders: string[] = []
      await eachPartitionFact(store, 7, (f) => orders.push(f.orderId), perRead)
      expect(orders.sort()).toEqual(['1152921504606846977-0', '1152921504606846977-1', '1152921504606846979-0', '1152921504606846979-1'])
    }
  })

  it('restores order ids exactly, tabs, newlines and backslashes included (the books key them by hash)', async () => {
    const id = { tenantId: 5, customerId: 10, partition: 4, email: '', emailVersion: 0 }
    const ids = ['tab\there', 'line\nbreak', 'back\\slash\\t', "quote'", 'ñandú-#1', '']
    await insertJsonRows(store, 'feature_order_facts', ids.map((orderId, i) => factRow(id, orderId, { version: 4, eventId: `e${i}`, placedAt: 86_400_000 * i, cents: 0 - i * 100, cancelled: i % 2 === 1 })))
    const restored: StoredFact[] = []
    await eachPartitionFact(store, 4, (f) => restored.push(f))
    expect(restored.map((f) => f.orderId).sort()).toEqual([...ids].sort())
    for (const f of restored) {
      const i = ids.indexOf(f.orderId)
      expect(f).toEqual({ tenantId: 5, customerId: 10, orderId: ids[i], version: 4, placedAt: 86_400_000 * i, cents: i === 0 ? 0 : -i * 100, cancelled: i % 2 === 1 })
      expect(orderKey(f.orderId)).toBe(orderKey(ids[i]!))
    }
  })
})

describe('migration 017: ties stored under the old rule', () => {
  it('writes the winner again, so the merge keeps what a restore reads before it', async () => {
    const store = await migratedStore()
    try {
      const id = { tenantId: 6, customerId: 11, partition: 2, email: '', emailVersion: 0 }
      // As the old consumer wrote them: the larger event id last, although its total is smaller.
      await insertJsonRows(store, 'feature_order_facts', [factRow(id, 'tied', { version: 80, eventId: 'a', placedAt: 5_000, cents: 900, cancelled: false })])
      await insertJsonRows(store, 'feature_order_facts', [factRow(id, 'tied', { version: 80, eventId: 'b', placedAt: 5_000, cents: 100, cancelled: false })])
      // An order whose rows do not tie (an older version first) and one of a single row: nothing to repair.
      await insertJsonRows(store, 'feature_order_facts', [factRow(id, 'older', { version: 79, eventId: 'z', placedAt: 5_000, cents: 9_000, cancelled: false }), factRow(id, 'single', { version: 3, eventId: 'c', placedAt: 5_000, cents: 1, cancelled: false })])
      await insertJsonRows(store, 'feature_order_facts', [factRow(id, 'older', { version: 80, eventId: 'y', placedAt: 5_000, cents: 10, cancelled: false })])
      const restore = async () => {
        const out: Record<string, number> = {}
        await eachPartitionFact(store, 2, (f) => (out[f.orderId] = f.cents))
        return out
      }
      const before = await restore()
      expect(before).toEqual({ tied: 900, older: 10, single: 1 })
      const rows = async () => Number((await (await store.query({ query: 'SELECT count() AS n FROM feature_order_facts', format: 'JSONEachRow' })).json<{ n: string }>())[0]!.n)
      const n = await rows()
      const repair = loadMigrations().find((m) => m.version === 17)!
      for (const statement of repair.statements) await store.command({ query: statement })
      expect(await rows()).toBe(n + 1) // the tied order's winner only
      await store.command({ query: 'OPTIMIZE TABLE feature_order_facts FINAL' })
      expect(await restore()).toEqual(before)
    } finally {
      await store.close()
    }
  })
})
