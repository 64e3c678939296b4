import { grown } from '../../common/typed-arrays.ts'
import { joinTexts, replyText, type JoinedTexts } from './inputs-reply.ts'
import { newer, type OrderFact } from './order-facts.ts'

/**
 * The order facts a feature consumer folded since each customer's last write, as columns (pure):
 * they wait there until the write that stores them has inserted its rows (a failed insert gives
 * them back). A fact is an entry, a small integer, and its numbers elements of typed arrays; its
 * two ids are read, when asked for, from the texts they came in (`IdTexts`: the decode thread's
 * reply for the batch, inputs-reply.ts), which are kept while a fact of theirs is.
 *
 * Why columns: a fact waits through the batches queued before its write, that write and the next
 * one's scoring, so every fact outlived the young generation and was copied out of it and then
 * marked. As a Map of `OrderFact` objects a customer a fact was about six objects (the fact, two
 * boxed doubles, its share of the Map's table, its two ids): at a million customers these were
 * most of what the consumer promoted (docs/analytics-performance.md, "Streaming", stop 51).
 *
 * A customer's facts are a chain: a circular list whose handle is its last entry (0: no facts), so
 * that facts are appended and read in the order they came, as a Map keeps them. A fact of an order
 * the chain holds already takes that fact's place. Chains are handed from the customer to a write
 * and back (take, giveBack) without copying, and their entries freed for reuse (release).
 */
export type Chain = number

/**
 * Where facts' ids are read (inputs-reply.ts' joined texts, the shape of the decode thread's
 * reply): a fact's order id is text j, its event's id text j + 1.
 */
export type IdTexts = JoinedTexts

/** One fact's ids as IdTexts of their own (a fact that did not come from a decode thread's reply). */
export const idTexts = (orderId: string, eventId: string): IdTexts => joinTexts([orderId, eventId])

/** A fact as the chain gives it (forEach): its order, its fact's fields. */
export type PendingFact = Readonly<OrderFact> & { readonly orderId: string }

export class PendingFacts {
  private keys = new Float64Array(0)
  private versions = new Float64Array(0)
  private placedAts = new Float64Array(0)
  private cents = new Float64Array(0)
  private cancelled = new Uint8Array(0)
  /** The entry after this one in its chain (a chain's last entry points to its first); for a free entry, the next free one (0: none). */
  private next = new Int32Array(0)
  /** The fact's ids: texts j and j + 1 (idAt) of sources[src]. */
  private src = new Int32Array(0)
  private idAt = new Int32Array(0)
  /** The IdTexts facts read their ids from, and how many facts read each; 0 stands for none. */
  private readonly sources: (IdTexts | undefined)[] = [undefined]
  private sourceRefs = new Int32Array(16)
  private readonly freeSources: number[] = []
  /** The source of the latest put (its texts are usually those of the next put too). */
  private lastTexts: IdTexts | undefined = undefined
  private lastSource = 0
  /** Entries handed out so far; entry 0 stands for no entry. */
  private size = 1
  private free = 0
  private live = 0

  /** Facts held, in all chains. */
  get count(): number {
    return this.live
  }

  /** IdTexts held for the facts (and the latest put's). */
  get textsHeld(): number {
    return this.sources.length - 1 - this.freeSources.length
  }

  /**
   * The chain with the fact `f` of the order whose id is text j of `ids` (its event's id text
   * j + 1) set; its handle. A fact of the order the chain holds (the same key and id) is replaced
   * where it is: the caller sets only a fact it found newer. The chain is walked, as the customer's
   * order book is by the fold before it (order-book.ts' findOrder): a customer's pending facts are
   * never more than its orders.
   */
  put(chain: Chain, key: number, ids: IdTexts, j: number, f: Omit<OrderFact, 'eventId'>): Chain {
    const src = this.sourceOf(ids)
    const held = this.find(chain, key, src, j)
    if (held) {
      this.write(held, key, src, j, f)
      return chain
    }
    const i = this.alloc()
    this.write(i, key, src, j, f)
    return this.link(chain, i)
  }

  /** Calls fn with each fact of the chain, in the order they came (a fact made for the call). */
  forEach<T>(chain: Chain, fn: (this: T, f: PendingFact) => void, thisArg: T): void {
    if (!chain) return
    let i = chain
    do {
      i = this.next[i]!
      fn.call(thisArg, this.factAt(i))
    } while (i !== chain)
  }

  /** The chain's facts: a fresh array, for tests and logs. */
  facts(chain: Chain): PendingFact[] {
    const out: PendingFact[] = []
    this.forEach(chain, (f) => out.push(f), null)
    return out
  }

  /**
   * `from`'s facts folded into `into`, where a fact of the same order is kept if it is not older
   * (order-facts.ts' `newer`), and replaced where it is otherwise; the others are appended. `from`'s
   * entries are moved or freed: the chain is gone. Returns `into`'s handle.
   */
  merge(into: Chain, from: Chain): Chain {
    if (!from) return into
    // Detach from's entries first: each is then either linked into `into` or freed.
    let i = this.next[from]!
    this.next[from] = 0
    for (;;) {
      const after = this.next[i]!
      const key = this.keys[i]!
      const held = this.find(into, key, this.src[i]!, this.idAt[i]!)
      if (!held) into = this.link(into, i)
      else {
        if (newer(this.factAt(held), this.factAt(i))) this.write(held, key, this.src[i]!, this.idAt[i]!, this.factAt(i))
        this.dispose(i)
      }
      if (i === from) break
      i = after
    }
    return into
  }

  /** The chain's entries are free for reuse. */
  release(chain: Chain): void {
    if (!chain) return
    let i = this.next[chain]!
    for (;;) {
      const after = this.next[i]!
      this.dispose(i)
      if (i === chain) return
      i = after
    }
  }

  /** The chain's entry of the order whose id is text j of source src, or 0. */
  private find(chain: Chain, key: number, src: number, j: number): number {
    if (!chain) return 0
    let orderId: string | undefined
    let i = chain
    do {
      i = this.next[i]!
      // Keys differ for all but the same order (order-book.ts): the ids are read only when they are equal.
      if (this.keys[i] === key && this.orderId(i) === (orderId ??= replyText(this.sources[src]!, j))) return i
    } while (i !== chain)
    return 0
  }

  private orderId(i: number): string {
    return replyText(this.sources[this.src[i]!]!, this.idAt[i]!)
  }

  /** Entry i appended to the chain; the chain's new handle (i, its last). */
  private link(chain: Chain, i: number): Chain {
    if (chain) {
      this.next[i] = this.next[chain]!
      this.next[chain] = i
    } else this.next[i] = i
    return i
  }

  private factAt(i: number): PendingFact {
    const texts = this.sources[this.src[i]!]!
    const j = this.idAt[i]!
    return { orderId: replyText(texts, j), eventId: replyText(texts, j + 1), version: this.versions[i]!, placedAt: this.placedAts[i]!, cents: this.cents[i]!, cancelled: this.cancelled[i] === 1 }
  }

  /** Entry i holds the fact; its ids are texts j and j + 1 of source src (the source it read before, if any, is read by one fact fewer). */
  private write(i: number, key: number, src: number, j: number, f: Omit<OrderFact, 'eventId'>): void {
    this.keys[i] = key
    this.versions[i] = f.version
    this.placedAts[i] = f.placedAt
    this.cents[i] = f.cents
    this.cancelled[i] = f.cancelled ? 1 : 0
    this.sourceRefs[src]!++
    this.unref(this.src[i]!)
    this.src[i] = src
    this.idAt[i] = j
  }

  /** The source of `ids`: the latest put's, or a new one (the latest's is let go if no fact reads it). */
  private sourceOf(ids: IdTexts): number {
    if (ids === this.lastTexts) return this.lastSource
    const before = this.lastSource
    const src = this.freeSources.pop() ?? this.sources.push(undefined) - 1
    if (src >= this.sourceRefs.length) this.sourceRefs = grown(this.sourceRefs, 2 * this.sourceRefs.length)
    this.sources[src] = ids
    this.sourceRefs[src] = 0
    this.lastTexts = ids
    this.lastSource = src
    if (before && this.sourceRefs[before] === 0) this.freeSource(before)
    return src
  }

  /** One fact fewer reads source src (0: none); a source no fact reads is let go, unless it is the latest put's. */
  private unref(src: number): void {
    if (!src) return
    if (--this.sourceRefs[src]! === 0 && src !== this.lastSource) this.freeSource(src)
  }

  private freeSource(src: number): void {
    this.sources[src] = undefined
    this.freeSources.push(src)
  }

  private alloc(): number {
    this.live++
    const i = this.free
    if (i) {
      this.free = this.next[i]!
      return i
    }
    if (this.size >= this.next.length) this.reserve(Math.max(1024, 2 * this.next.length))
    return this.size++
  }

  private dispose(i: number): void {
    this.live--
    // The ids' texts are kept no longer for this fact.
    this.unref(this.src[i]!)
    this.src[i] = 0
    this.next[i] = this.free
    this.free = i
  }

  private reserve(n: number): void {
    this.keys = grown(this.keys, n)
    this.versions = grown(this.versions, n)
    this.placedAts = grown(this.placedAts, n)
    this.cents = grown(this.cents, n)
    this.cancelled = grown(this.cancelled, n)
    this.next = grown(this.next, n)
    this.src = grown(this.src, n)
    this.idAt = grown(this.idAt, n)
  }
}
