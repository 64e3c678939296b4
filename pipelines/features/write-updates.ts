import type { Customer, CustomerTable } from './customer-table.ts'

const TAKEN = 1
const DELETED = 2
const BEFORE_DELETED = 4

/**
 * What one write changes of its customers' states, as columns (pure): taken when the write is
 * published (takeAll), given back should its inserts fail (rollBackAll), unless a later write has
 * taken the customer since. A customer's pending facts go with the write (CustomerTable.takePending)
 * and back to the customer should its inserts fail (a newer fact of an order pending meanwhile
 * wins), so they are stored with its next write; once its inserts are done (settleAll) their
 * entries are free.
 *
 * Why columns: a write's updates live until its inserts end, through young-generation collections
 * that copy whatever they hold. As an object a customer an update was about six (the object and
 * the boxed doubles of its fields): at a million customers about 230 MB promoted over a backlog
 * (docs/analytics-performance.md, "Streaming", stop 51).
 */
export class WriteUpdates {
  private n = 0
  private readonly customers: Int32Array
  private readonly gens: Uint32Array
  /** The segment and RFM score the write emits, as the table's text codes (CustomerTable.textCode). */
  private readonly segs: Uint16Array
  private readonly scores: Uint16Array
  private readonly digests: Float64Array
  private readonly versions: Float64Array
  private readonly flags: Uint8Array
  // What takeAll replaced.
  private readonly beforeVersions: Float64Array
  private readonly beforeSegs: Uint16Array
  private readonly beforeScores: Uint16Array
  private readonly beforeDigests: Float64Array
  /** The pending facts this write stores (pending-facts.ts; 0: none). */
  private readonly facts: Int32Array

  /** @param capacity the most updates the write adds (its customers). */
  constructor(
    private readonly table: CustomerTable,
    capacity: number,
  ) {
    this.customers = new Int32Array(capacity)
    this.gens = new Uint32Array(capacity)
    this.segs = new Uint16Array(capacity)
    this.scores = new Uint16Array(capacity)
    this.digests = new Float64Array(capacity)
    this.versions = new Float64Array(capacity)
    this.flags = new Uint8Array(capacity)
    this.beforeVersions = new Float64Array(capacity)
    this.beforeSegs = new Uint16Array(capacity)
    this.beforeScores = new Uint16Array(capacity)
    this.beforeDigests = new Float64Array(capacity)
    this.facts = new Int32Array(capacity)
  }

  get length(): number {
    return this.n
  }

  /** The customer of update i. */
  customer(i: number): Customer {
    return this.customers[i]!
  }

  /** Customer c's state after the write: its emitted segment and score, its values' digest, its row version, deleted or not. */
  add(c: Customer, segment: string | null, score: string | null, digest: number, version: number, deleted: boolean): void {
    const i = this.n++
    const S = this.table
    this.customers[i] = c
    this.gens[i] = S.gen(c)
    this.segs[i] = S.textCode(segment)
    this.scores[i] = S.textCode(score)
    this.digests[i] = digest
    this.versions[i] = version
    this.flags[i] = deleted ? DELETED : 0
  }

  /** The write is published: its customers' states are the write's. */
  takeAll(): void {
    const S = this.table
    for (let i = 0; i < this.n; i++) {
      const c = this.customers[i]!
      if (!this.current(i)) continue
      this.flags[i]! |= TAKEN | (S.deleted(c) ? BEFORE_DELETED : 0)
      this.beforeVersions[i] = S.rowVersion(c)
      this.beforeSegs[i] = S.segmentCode(c)
      this.beforeScores[i] = S.scoreCode(c)
      this.beforeDigests[i] = S.last(c)
      this.facts[i] = S.takePending(c)
      S.setRowVersion(c, this.versions[i]!)
      S.setEmittedCodes(c, this.segs[i]!, this.scores[i]!)
      S.setLast(c, this.digests[i]!)
      S.setDeleted(c, (this.flags[i]! & DELETED) !== 0)
      S.setDirty(c, false)
    }
  }

  /** The write is stored: its facts' entries are free (a customer's slot may hold another customer by now: they were taken from it). */
  settleAll(): void {
    for (let i = 0; i < this.n; i++) this.settle(i)
  }

  /** The write's inserts failed: each customer gets back what the write replaced (unless a later write took it since) and its facts as pending. */
  rollBackAll(): void {
    const S = this.table
    for (let i = 0; i < this.n; i++) {
      const c = this.customers[i]!
      if (!this.current(i)) {
        this.settle(i)
        continue
      }
      if (this.flags[i]! & TAKEN && S.rowVersion(c) === this.versions[i]) {
        S.setRowVersion(c, this.beforeVersions[i]!)
        S.setEmittedCodes(c, this.beforeSegs[i]!, this.beforeScores[i]!)
        S.setLast(c, this.beforeDigests[i]!)
        S.setDeleted(c, (this.flags[i]! & BEFORE_DELETED) !== 0)
      }
      S.givePendingBack(c, this.facts[i]!)
      this.facts[i] = 0
      S.setDirty(c, true)
    }
  }

  private settle(i: number): void {
    this.table.releasePending(this.facts[i]!)
    this.facts[i] = 0
  }

  /** The slot still holds the customer update i was made for (its partition was not dropped since). */
  private current(i: number): boolean {
    const c = this.customers[i]!
    return this.table.live(c) && this.table.gen(c) === this.gens[i]
  }
}
