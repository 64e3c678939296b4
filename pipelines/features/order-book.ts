import { hash53 } from '../../common/hash53.ts'
import { newer, type CountedFact, type CountedOrders, type OrderFact } from './order-facts.ts'

/**
 * One customer's order facts as the feature consumer holds them (pure): four numbers an order in
 * one plain array, which V8 keeps as unboxed doubles,
 *
 *     [order key, version, placed_at × 2 + cancelled, cents, …]
 *
 * About 32 bytes an order, where a Map of fact objects keyed by the order id took about 150
 * (docs/features.md, "State in memory"). The merge rule is order-facts.ts' `newer`, which reads
 * nothing else: the event id only labels the stored fact.
 *
 * The order key is a 53-bit hash of the order id (cyrb53, common/hash53.ts). Two orders of one customer share a key
 * with probability n² / 2^54 for n orders: for ten million orders spread over a million customers,
 * about 5 × 10^-9 that any customer has such a pair in the whole data set.
 */
export type OrderBook = number[]

const STRIDE = 4

/** Numbers an order takes in a book. */
export const BOOK_STRIDE = STRIDE

/** The order id's 53-bit hash (common/hash53.ts). */
export const orderKey = (orderId: string): number => hash53(orderId)

export const emptyBook = (): OrderBook => []

export const bookSize = (book: OrderBook): number => book.length / STRIDE

/** Adds an order the book does not hold yet (a restore: the store gives one fact an order). */
export function bookAppend(book: OrderBook, key: number, f: Omit<OrderFact, 'eventId'>): void {
  book.push(key, f.version, stampOf(f), f.cents)
}

/** placed_at × 2 + cancelled: both in one exact double (placement times stay far below 2^52 ms). */
const stampOf = (f: CountedFact): number => f.placedAt * 2 + (f.cancelled ? 1 : 0)

/** Folds one order's fact in; returns whether the book changed. */
export function bookMerge(book: OrderBook, key: number, f: OrderFact): boolean {
  const merged = mergeHeld(book, 0, book.length, key, f)
  if (merged !== null) return merged
  bookAppend(book, key, f)
  return true
}

/**
 * Folds a fact into the order book[from, to) holds with its key: whether it changed, or null when
 * the range holds no such order (the caller appends it where its book grows).
 */
export function mergeHeld(book: { [i: number]: number; length: number }, from: number, to: number, key: number, f: Omit<OrderFact, 'eventId'>): boolean | null {
  const i = findOrder(book, from, to, key)
  if (i < 0) return null
  if (!newer(factAt(book, i), f)) return false
  writeOrder(book, i, key, f)
  return true
}

/** Where the order with this key is in book[from, to) (a book, or a range of an arena: book-arena.ts), or -1. */
function findOrder(book: ArrayLike<number>, from: number, to: number, key: number): number {
  for (let i = from; i < to; i += STRIDE) if (book[i] === key) return i
  return -1
}

/** Writes an order's fact at i. */
export function writeOrder(book: { [i: number]: number }, i: number, key: number, f: Omit<OrderFact, 'eventId'>): void {
  book[i] = key
  book[i + 1] = f.version
  book[i + 2] = stampOf(f)
  book[i + 3] = f.cents
}

/** The fact of the order at i, as newer() compares it. */
function factAt(book: ArrayLike<number>, i: number): Omit<OrderFact, 'eventId'> {
  const stamp = book[i + 2]!
  return { version: book[i + 1]!, placedAt: Math.floor(stamp / 2), cancelled: stamp % 2 === 1, cents: book[i + 3]! }
}

/** Adds the orders of book[from, to) to `into` (the feature consumer's write: no object an order). */
export function gatherBook(book: ArrayLike<number>, into: CountedOrders, from = 0, to = book.length): void {
  for (let i = from; i < to; i += STRIDE) {
    const stamp = book[i + 2]!
    into.add(Math.floor(stamp / 2), book[i + 3]!, stamp % 2 === 1)
  }
}

/** The book's facts, for aggregate() and orderHistory(). */
export function* bookFacts(book: OrderBook): Iterable<CountedFact> {
  for (let i = 0; i < book.length; i += STRIDE) {
    const stamp = book[i + 2]!
    yield { placedAt: Math.floor(stamp / 2), cancelled: stamp % 2 === 1, cents: book[i + 3]! }
  }
}

/** Same orders in the same states, in any order. */
export function sameBook(a: OrderBook | undefined, b: OrderBook): boolean {
  if (!a || a.length !== b.length) return false
  const at = new Map<number, number>()
  for (let i = 0; i < a.length; i += STRIDE) at.set(a[i]!, i)
  for (let i = 0; i < b.length; i += STRIDE) {
    const j = at.get(b[i]!)
    if (j === undefined || a[j + 1] !== b[i + 1] || a[j + 2] !== b[i + 2] || a[j + 3] !== b[i + 3]) return false
  }
  return true
}

/**
 * Builds the books of a restore, which gives a customer's facts together: each is collected in
 * one reused array and handed over at its exact size. Pushing into each book instead left its
 * outgrown copies and its spare capacity on the old generation's pages (a third of the heap's
 * committed memory after a million customers were restored).
 */
export class BookBuilder {
  private readonly buf: number[] = []
  private n = 0

  add(key: number, f: Omit<OrderFact, 'eventId'>): void {
    const b = this.buf
    let n = this.n
    b[n++] = key
    b[n++] = f.version
    b[n++] = stampOf(f)
    b[n++] = f.cents
    this.n = n
  }

  /** The facts added since the last call, as a book of their size. */
  take(): OrderBook {
    const book = this.buf.slice(0, this.n)
    this.n = 0
    return book
  }

  /** Doubles added since the last take. */
  get size(): number {
    return this.n
  }

  /** Copies the facts added since the last take to `into` at `at`, and starts afresh. */
  takeInto(into: Float64Array, at: number): void {
    const b = this.buf
    for (let i = 0; i < this.n; i++) into[at + i] = b[i]!
    this.n = 0
  }
}
