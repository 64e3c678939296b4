import type avsc from 'avsc'
import { ORDER_EVENT_TYPES } from './events.ts'
import { FUTURE_TOLERANCE_MS, MAX_QUANTITY, MAX_TIMESTAMP, MIN_TIMESTAMP } from './event-rules.ts'
import { MAX_DATETIME64_MS } from './time.ts'
import { ByteWriter } from './store/row-binary.ts'
import { AvroCursor, isCents, isLong, nullableIndex, planOf, type Typed } from './avro-cursor.ts'

/**
 * An order event read straight from its Avro bytes, for the events that certainly pass the order
 * rules: no event object, and no JS string but those asked for (`text`). The decode threads of the
 * projection (its rows, pipelines/projection/order-row-transcoder.ts) and of the feature consumer
 * (an order's fact, pipelines/features/input-worker.ts) read most events this way; avsc's decode
 * made every string of the event, its items' too, and a decimal's text.
 *
 * It is a fast path, never the judge. A record it does not take (`read` returns false) goes the way
 * every record went before: decoded by avsc, checked by orderSemanticErrors. So it takes only what
 * it can prove that way would accept, with the same values:
 * - a writer schema of exactly the contract's fields (any order, ints for longs), decimals of scale
 *   2 in bytes (otherwise no reader);
 * - strings whose bytes are valid UTF-8 (avsc would replace a broken sequence), the required ones
 *   starting with a printable ASCII character (the rules' own quick non-blank test);
 * - every order rule of event-rules.ts holding, stated here on numbers (a change to those rules needs
 *   one here: test/projection/order-row-transcoder.test.ts compares both on events broken in every field);
 * - longs within what avsc reads (±(2^53 − 2)), line sums within the safe integers, decimals of at
 *   most six bytes and 15 digits, times that DateTime64 stores as they are, and nothing after the
 *   record's last field.
 */

// The order event's fields, as codes of a writer schema's reading plan (and indexes of `num`, `start`, `len`).
export const EVENT_ID = 0
export const TENANT_ID = 1
export const OCCURRED_AT = 2
export const SOURCE = 3
export const EVENT_TYPE = 4
export const ORDER_ID = 5
export const CUSTOMER_ID = 6
export const STATUS = 7
export const TOTAL = 8
export const CURRENCY = 9
export const REFUNDED = 10
export const ITEMS = 11
export const PLACED_AT = 12
const FIELDS = ['event_id', 'tenant_id', 'occurred_at', 'source', 'event_type', 'order_id', 'customer_id', 'status', 'total', 'currency', 'refunded_amount', 'items', 'placed_at']
// An item's fields.
const SKU = 0
const NAME = 1
const QUANTITY = 2
const UNIT_PRICE = 3
const ITEM_FIELDS = ['sku', 'name', 'quantity', 'unit_price']

/** The three letters of a currency number (OrderEventReader.currency). */
export function currencyText(code: number): string {
  return String.fromCharCode(code >>> 16, (code >>> 8) & 0xff, code & 0xff)
}

const PLACED = ORDER_EVENT_TYPES.indexOf('placed')
const CREDIT_NOTE = ORDER_EVENT_TYPES.indexOf('credit_note')

/**
 * The reader of a writer schema's order events, or null when the schema is not the order
 * contract's shape or its record is not `expected` (those records take the general way).
 * `itemTuples`: the items are also written as order_events' RowBinary tuples (`itemRows`).
 */
export function orderEventReader(type: avsc.Type, expected: string, itemTuples: boolean): OrderEventReader | null {
  const t = type as Typed
  if (t.typeName !== 'record' || t.name !== expected) return null
  let symbols: Int8Array | null = null
  let refundedNull = -1
  let itemPlan: Uint8Array | null = null
  let nameNull = -1
  const plan = planOf(t, FIELDS, (code, f) => {
    switch (code) {
      case TENANT_ID:
      case OCCURRED_AT:
      case CUSTOMER_ID:
      case PLACED_AT:
        return isLong(f)
      case EVENT_TYPE:
        if (f.typeName !== 'enum') return false
        symbols = Int8Array.from(f.symbols!, (s) => ORDER_EVENT_TYPES.indexOf(s as never))
        return true
      case TOTAL:
        return isCents(f)
      case REFUNDED:
        refundedNull = nullableIndex(f, isCents)
        return refundedNull >= 0
      case ITEMS:
        itemPlan = f.typeName === 'array' && f.itemsType
          ? planOf(f.itemsType as Typed, ITEM_FIELDS, (c, it) => {
              if (c === SKU) return it.typeName === 'string'
              if (c === QUANTITY) return isLong(it)
              if (c === UNIT_PRICE) return isCents(it)
              nameNull = nullableIndex(it, (b) => b.typeName === 'string')
              return nameNull >= 0
            })
          : null
        return itemPlan !== null
      default:
        return f.typeName === 'string'
    }
  })
  return plan ? new OrderEventReader(plan, symbols!, refundedNull, itemPlan!, nameNull, itemTuples) : null
}

export class OrderEventReader extends AvroCursor {
  /** By field code: a string's start and length in `b`. */
  readonly start = new Int32Array(FIELDS.length)
  readonly len = new Int32Array(FIELDS.length)
  /**
   * By field code: the numbers read. Ids and times as they are; EVENT_TYPE an index of
   * ORDER_EVENT_TYPES; TOTAL and REFUNDED in cents (REFUNDED NaN: none); ITEMS the lines' sum in cents.
   */
  readonly num = new Float64Array(FIELDS.length)
  /** The event's item count, and (itemTuples) their order_events tuples: sku, name, quantity, unit_price. */
  itemCount = 0
  readonly itemRows = new ByteWriter(256)
  /** The event's three-letter currency as one number (currencyText turns it back into the code). */
  currency = 0

  constructor(
    private readonly plan: Uint8Array,
    private readonly symbols: Int8Array,
    private readonly refundedNull: number,
    private readonly itemPlan: Uint8Array,
    private readonly nameNull: number,
    private readonly itemTuples: boolean,
  ) {
    super()
  }

  /**
   * Reads the record framed in buf[start, end) (Confluent header included): true when it is an
   * order event every rule holds for at `now` (its fields then in num, start and len), false when
   * the general way must judge it.
   */
  read(buf: Uint8Array, start: number, end: number, now: number): boolean {
    return this.begin(buf, start, end) && this.fields() && this.p === end && this.holds(now)
  }

  /** A string field of the record read last (ORDER_ID, EVENT_ID, …) as JS text. */
  text(f: number): string {
    return this.textAt(this.start[f]!, this.len[f]!)
  }

  /** Reads the fields in the writer's order, checking what can be checked field by field. */
  private fields(): boolean {
    const { plan, num } = this
    for (let k = 0; k < plan.length; k++) {
      const f = plan[k]!
      switch (f) {
        case TENANT_ID:
        case CUSTOMER_ID:
          if (!((num[f] = this.long()) > 0)) return false // isPositiveId (a NaN fails too)
          break
        case OCCURRED_AT:
        case PLACED_AT: {
          // The rules' range, and stored as the number itself (storedTime: DateTime64's range).
          const ms = (num[f] = this.long())
          if (!(ms >= MIN_TIMESTAMP && ms <= MAX_TIMESTAMP && ms <= MAX_DATETIME64_MS)) return false
          break
        }
        case EVENT_TYPE: {
          const i = this.long()
          if (!(i >= 0 && i < this.symbols.length) || (num[f] = this.symbols[i]!) < 0) return false
          break
        }
        case TOTAL:
          if (Number.isNaN((num[f] = this.cents()))) return false
          break
        case REFUNDED: {
          const branch = this.long()
          if (branch === this.refundedNull) num[f] = NaN
          else if (branch !== 1 - this.refundedNull || Number.isNaN((num[f] = this.cents()))) return false
          break
        }
        case ITEMS:
          if (!this.items()) return false
          break
        case CURRENCY:
          if (!this.field(f, false)) return false
          break
        default: // event_id, source, order_id, status: required
          if (!this.field(f, true)) return false
      }
    }
    return true
  }

  /** The order rules that span fields (those of single fields were checked as they were read). */
  private holds(now: number): boolean {
    const { num, start, len, b } = this
    // Currency: three capital letters.
    if (len[CURRENCY] !== 3) return false
    const c = start[CURRENCY]!
    for (let i = c; i < c + 3; i++) if (b[i]! < 65 || b[i]! > 90) return false
    this.currency = (b[c]! << 16) | (b[c + 1]! << 8) | b[c + 2]!
    const type = num[EVENT_TYPE]!
    const credit = type === CREDIT_NOTE
    const total = num[TOTAL]!
    // A credit note's total is negative, any other event's not.
    if (credit ? total >= 0 : total < 0) return false
    const refunded = num[REFUNDED]!
    if (!Number.isNaN(refunded) && (refunded < 0 || (credit && refunded > 0) || (type === PLACED && refunded > total))) return false
    // The items of a placed order add up to its total (this.items kept their sum, safe, in ITEMS).
    if (type === PLACED && this.itemCount > 0 && num[ITEMS] !== total) return false
    const occurred = num[OCCURRED_AT]!
    return occurred <= now + FUTURE_TOLERANCE_MS && num[PLACED_AT]! <= occurred
  }

  /**
   * Reads the items (every block), checking each, and (itemTuples) writes their tuples to
   * `itemRows`; their lines' sum goes to num[ITEMS], a safe integer.
   */
  private items(): boolean {
    const rows = this.itemRows
    const tuples = this.itemTuples
    rows.pos = 0
    let count = 0
    let sum = 0
    for (let n = this.blockCount(); n !== 0; n = this.blockCount()) {
      if (Number.isNaN(n)) return false
      count += n
      for (; n > 0; n--) {
        let sku = 0
        let skuLen = 0
        let name = -1
        let nameLen = 0
        let quantity = NaN
        let price = NaN
        for (let k = 0; k < this.itemPlan.length; k++) {
          switch (this.itemPlan[k]!) {
            case SKU:
              if (!this.readText(true, true)) return false
              sku = this.textStart
              skuLen = this.textLen
              break
            case NAME: {
              const branch = this.long()
              if (branch === 1 - this.nameNull) {
                if (!this.readText(false, true)) return false
                name = this.textStart
                nameLen = this.textLen
              } else if (branch !== this.nameNull) return false
              break
            }
            case QUANTITY:
              quantity = this.long()
              if (!(quantity > 0 && quantity <= MAX_QUANTITY)) return false
              break
            default:
              if (Number.isNaN((price = this.cents()))) return false
          }
        }
        const line = quantity * price
        sum += line
        if (!Number.isSafeInteger(line) || !Number.isSafeInteger(sum)) return false
        if (!tuples) continue
        // The tuple, in its order: sku, name, quantity, unit_price.
        this.bytes(rows, sku, skuLen)
        if (name < 0) rows.u8(1)
        else {
          rows.u8(0)
          this.bytes(rows, name, nameLen)
        }
        rows.int(quantity, 4)
        rows.int64(price)
      }
    }
    this.itemCount = count
    this.num[ITEMS] = sum
    return true
  }

  /** A string of valid UTF-8 (readText), kept as field `f`'s. */
  private field(f: number, required: boolean): boolean {
    if (!this.readText(required, true)) return false
    this.start[f] = this.textStart
    this.len[f] = this.textLen
    return true
  }
}
