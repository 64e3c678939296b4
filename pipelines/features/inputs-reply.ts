/**
 * What the feature consumer's decode thread (input-worker.ts, input-thread.ts) is sent and answers,
 * apart from the worker's code, which the main thread does not load: order and customer records'
 * values in, the fields the fold reads out (engine.ts' EngineInput), in typed arrays and one
 * string. Only what is certain is done here: a record whose schema this thread was not given, that
 * does not decode exactly, is of another type or breaks a rule is left to the main thread
 * (`kind` 0), which decodes it again and says why. The currency check needs the store: the main
 * thread does it, from each order's tenant and currency.
 *
 * Sent with a thread's first job: the record type each input topic carries.
 */
export interface InputsSetup {
  orders: string
  customers: string
}

/** What record i is in a reply: left to the main thread, an order, a customer. */
export const LEFT = 0
export const ORDER = 1
export const CUSTOMER = 2

/** Numbers a record: tenant, customer, occurred_at; an order's fact: version, placed_at, cents, and its order key (order-book.ts). */
export const STRIDE = 7

/** Texts end to end in one string: text j ends at textEnds[j] and starts where text j - 1 ends (replyText reads one). */
export interface JoinedTexts {
  text: string
  textEnds: Uint32Array
}

export interface InputsReply extends JoinedTexts {
  id: number
  kind: Uint8Array
  /** Record i's numbers at [i × STRIDE, (i + 1) × STRIDE). */
  nums: Float64Array
  /** An order's fact is a cancel. */
  cancelled: Uint8Array
  // Its texts (JoinedTexts): an order's id is text 2i and its event's id 2i + 1; a customer's email
  // is text 2i (empty: none). One string a batch, not two a record: a batch waits its turn for a
  // second or more, so the strings it holds outlive the young generation and are copied and
  // promoted with it (docs/analytics-performance.md, "Streaming", stop 50).
  /** Order i's currency is currencies[currencyOf[i]]. */
  currencyOf: Uint16Array
  currencies: string[]
}

/** Text j of a reply (InputsReply.text), or of other joined texts: a slice of the string, which V8 makes a view of it. */
export function replyText(r: JoinedTexts, j: number): string {
  return r.text.slice(j === 0 ? 0 : r.textEnds[j - 1]!, r.textEnds[j]!)
}

/** The reply's `text` and `textEnds` from its texts in order. */
export function joinTexts(texts: readonly string[]): JoinedTexts {
  const textEnds = new Uint32Array(texts.length)
  let end = 0
  for (let j = 0; j < texts.length; j++) textEnds[j] = end += texts[j]!.length
  return { text: texts.join(''), textEnds }
}
