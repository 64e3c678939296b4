/**
 * A tenant's customers by id (pure): one map of numeric ids per tenant. A consumer holds a million
 * customers; keyed by `tenant:customer` strings, each key was a string of its own on the heap
 * (about 32 bytes a customer) where a small-integer id is stored in the map's entry.
 */
export class CustomerIndex<T> {
  private readonly tenants = new Map<number, Map<number, T>>()

  get(tenantId: number, customerId: number): T | undefined {
    return this.tenants.get(tenantId)?.get(customerId)
  }

  set(tenantId: number, customerId: number, value: T): void {
    let m = this.tenants.get(tenantId)
    if (!m) this.tenants.set(tenantId, (m = new Map()))
    m.set(customerId, value)
  }

  delete(tenantId: number, customerId: number): void {
    const m = this.tenants.get(tenantId)
    if (!m) return
    m.delete(customerId)
    if (!m.size) this.tenants.delete(tenantId)
  }

  /** Removes the entries `drop` selects. */
  deleteWhere(drop: (value: T) => boolean): void {
    for (const [t, m] of this.tenants) {
      for (const [id, v] of m) if (drop(v)) m.delete(id)
      if (!m.size) this.tenants.delete(t)
    }
  }

  *values(): IterableIterator<T> {
    for (const m of this.tenants.values()) yield* m.values()
  }

  /** The tenants with at least one entry. */
  tenantIds(): number[] {
    return [...this.tenants.keys()]
  }
}
