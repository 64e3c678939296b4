import { isUtf8 } from 'node:buffer'
import type avsc from 'avsc'
import { ORDER_EVENT_TYPES } from './events.ts'
import { FUTURE_TOLERANCE_MS, MAX_QUANTITY, MAX_TIMESTAMP, MIN_TIMESTAMP } from './event-rules.ts'
import { MAX_DATETIME64_MS } from './time.ts'
import { ByteWriter } from './store/row-binary.ts'

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

/** The largest long avsc reads (its isSafeLong). */
const AVSC_MAX_LONG = 2 ** 53 - 2
/** Decimal(15, 2): the rules' precision (unitsWithin(…, 2, 15)). */
const MAX_UNITS = 1e15
const PLACED = ORDER_EVENT_TYPES.indexOf('placed')
const CREDIT_NOTE = ORDER_EVENT_TYPES.indexOf('credit_note')

type Field = { name: string; type: avsc.Type }
type Typed = avsc.Type & { fields?: Field[]; symbols?: string[]; types?: avsc.Type[]; itemsType?: avsc.Type; scale?: number; underlyingType?: avsc.Type; name?: string }

const isLong = (t: Typed) => t.typeName === 'long' || t.typeName === 'int'
const isCents = (t: Typed) => t.typeName === 'logical:decimal' && t.scale === 2 && t.underlyingType?.typeName === 'bytes'
/** The index of the null branch of a two-branch union whose other branch passes `other`, or -1. */
function nullableIndex(t: Typed, other: (t: Typed) => boolean): number {
  const types = (t.typeName === 'union:unwrapped' ? t.types : undefined) as Typed[] | undefined
  if (!types || types.length !== 2) return -1
  const k = types.findIndex((b) => b.typeName === 'null')
  return k >= 0 && other(types[1 - k]!) ? k : -1
}

/** A record's fields as plan codes (by name among `names`, each once), or null. */
function planOf(t: Typed, names: readonly string[], accepts: (code: number, t: Typed) => boolean): Uint8Array | null {
  const fields = t.typeName === 'record' ? t.fields : undefined
  if (!fields || fields.length !== names.length) return null
  const codes = fields.map((f) => names.indexOf(f.name))
  if (new Set(codes).size !== names.length || codes.some((c, k) => c < 0 || !accepts(c, fields[k]!.type as Typed))) return null
  return Uint8Array.from(codes)
}

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

export class OrderEventReader {
  // The record read last: its bytes, the read position, its end.
  b: Uint8Array = new Uint8Array(0)
  private p = 0
  private end = 0
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
  /** The last text read (readText()). */
  private textStart = 0
  private textLen = 0

  constructor(
    private readonly plan: Uint8Array,
    private readonly symbols: Int8Array,
    private readonly refundedNull: number,
    private readonly itemPlan: Uint8Array,
    private readonly nameNull: number,
    private readonly itemTuples: boolean,
  ) {}

  /**
   * Reads the record framed in buf[start, end) (Confluent header included): true when it is an
   * order event every rule holds for at `now` (its fields then in num, start and len), false when
   * the general way must judge it.
   */
  read(buf: Uint8Array, start: number, end: number, now: number): boolean {
    if (end - start < 5 || buf[start] !== 0) return false
    this.b = buf
    this.p = start + 5
    this.end = end
    return this.fields() && this.p === end && this.holds(now)
  }

  /** A string field of the record read last (ORDER_ID, EVENT_ID, …) as JS text. */
  text(f: number): string {
    const s = this.start[f]!
    const n = this.len[f]!
    const b = this.b
    let i = s
    while (i < s + n && b[i]! < 0x80) i++
    const buf = b instanceof Buffer ? b : Buffer.from(b.buffer, b.byteOffset, b.length)
    return buf.toString(i === s + n ? 'latin1' : 'utf8', s, s + n)
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
          if (!this.readText(f, false)) return false
          break
        default: // event_id, source, order_id, status: required
          if (!this.readText(f, true)) return false
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
    for (let n = this.long(); n !== 0; n = this.long()) {
      if (!Number.isSafeInteger(n)) return false
      if (n < 0) {
        n = -n
        if (Number.isNaN(this.long())) return false // the block's size in bytes
      }
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
              if (!this.readText(-1, true)) return false
              sku = this.textStart
              skuLen = this.textLen
              break
            case NAME: {
              const branch = this.long()
              if (branch === 1 - this.nameNull) {
                if (!this.readText(-1, false)) return false
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

  /**
   * A string of valid UTF-8 within the record; its start and length kept as field `f`'s (not for
   * -1), and as the last text's. A required one starts with a printable ASCII character.
   */
  private readText(f: number, required: boolean): boolean {
    const n = this.long()
    const s = this.p
    if (!(n >= 0 && s + n <= this.end)) return false
    const b = this.b
    if (required && !(n > 0 && b[s]! > 32 && b[s]! < 127)) return false
    let i = s
    while (i < s + n && b[i]! < 0x80) i++
    if (i < s + n && !isUtf8(b.subarray(s, s + n))) return false
    if (f >= 0) {
      this.start[f] = s
      this.len[f] = n
    }
    this.textStart = s
    this.textLen = n
    this.p = s + n
    return true
  }

  /** A decimal of scale 2 as its cents, within 15 digits and six bytes; NaN when not. */
  private cents(): number {
    const n = this.long()
    const s = this.p
    if (!(n >= 0 && n <= 6 && s + n <= this.end)) return NaN
    this.p = s + n
    if (n === 0) return 0
    const b = this.b
    let v = (b[s]! << 24) >> 24
    for (let i = s + 1; i < s + n; i++) v = v * 256 + b[i]!
    return Math.abs(v) < MAX_UNITS ? v : NaN
  }

  /**
   * A zig-zag varint (Avro int or long) within the record; NaN beyond what avsc reads. Read as a
   * double: exact for every safe value (a positive one's zig-zag form is even, below 2^54).
   */
  private long(): number {
    const b = this.b
    const first = this.p
    let p = first
    let n = 0
    let m = 1
    let x: number
    do {
      if (p >= this.end || m > 2 ** 56) return NaN
      x = b[p++]!
      n += (x & 0x7f) * m
      m *= 128
    } while (x & 0x80)
    this.p = p
    const odd = b[first]! & 1
    if (n >= 2 ** 54 || (odd && n > Number.MAX_SAFE_INTEGER)) return NaN
    const v = odd ? -(n + 1) / 2 : n / 2
    // avsc refuses a long beyond ±(2^53 - 2) ("potential precision loss"): so does this.
    return v >= -AVSC_MAX_LONG && v <= AVSC_MAX_LONG ? v : NaN
  }

  /** A RowBinary String to `w`: its length as a varint, then the record's bytes b[s, s + n). */
  bytes(w: ByteWriter, s: number, n: number): void {
    w.varint(n)
    w.ensure(n)
    const buf = w.buf
    const b = this.b
    if (n < 32) for (let i = 0; i < n; i++) buf[w.pos + i] = b[s + i]!
    else buf.set(b.subarray(s, s + n), w.pos)
    w.pos += n
  }
}
