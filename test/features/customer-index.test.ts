import { describe, expect, it } from 'vitest'
import { CustomerIndex } from '../../pipelines/features/customer-index.ts'

describe('CustomerIndex', () => {
  it('keeps one entry per (tenant, customer), apart by tenant, and drops what deleteWhere selects', () => {
    const ix = new CustomerIndex<{ tenant: number; id: number; partition: number }>()
    const a = { tenant: 1, id: 7, partition: 0 }
    const b = { tenant: 2, id: 7, partition: 1 }
    const c = { tenant: 1, id: 2 ** 40, partition: 1 } // an id past the small integers
    ix.set(1, 7, a)
    ix.set(2, 7, b)
    ix.set(1, 2 ** 40, c)
    expect(ix.get(1, 7)).toBe(a)
    expect(ix.get(2, 7)).toBe(b)
    expect(ix.get(1, 2 ** 40)).toBe(c)
    expect(ix.get(3, 7)).toBeUndefined()
    expect(ix.get(1, 8)).toBeUndefined()
    const replaced = { tenant: 1, id: 7, partition: 0 }
    ix.set(1, 7, replaced)
    expect([...ix.values()]).toEqual([replaced, c, b].sort((x, y) => x.tenant - y.tenant))
    expect(ix.tenantIds().sort()).toEqual([1, 2])
    ix.deleteWhere((v) => v.partition === 1)
    expect([...ix.values()]).toEqual([replaced])
    expect(ix.tenantIds()).toEqual([1]) // tenant 2 had only customers of partition 1
    expect(ix.get(2, 7)).toBeUndefined()
  })
})
