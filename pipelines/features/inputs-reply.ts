/**
 * What the feature consumer's decode thread (input-worker.ts, input-thread.ts) is sent and answers,
 * apart from the worker's code, which the main thread does not load: order and customer records'
 * values in, the fields the fold reads out (engine.ts' EngineInput), in typed arrays and one array
 * of strings. Only what is certain is done here: a record whose schema this thread was not given,
 * that does not decode exactly, is of another type or breaks a rule is left to the main thread
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

export interface InputsReply {
  id: number
  kind: Uint8Array
  /** Record i's numbers at [i × STRIDE, (i + 1) × STRIDE). */
  nums: Float64Array
  /** An order's fact is a cancel. */
  cancelled: Uint8Array
  /** An order's id at 2i and its event's id at 2i + 1; a customer's email at 2i (empty: none). */
  texts: string[]
  /** Order i's currency is currencies[currencyOf[i]]. */
  currencyOf: Uint16Array
  currencies: string[]
}

