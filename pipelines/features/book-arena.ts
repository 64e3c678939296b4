/**
 * The order books of every customer a consumer holds, in a few large arrays of doubles (pure).
 *
 * A customer's book (order-book.ts' layout: four numbers an order) is a block of one chunk: a
 * header of two numbers (the slot it belongs to, its capacity) and then its orders. A book that
 * outgrows its block moves to a new one at the end of the chunk being filled, twice as large;
 * the old block is counted as waste. A chunk mostly waste has its live books moved out
 * (compact()) and is dropped, so the arena stays within about twice what it holds.
 *
 * Why not an array per customer: V8's collector visits every object it keeps alive. At a million
 * customers a book was two objects (the array and its elements), and a full collection of the
 * consumer's heap marked four million objects, 0.3–0.45 s of steps on the consumer's own thread,
 * which delayed the orders arriving meanwhile (docs/analytics-performance.md, "Streaming", stop
 * 49). A chunk is one object however many books it holds, and its doubles are not scanned.
 */
import { grown } from '../../common/typed-arrays.ts'

const HEADER = 2
const NONE = -1
/** Doubles a chunk holds (8 MB). A book larger than that gets a chunk of its own size. */
export const CHUNK_DOUBLES = 1 << 20
/** The capacity a book first takes when it grows from nothing: two orders. */
const MIN_CAPACITY = 8
const EMPTY = new Float64Array(0)

export class BookArena {
  private chunks: (Float64Array | null)[] = []
  /** Doubles handed out of each chunk (blocks with their headers), and of those, waste. */
  private used: number[] = []
  private waste: number[] = []
  /** Indexes of dropped chunks, reused by the next chunk made. */
  private readonly freeChunks: number[] = []
  /** The chunk new blocks are cut from. */
  private cur = NONE
  /** Per slot: the chunk of its book (NONE: empty), where its orders start, how many doubles it holds and can hold. */
  private chunkOf = new Int32Array(0)
  private startOf = new Int32Array(0)
  private lengthOf = new Int32Array(0)
  private capacityOf = new Int32Array(0)

  constructor(private readonly chunkDoubles = CHUNK_DOUBLES) {
    if (!(Number.isInteger(chunkDoubles) && chunkDoubles >= MIN_CAPACITY + HEADER)) throw new RangeError(`chunkDoubles must be an integer ≥ ${MIN_CAPACITY + HEADER}, got ${chunkDoubles}`)
  }

  /** Makes room for slots below `n` (their books empty). */
  reserve(n: number): void {
    if (n <= this.chunkOf.length) return
    const size = Math.max(n, 2 * this.chunkOf.length, 1024)
    this.chunkOf = grown(this.chunkOf, size, NONE)
    this.startOf = grown(this.startOf, size)
    this.lengthOf = grown(this.lengthOf, size)
    this.capacityOf = grown(this.capacityOf, size)
  }

  /** The array a slot's book is in (an empty one for an empty book): its orders are [start, end). */
  array(slot: number): Float64Array {
    const k = this.chunkOf[slot]!
    return k === NONE ? EMPTY : this.chunks[k]!
  }

  start(slot: number): number {
    return this.chunkOf[slot] === NONE ? 0 : this.startOf[slot]!
  }

  end(slot: number): number {
    return this.start(slot) + this.lengthOf[slot]!
  }

  /** Doubles the slot's book holds (four an order). */
  length(slot: number): number {
    return this.lengthOf[slot]!
  }

  /**
   * Room for `more` doubles after the slot's book, which moves to a larger block when its own is
   * full; returns the index the next double goes to in array(slot). `exact`: the block takes just
   * what is asked (a restore, which gives a customer's orders at once), else twice that.
   */
  grow(slot: number, more: number, exact = false): number {
    const len = this.lengthOf[slot]!
    if (len + more > this.capacityOf[slot]!) {
      const cap = exact ? len + more : Math.max(MIN_CAPACITY, 2 * (len + more))
      const from = this.array(slot)
      const at = this.start(slot)
      const k = this.chunkOf[slot]!
      this.place(slot, cap)
      if (len) this.array(slot).set(from.subarray(at, at + len), this.startOf[slot]!)
      if (k !== NONE) this.wasted(k, this.capacityOfBlock(from, at))
    }
    const to = this.start(slot) + len
    this.lengthOf[slot] = len + more
    return to
  }

  /** Empties a slot's book, its block counted as waste. */
  clear(slot: number): void {
    const k = this.chunkOf[slot]!
    if (k === NONE) return
    const a = this.chunks[k]!
    const at = this.startOf[slot]!
    this.chunkOf[slot] = NONE
    this.lengthOf[slot] = 0
    this.capacityOf[slot] = 0
    this.wasted(k, this.capacityOfBlock(a, at))
  }

  /** Doubles held in chunks, of those the books' orders, and the chunks (the docs' figures, the tests). */
  footprint(): { doubles: number; live: number; chunks: number } {
    let doubles = 0
    let chunks = 0
    for (const a of this.chunks) {
      if (!a) continue
      doubles += a.length
      chunks++
    }
    let live = 0
    for (let s = 0; s < this.lengthOf.length; s++) live += this.lengthOf[s]!
    return { doubles, live, chunks }
  }

  private capacityOfBlock(a: Float64Array, start: number): number {
    return a[start - 1]!
  }

  /** A new block of `cap` doubles for the slot, its header written. */
  private place(slot: number, cap: number): void {
    const block = cap + HEADER
    let k: number
    if (block > this.chunkDoubles) {
      k = this.newChunk(block)
    } else {
      if (this.cur === NONE || this.used[this.cur]! + block > this.chunkDoubles) this.cur = this.newChunk(this.chunkDoubles)
      k = this.cur
    }
    const a = this.chunks[k]!
    const at = this.used[k]!
    this.used[k] = at + block
    a[at] = slot
    a[at + 1] = cap
    this.chunkOf[slot] = k
    this.startOf[slot] = at + HEADER
    this.capacityOf[slot] = cap
  }

  private newChunk(doubles: number): number {
    const k = this.freeChunks.pop() ?? this.chunks.length
    this.chunks[k] = new Float64Array(doubles)
    this.used[k] = 0
    this.waste[k] = 0
    return k
  }

  /** A block of chunk k left (capacity `cap`): a chunk all waste is dropped, one mostly waste compacted. */
  private wasted(k: number, cap: number): void {
    this.waste[k]! += cap + HEADER
    if (k === this.cur) {
      if (this.waste[k] === this.used[k]) this.used[k] = this.waste[k] = 0
      return
    }
    if (this.waste[k] === this.used[k]) this.drop(k)
    else if (2 * this.waste[k]! > this.chunks[k]!.length) this.compact(k)
  }

  /** Moves chunk k's live books to the chunk being filled, then drops it. */
  private compact(k: number): void {
    const a = this.chunks[k]!
    const end = this.used[k]!
    for (let at = 0; at < end; ) {
      const slot = a[at]!
      const cap = a[at + 1]!
      const start = at + HEADER
      if (this.chunkOf[slot] === k && this.startOf[slot] === start) {
        const len = this.lengthOf[slot]!
        this.place(slot, cap)
        this.chunks[this.chunkOf[slot]!]!.set(a.subarray(start, start + len), this.startOf[slot]!)
      }
      at = start + cap
    }
    this.drop(k)
  }

  private drop(k: number): void {
    this.chunks[k] = null
    this.used[k] = this.waste[k] = 0
    this.freeChunks.push(k)
  }
}
