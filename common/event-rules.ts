/**
 * The rules every order and customer event obeys, on finished events (the Avro contract's
 * values): what the ingest API checks before it publishes, and what every consumer checks again on
 * what it reads (other producers write to the topics too), on its decode thread as well. Written
 * defensively: they check formats too, not only cross-field rules. Pure, and free of the input
 * parsing (zod) and the runtime, so that a decode thread loads them in a few milliseconds.
 */
import { DecimalError, fromCents, normaliseDecimal, toCents, unitsWithin } from './decimal.ts'
import { ORDER_EVENT_TYPES, type CustomerUpserted, type EventHeader, type OrderEvent } from './events.ts'

export interface FieldError {
  /** Dotted path of the offending field, e.g. "items.0.unit_price"; "" for the record itself. */
  path: string
  /** Machine-readable: zod's (invalid_type, too_small, too_big, ...), "required", or a rule code. */
  code: string
  message: string
}

/** Clock skew we tolerate between a source and us before calling a timestamp "in the future". */
export const FUTURE_TOLERANCE_MS = 5 * 60_000
/** Earliest accepted timestamp. Mostly catches epoch *seconds* sent as ms (they land in 1970). */
export const MIN_TIMESTAMP = Date.UTC(1990, 0, 1)
export const MAX_TIMESTAMP = Date.UTC(9999, 11, 31, 23, 59, 59, 999)
export const MAX_EMAIL_LENGTH = 255
/** Avro `int` bound of OrderItem.quantity. */
export const MAX_QUANTITY = 2_147_483_647


/** A field's problem: its machine-readable code and message (the import's field parsers throw it too). */
export class FieldIssue extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}


export function typeName(v: unknown): string {
  return Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v
}


// Deliberately loose ("looks like an email"): strict RFC 5322 checks reject real addresses.
const EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/

export function emailIssue(s: string): FieldIssue | null {
  if (s.length > MAX_EMAIL_LENGTH) return new FieldIssue('too_big', `must be at most ${MAX_EMAIL_LENGTH} characters`)
  if (!EMAIL.test(s)) return new FieldIssue('invalid_email', `"${s}" does not look like an email address`)
  return null
}


function isPositiveId(n: unknown): boolean {
  return Number.isSafeInteger(n) && (n as number) > 0
}

function isNonBlankString(s: unknown): boolean {
  if (typeof s !== 'string') return false
  const c = s.charCodeAt(0) // a printable ASCII first character decides without trimming a copy
  return (c > 32 && c < 127) || s.trim() !== ''
}

function headerErrors(e: EventHeader, errors: FieldError[]): void {
  if (!isNonBlankString(e.event_id)) errors.push({ path: 'event_id', code: 'required', message: 'is required' })
  if (!isPositiveId(e.tenant_id)) errors.push({ path: 'tenant_id', code: 'invalid_id', message: 'must be a positive integer' })
  if (!isNonBlankString(e.source)) errors.push({ path: 'source', code: 'required', message: 'is required' })
  timestampErrors(e.occurred_at, 'occurred_at', errors)
}

function timestampErrors(t: unknown, path: string, errors: FieldError[]): boolean {
  const ok = Number.isSafeInteger(t) && (t as number) >= MIN_TIMESTAMP && (t as number) <= MAX_TIMESTAMP
  if (!ok) errors.push({ path, code: 'invalid_timestamp', message: `${String(t)} is not epoch ms within 1990..9999` })
  return ok
}

/**
 * Cents of a decimal(15,2) string, or undefined (with an error recorded at `path`, or at
 * `items.<item>.<path>` for an item's field) when malformed. Every valid amount is a safe integer
 * of cents; plain text is read by character codes (unitsWithin), the rest by normaliseDecimal.
 */
function centsOf(s: unknown, path: string, errors: FieldError[], item = -1): number | undefined {
  const fast = typeof s === 'string' ? unitsWithin(s, 2, 15) : null
  if (fast !== null) return fast
  try {
    if (typeof s !== 'string') throw new DecimalError('invalid_decimal', `expected a decimal string, got ${typeName(s)}`)
    normaliseDecimal(s) // precision / scale check
    return Number(toCents(s))
  } catch (err) {
    if (!(err instanceof DecimalError)) throw err
    errors.push({ path: item < 0 ? path : `items.${item}.${path}`, code: err.code, message: err.message })
    return undefined
  }
}

/** What the items of a placed order add up to, in cents: exact, as a bigint once a sum leaves the safe integers. */
function itemsCents(items: OrderEvent['items']): bigint {
  let sum = 0n
  for (const item of items) sum += BigInt(item.quantity) * toCents(item.unit_price)
  return sum
}

export function orderSemanticErrors(e: OrderEvent, now: number): FieldError[] {
  const errors: FieldError[] = []
  headerErrors(e, errors)
  if (!ORDER_EVENT_TYPES.includes(e.event_type)) {
    errors.push({ path: 'event_type', code: 'invalid_value', message: `expected one of ${ORDER_EVENT_TYPES.join(', ')}` })
  }
  if (!isNonBlankString(e.order_id)) errors.push({ path: 'order_id', code: 'required', message: 'is required' })
  if (!isPositiveId(e.customer_id)) errors.push({ path: 'customer_id', code: 'invalid_id', message: 'must be a positive integer' })
  if (!isNonBlankString(e.status)) errors.push({ path: 'status', code: 'required', message: 'is required' })
  if (typeof e.currency !== 'string' || !/^[A-Z]{3}$/.test(e.currency)) {
    errors.push({ path: 'currency', code: 'invalid_currency', message: 'expected a 3-letter ISO 4217 code' })
  }

  const total = centsOf(e.total, 'total', errors)
  const credit = e.event_type === 'credit_note'
  if (total !== undefined && total < 0 && !credit) {
    errors.push({ path: 'total', code: 'negative_total', message: `total ${e.total} is negative (a credit note not tied to an order is event_type credit_note)` })
  }
  if (total !== undefined && total >= 0 && credit) {
    errors.push({ path: 'total', code: 'invalid_credit_note', message: `a credit note's total is the negative amount credited, got ${e.total}` })
  }
  // `total` is the order total after the event, so a full refund has total 0 and a refunded
  // amount equal to the original total: the refund can exceed the remaining total, but never
  // what was paid. On a placed order, what was paid is its total; on later events the ingest
  // API checks it against the order's placed total when it knows it (refundErrors).
  if (e.refunded_amount !== null) {
    const refunded = centsOf(e.refunded_amount, 'refunded_amount', errors)
    if (refunded !== undefined && refunded < 0) {
      errors.push({ path: 'refunded_amount', code: 'invalid_refund', message: `refunded_amount ${e.refunded_amount} is negative` })
    } else if (refunded !== undefined && credit && refunded > 0) {
      errors.push({ path: 'refunded_amount', code: 'invalid_refund', message: 'a credit note has no refunded_amount: its total is the amount credited' })
    } else if (refunded !== undefined && total !== undefined && e.event_type === 'placed' && refunded > total) {
      errors.push({ path: 'refunded_amount', code: 'invalid_refund', message: `refunded_amount ${e.refunded_amount} exceeds the order total ${e.total}: more than was paid` })
    }
  }

  // Items must add up to the total of a placed order (exactly, in cents). Later events may carry
  // a changed total (partial cancellation, fees) with the original items, so only `placed`.
  // Paths are built only for an error: this runs for every item of every event consumed.
  const items = e.items
  let sum: number | undefined = 0
  let rounded = false // a line's product or a partial sum left the safe integers
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!
    if (!isNonBlankString(item.sku)) errors.push({ path: `items.${i}.sku`, code: 'required', message: 'is required' })
    const qtyOk = Number.isInteger(item.quantity) && item.quantity > 0 && item.quantity <= MAX_QUANTITY
    if (!qtyOk) {
      errors.push({ path: `items.${i}.quantity`, code: 'invalid_quantity', message: `quantity must be a positive integer, got ${item.quantity}` })
    }
    const price = centsOf(item.unit_price, 'unit_price', errors, i)
    // One bad item makes the sum unknowable; its own error is enough.
    const line = qtyOk && price !== undefined ? item.quantity * price : undefined
    sum = line !== undefined && sum !== undefined ? sum + line : undefined
    if (sum !== undefined && !(Number.isSafeInteger(line) && Number.isSafeInteger(sum))) rounded = true
  }
  if (e.event_type === 'placed' && items.length > 0 && sum !== undefined && total !== undefined) {
    // A sum that passed 2^53 may be rounded: then it is added up again exactly.
    const exact = rounded ? itemsCents(items) : null
    if (exact !== null ? exact !== BigInt(total) : sum !== total) {
      errors.push({ path: 'items', code: 'items_total_mismatch', message: `items add up to ${fromCents(exact ?? BigInt(sum))} but total is ${e.total}` })
    }
  }

  if (Number.isSafeInteger(e.occurred_at) && e.occurred_at > now + FUTURE_TOLERANCE_MS) {
    errors.push({
      path: 'occurred_at',
      code: 'future_timestamp',
      message: `occurred_at ${new Date(e.occurred_at).toISOString()} is more than 5 minutes in the future`,
    })
  }
  if (timestampErrors(e.placed_at, 'placed_at', errors) && e.placed_at > e.occurred_at) {
    errors.push({ path: 'placed_at', code: 'invalid_timestamps', message: 'placed_at is after occurred_at' })
  }
  return errors
}

/**
 * A refund never exceeds what was paid: the order's `placed` total, from the same batch or as
 * stored (`paid`, keyed `tenant:order_id`). An order whose placement we have not seen is not
 * judged. Returns the errors by event index.
 */
export function refundErrors(events: readonly OrderEvent[], paid: ReadonlyMap<string, bigint>): { index: number; error: FieldError }[] {
  const placed = new Map(paid)
  for (const e of events) if (e.event_type === 'placed') placed.set(`${e.tenant_id}:${e.order_id}`, toCents(e.total))
  const out: { index: number; error: FieldError }[] = []
  events.forEach((e, index) => {
    if (e.refunded_amount === null || e.event_type === 'placed' || e.event_type === 'credit_note') return
    const total = placed.get(`${e.tenant_id}:${e.order_id}`)
    if (total !== undefined && toCents(e.refunded_amount) > total) {
      out.push({ index, error: { path: 'refunded_amount', code: 'invalid_refund', message: `refunded_amount ${e.refunded_amount} exceeds what was paid for order ${e.order_id} (${fromCents(total)})` } })
    }
  })
  return out
}

export function customerSemanticErrors(e: CustomerUpserted): FieldError[] {
  const errors: FieldError[] = []
  headerErrors(e, errors)
  if (!isPositiveId(e.customer_id)) errors.push({ path: 'customer_id', code: 'invalid_id', message: 'must be a positive integer' })
  if (e.email !== null) {
    const issue = typeof e.email === 'string' ? emailIssue(e.email) : new FieldIssue('invalid_email', 'not a string')
    if (issue) errors.push({ path: 'email', code: issue.code, message: issue.message })
  }
  if (e.country !== null && !/^[A-Z]{2}$/.test(e.country)) {
    errors.push({ path: 'country', code: 'invalid_country', message: 'expected a 2-letter ISO 3166-1 code' })
  }
  if (e.created_at !== null) timestampErrors(e.created_at, 'created_at', errors)
  e.source_ids.forEach((sid, i) => {
    if (!isNonBlankString(sid.source)) errors.push({ path: `source_ids.${i}.source`, code: 'required', message: 'is required' })
    if (!isNonBlankString(sid.id)) errors.push({ path: `source_ids.${i}.id`, code: 'required', message: 'is required' })
  })
  return errors
}
