import { grown } from '../../common/typed-arrays.ts'
import { BookArena } from './book-arena.ts'
import { BOOK_STRIDE, gatherBook, mergeHeld, writeOrder, type BookBuilder } from './order-book.ts'
import type { CountedOrders, OrderFact } from './order-facts.ts'
import { PendingFacts, type Chain, type IdTexts, type PendingFact } from './pending-facts.ts'
import type { CustomerIdentity } from './rows.ts'

/**
 * The state of every customer a feature consumer holds, as columns (pure): a customer is a slot,
 * a small integer, and each of its fields an element of a typed array; its orders are a range of
 * a shared arena (book-arena.ts) and its e-mail bytes of a shared buffer.
 *
 * Why columns: V8's collector visits every object the heap keeps alive. As an object a customer
 * was about seven (its state, three boxed doubles, its order array and that array's elements, its
 * e-mail): at a million customers a full collection marked seven million objects, 0.3–0.45 s of
 * steps on the consumer's own thread while the orders arriving waited (docs/analytics-performance.md,
 * "Streaming", stop 49). As columns the whole state is a few dozen objects, whatever its size.
 *
 * A slot freed when its partition is dropped is reused by the next customer added; its generation
 * (gen) then moves on, so whoever kept a slot across a drop can tell (WriteUpdates, the engine's stale profiles).
 */
export type Customer = number

const DIRTY = 1
const DELETED = 2
const LIVE = 4

export class CustomerTable {
  /** Slots handed out so far; freed ones wait in freeSlots. */
  private size = 0
  private readonly freeSlots: number[] = []
  private tenant = new Float64Array(0)
  private id = new Float64Array(0)
  private part = new Int32Array(0)
  private emailVer = new Float64Array(0)
  /** Digest of the values last written (featuresDigest; NaN: none). */
  private digest = new Float64Array(0)
  /** Version of the customer's last stored row; the next one must be higher. */
  private rowVer = new Float64Array(0)
  private flags = new Uint8Array(0)
  /** Segment and RFM score last written and published, as codes of `texts` (0: none). */
  private seg = new Uint16Array(0)
  private rfm = new Uint16Array(0)
  private generation = new Uint32Array(0)
  private readonly books = new BookArena()
  private readonly emails = new EmailBytes()
  private readonly texts = new Texts()
  /** Facts changed since the customer's last write (pending-facts.ts): each slot's chain, 0 for none. */
  private pendingAt = new Int32Array(0)
  private readonly pending = new PendingFacts()
  private readonly index = new Map<number, Map<number, Customer>>()

  get(tenantId: number, customerId: number): Customer | undefined {
    return this.index.get(tenantId)?.get(customerId)
  }

  /** A customer not held yet, with nothing known of it. */
  add(tenantId: number, customerId: number, partition: number): Customer {
    const c = this.freeSlots.pop() ?? this.newSlot()
    this.tenant[c] = tenantId
    this.id[c] = customerId
    this.part[c] = partition
    this.emailVer[c] = 0
    this.digest[c] = NaN
    this.rowVer[c] = 0
    this.flags[c] = LIVE
    this.seg[c] = 0
    this.rfm[c] = 0
    let m = this.index.get(tenantId)
    if (!m) this.index.set(tenantId, (m = new Map()))
    m.set(customerId, c)
    return c
  }

  /** The slot still holds a customer (not dropped with its partition). */
  live(c: Customer): boolean {
    return (this.flags[c]! & LIVE) !== 0
  }

  /** Moves on each time the slot is freed. */
  gen(c: Customer): number {
    return this.generation[c]!
  }

  /** Every customer held, tenant by tenant in the order they came. */
  all(): Customer[] {
    const out: Customer[] = []
    for (const m of this.index.values()) for (const c of m.values()) out.push(c)
    return out
  }

  get count(): number {
    return this.size - this.freeSlots.length
  }

  /** The tenants with at least one customer held. */
  tenantIds(): number[] {
    return [...this.index.keys()]
  }

  /** Forgets the customers of a partition (their slots are reused). */
  dropPartition(p: number): void {
    for (const [t, m] of this.index) {
      for (const [id, c] of m) {
        if (this.part[c] !== p) continue
        m.delete(id)
        this.free(c)
      }
      if (!m.size) this.index.delete(t)
    }
  }

  tenantId(c: Customer): number {
    return this.tenant[c]!
  }

  customerId(c: Customer): number {
    return this.id[c]!
  }

  partition(c: Customer): number {
    return this.part[c]!
  }

  email(c: Customer): string {
    return this.emails.get(c)
  }

  emailVersion(c: Customer): number {
    return this.emailVer[c]!
  }

  setEmail(c: Customer, email: string, version: number): void {
    this.emails.set(c, email, this.size)
    this.emailVer[c] = version
  }

  segment(c: Customer): string | null {
    return this.texts.text(this.seg[c]!)
  }

  score(c: Customer): string | null {
    return this.texts.text(this.rfm[c]!)
  }

  setEmitted(c: Customer, segment: string | null, score: string | null): void {
    this.setEmittedCodes(c, this.texts.codeOf(segment), this.texts.codeOf(score))
  }

  /** A segment's or score's code (0 for null), as segmentCode and scoreCode give them: what a write keeps instead of the text. */
  textCode(text: string | null): number {
    return this.texts.codeOf(text)
  }

  segmentCode(c: Customer): number {
    return this.seg[c]!
  }

  scoreCode(c: Customer): number {
    return this.rfm[c]!
  }

  /** setEmitted with the texts' codes (textCode). */
  setEmittedCodes(c: Customer, segment: number, score: number): void {
    this.seg[c] = segment
    this.rfm[c] = score
  }

  last(c: Customer): number {
    return this.digest[c]!
  }

  setLast(c: Customer, digest: number): void {
    this.digest[c] = digest
  }

  rowVersion(c: Customer): number {
    return this.rowVer[c]!
  }

  setRowVersion(c: Customer, v: number): void {
    this.rowVer[c] = v
  }

  dirty(c: Customer): boolean {
    return (this.flags[c]! & DIRTY) !== 0
  }

  setDirty(c: Customer, on: boolean): void {
    this.flags[c] = on ? this.flags[c]! | DIRTY : this.flags[c]! & ~DIRTY
  }

  deleted(c: Customer): boolean {
    return (this.flags[c]! & DELETED) !== 0
  }

  setDeleted(c: Customer, on: boolean): void {
    this.flags[c] = on ? this.flags[c]! | DELETED : this.flags[c]! & ~DELETED
  }

  /**
   * Sets an order's fact among those changed since the customer's last write (the caller found it
   * newer than the one it replaces): the order's id is text j of `ids`, its event's text j + 1.
   */
  addPendingFact(c: Customer, key: number, ids: IdTexts, j: number, f: Omit<OrderFact, 'eventId'>): void {
    this.pendingAt[c] = this.pending.put(this.pendingAt[c]!, key, ids, j, f)
  }

  /** Calls fn with each fact changed since the customer's last write, in the order they came. */
  forEachPending<T>(c: Customer, fn: (this: T, f: PendingFact) => void, thisArg: T): void {
    this.pending.forEach(this.pendingAt[c]!, fn, thisArg)
  }

  /** The facts changed since the customer's last write, as an array (tests, logs). */
  pendingFacts(c: Customer): PendingFact[] {
    return this.pending.facts(this.pendingAt[c]!)
  }

  /** The customer's pending facts, handed to a write: the customer has none left. Give them back (givePendingBack) or let them go (releasePending). */
  takePending(c: Customer): Chain {
    const chain = this.pendingAt[c]!
    this.pendingAt[c] = 0
    return chain
  }

  /** Facts taken by a write that was not stored, pending again: a newer fact of an order pending meanwhile wins. */
  givePendingBack(c: Customer, chain: Chain): void {
    this.pendingAt[c] = this.pending.merge(this.pendingAt[c]!, chain)
  }

  /** Facts taken by a write that was stored (or whose customer is gone): their entries are reused. */
  releasePending(chain: Chain): void {
    this.pending.release(chain)
  }

  /** Folds one order's fact into the customer's book (order-book.ts' rule); returns whether it changed. */
  mergeOrder(c: Customer, key: number, f: Omit<OrderFact, 'eventId'>): boolean {
    const b = this.books
    const merged = mergeHeld(b.array(c), b.start(c), b.end(c), key, f)
    if (merged !== null) return merged
    const at = b.grow(c, BOOK_STRIDE)
    writeOrder(b.array(c), at, key, f)
    return true
  }

  /** Appends the facts a restore collected (facts the book holds not yet), at their size. */
  appendOrders(c: Customer, built: BookBuilder): void {
    if (!built.size) return
    const at = this.books.grow(c, built.size, true)
    built.takeInto(this.books.array(c), at)
  }

  /** Adds the customer's orders to `into`. */
  gatherOrders(c: Customer, into: CountedOrders): void {
    gatherBook(this.books.array(c), into, this.books.start(c), this.books.end(c))
  }

  orderCount(c: Customer): number {
    return this.books.length(c) / BOOK_STRIDE
  }

  /** The customer's identity as the rows and events carry it (an object made for the write). */
  identity(c: Customer): CustomerIdentity {
    return { tenantId: this.tenant[c]!, customerId: this.id[c]!, partition: this.part[c]!, email: this.emails.get(c), emailVersion: this.emailVer[c]! }
  }

  /** Doubles of the order arena and bytes of the e-mails: the docs' figures. */
  footprint(): { customers: number; orderDoubles: number; orderDoublesLive: number; emailBytes: number; pendingFacts: number; pendingTexts: number } {
    const b = this.books.footprint()
    return { customers: this.count, orderDoubles: b.doubles, orderDoublesLive: b.live, emailBytes: this.emails.capacity, pendingFacts: this.pending.count, pendingTexts: this.pending.textsHeld }
  }

  private free(c: Customer): void {
    this.books.clear(c)
    this.emails.clear(c)
    this.releasePending(this.takePending(c))
    this.flags[c] = 0
    this.generation[c] = (this.generation[c]! + 1) >>> 0
    this.freeSlots.push(c)
  }

  private newSlot(): Customer {
    const c = this.size++
    if (c >= this.flags.length) this.reserve(Math.max(1024, 2 * this.flags.length))
    return c
  }

  private reserve(n: number): void {
    this.tenant = grown(this.tenant, n)
    this.id = grown(this.id, n)
    this.part = grown(this.part, n)
    this.emailVer = grown(this.emailVer, n)
    this.digest = grown(this.digest, n)
    this.rowVer = grown(this.rowVer, n)
    this.flags = grown(this.flags, n)
    this.seg = grown(this.seg, n)
    this.rfm = grown(this.rfm, n)
    this.generation = grown(this.generation, n)
    this.pendingAt = grown(this.pendingAt, n)
    this.books.reserve(n)
    this.emails.reserve(n)
  }
}

/** Texts of few values (segment names, RFM scores) as codes, 0 for null; each text is kept once. */
class Texts {
  private readonly codes = new Map<string, number>()
  private readonly texts: (string | null)[] = [null]

  codeOf(text: string | null): number {
    if (text === null) return 0
    let code = this.codes.get(text)
    if (code === undefined) {
      code = this.texts.length
      if (code > 0xffff) throw new RangeError('more than 65,535 distinct segment and score texts')
      this.texts.push(text)
      this.codes.set(text, code)
    }
    return code
  }

  text(code: number): string | null {
    return this.texts[code]!
  }
}

/**
 * Each slot's e-mail as UTF-8 bytes in one buffer. A new e-mail no longer than the old one takes
 * its place; a longer one goes to the end, and the old bytes are waste until the buffer must grow,
 * when it is rewritten without them if they are most of it.
 */
class EmailBytes {
  private buf = Buffer.alloc(1 << 16)
  private top = 0
  private waste = 0
  private at = new Int32Array(0)
  private len = new Int32Array(0)

  get capacity(): number {
    return this.buf.length
  }

  reserve(n: number): void {
    this.at = grown(this.at, n)
    this.len = grown(this.len, n)
  }

  get(slot: number): string {
    const n = this.len[slot]!
    return n ? this.buf.toString('utf8', this.at[slot]!, this.at[slot]! + n) : ''
  }

  /** `slots`: the slots in use, which a rewrite keeps. */
  set(slot: number, email: string, slots: number): void {
    const n = Buffer.byteLength(email)
    const old = this.len[slot]!
    if (n === 0) {
      // No bytes to write: an empty slot's offset may be past the end of a buffer rewritten since.
      this.clear(slot)
      return
    }
    if (n <= old) {
      this.buf.write(email, this.at[slot]!, 'utf8')
      this.waste += old - n
      this.len[slot] = n
      return
    }
    // Old bytes are waste from here on: a rewrite (room()) leaves them out.
    this.len[slot] = 0
    this.waste += old
    this.room(n, slots)
    this.buf.write(email, this.top, 'utf8')
    this.at[slot] = this.top
    this.len[slot] = n
    this.top += n
  }

  clear(slot: number): void {
    this.waste += this.len[slot]!
    this.len[slot] = 0
    this.at[slot] = 0
  }

  /** Room for n more bytes at the end: the buffer rewritten without its waste when that is most of it, else twice as large. */
  private room(n: number, slots: number): void {
    if (this.top + n <= this.buf.length) return
    const live = this.top - this.waste
    const next = Buffer.alloc(Math.max(1 << 16, 2 * (live + n)))
    if (this.waste > live) {
      let top = 0
      for (let s = 0; s < slots; s++) {
        const k = this.len[s]!
        if (!k) continue
        this.buf.copy(next, top, this.at[s]!, this.at[s]! + k)
        this.at[s] = top
        top += k
      }
      this.top = top
      this.waste = 0
    } else {
      this.buf.copy(next, 0, 0, this.top)
    }
    this.buf = next
  }
}
