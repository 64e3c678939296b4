import { describe, expect, it } from 'vitest'
import { CustomerTable } from '../../pipelines/features/customer-table.ts'
import { idTexts } from '../../pipelines/features/pending-facts.ts'
import { WriteUpdates } from '../../pipelines/features/write-updates.ts'

const fact = (version: number, cents: number) => ({ version, placedAt: 1_700_000_000_000, cents, cancelled: false })
const state = (S: CustomerTable, c: number) => ({
  version: S.rowVersion(c),
  segment: S.segment(c),
  score: S.score(c),
  last: S.last(c),
  deleted: S.deleted(c),
  dirty: S.dirty(c),
  facts: S.pendingFacts(c).map((f) => `${f.orderId}@${f.version}:${f.cents}`),
})

/** Two customers with a stored state and pending facts, as a write finds them. */
function table() {
  const S = new CustomerTable()
  const a = S.add(1, 10, 0)
  const b = S.add(1, 11, 1)
  S.setRowVersion(a, 5)
  S.setEmitted(a, 'Champions', '555')
  S.setLast(a, 123)
  S.setRowVersion(b, 6)
  S.setEmitted(b, 'Lost', '111')
  for (const c of [a, b]) S.setDirty(c, true)
  S.addPendingFact(a, 1, idTexts('o1', 'e1'), 0, fact(2, 100))
  S.addPendingFact(b, 2, idTexts('o2', 'e2'), 0, fact(2, 200))
  return { S, a, b }
}

describe('WriteUpdates', () => {
  it('gives the customers the write’s state when taken, and frees their facts once stored', () => {
    const { S, a, b } = table()
    const u = new WriteUpdates(S, 2)
    u.add(a, 'Loyal Customers', '445', 77, 9, false)
    u.add(b, null, null, NaN, 6, true)
    expect([u.length, u.customer(0), u.customer(1)]).toEqual([2, a, b])
    u.takeAll()
    expect(state(S, a)).toEqual({ version: 9, segment: 'Loyal Customers', score: '445', last: 77, deleted: false, dirty: false, facts: [] })
    expect(state(S, b)).toEqual({ version: 6, segment: null, score: null, last: NaN, deleted: true, dirty: false, facts: [] })
    expect(S.footprint().pendingFacts).toBe(2) // the write holds them until its inserts end
    u.settleAll()
    expect(S.footprint().pendingFacts).toBe(0)
  })

  it('gives back what it replaced should the inserts fail, and the facts as pending with the newer fact of an order winning', () => {
    const { S, a, b } = table()
    const before = [state(S, a), state(S, b)]
    const u = new WriteUpdates(S, 2)
    u.add(a, 'Loyal Customers', '445', 77, 9, false)
    u.add(b, null, null, NaN, 6, true)
    u.takeAll()
    // Folded while the inserts ran: a newer fact of o1, an older one of o2, a new order o3.
    S.addPendingFact(a, 1, idTexts('o1', 'e1b'), 0, fact(3, 150))
    S.addPendingFact(b, 2, idTexts('o2', 'e2b'), 0, fact(1, 999))
    S.addPendingFact(b, 3, idTexts('o3', 'e3'), 0, fact(1, 300))
    u.rollBackAll()
    expect(state(S, a)).toEqual({ ...before[0], facts: ['o1@3:150'] })
    expect(state(S, b)).toEqual({ ...before[1], facts: ['o2@2:200', 'o3@1:300'] })
    expect(S.footprint().pendingFacts).toBe(3)
  })

  it('leaves a customer a later write took alone but for its facts, and a slot reused since wholly alone', () => {
    const { S, a, b } = table()
    const u = new WriteUpdates(S, 2)
    u.add(a, 'Loyal Customers', '445', 77, 9, false)
    u.add(b, 'At Risk', '211', 55, 8, false)
    u.takeAll()
    // A later write took a (its version moved on); b's partition was dropped and its slot given to another customer.
    const later = new WriteUpdates(S, 1)
    later.add(a, 'Champions', '554', 88, 10, false)
    later.takeAll()
    S.dropPartition(1)
    const other = S.add(2, 99, 1)
    expect(other).toBe(b)
    u.rollBackAll()
    expect(state(S, a)).toEqual({ version: 10, segment: 'Champions', score: '554', last: 88, deleted: false, dirty: true, facts: ['o1@2:100'] })
    expect(state(S, other)).toEqual({ version: 0, segment: null, score: null, last: NaN, deleted: false, dirty: false, facts: [] })
    later.settleAll()
    expect(S.footprint().pendingFacts).toBe(1) // a's fact, pending again; b's went with the write
  })

  it('takes nothing of a customer whose slot was reused before the write was published', () => {
    const { S, b } = table()
    const u = new WriteUpdates(S, 1)
    u.add(b, 'At Risk', '211', 55, 8, false)
    S.dropPartition(1)
    const other = S.add(2, 99, 1)
    S.addPendingFact(other, 7, idTexts('o7', 'e7'), 0, fact(1, 70))
    u.takeAll()
    u.settleAll()
    expect(state(S, other)).toEqual({ version: 0, segment: null, score: null, last: NaN, deleted: false, dirty: false, facts: ['o7@1:70'] })
  })
})
