import type avsc from 'avsc'
import { ORDER_EVENT_TYPES } from '../../common/events.ts'
import { CURRENCY, EVENT_ID, EVENT_TYPE, OCCURRED_AT, ORDER_ID, orderEventReader, PLACED_AT, REFUNDED, SOURCE, STATUS, TENANT_ID, TOTAL, CUSTOMER_ID, type OrderEventReader } from '../../common/order-event-reader.ts'
import type { ByteWriter } from '../../common/store/row-binary.ts'
import { ORDER_EVENT_COLUMNS } from './rows.ts'

/**
 * An order event's Avro bytes straight into its `order_events` RowBinary row, for the events that
 * certainly pass the order rules (common/order-event-reader.ts): no event object, no JS string, no
 * decimal text. The projection's decode thread (order-rows-worker.ts) spent about 3.3 µs an event
 * decoding each with avsc, checking it and encoding its row; this takes about 1.5 µs
 * (docs/analytics-performance.md, "Ingest").
 *
 * It is a fast path, never the judge: a record it does not take (`row` returns false, having written
 * nothing) goes the way every record went before: decoded by avsc, checked by orderSemanticErrors,
 * its row encoded from the event. Besides what the reader proves, it needs the table's column types
 * as migration 001 made them (otherwise no transcoder), so that the row is byte for byte the same.
 */
export interface OrderRowTranscoder {
  /**
   * Writes the row of the record framed in buf[start, end) (Confluent header included) and returns
   * true; or writes nothing and returns false. After true, `tenant` and `currency` are the event's.
   */
  row(w: ByteWriter, buf: Uint8Array, start: number, end: number, now: number): boolean
  readonly tenant: number
  /** The event's three-letter currency as one number (currencyText turns it back into the code). */
  readonly currency: number
}

export { currencyText } from '../../common/order-event-reader.ts'

/** The columns `row` writes, in its order: ORDER_EVENT_COLUMNS', or it makes no transcoder. */
const WRITES = ['tenant_id', 'customer_id', 'order_id', 'event_id', 'event_type', 'status', 'total', 'refunded_amount', 'currency', 'items', 'placed_at', 'occurred_at', 'source']
const WRITES_ORDER_EVENT_COLUMNS = WRITES.length === ORDER_EVENT_COLUMNS.length && WRITES.every((c, k) => c === ORDER_EVENT_COLUMNS[k])

/** order_events' column types (schemas/clickhouse/001), in ORDER_EVENT_COLUMNS' order, as system.columns names them. */
export const ORDER_EVENT_COLUMN_TYPES = [
  'UInt64',
  'UInt64',
  'String',
  'String',
  'LowCardinality(String)',
  'LowCardinality(String)',
  'Decimal(15, 2)',
  'Nullable(Decimal(15, 2))',
  'LowCardinality(String)',
  'Array(Tuple(sku String, name Nullable(String), quantity UInt32, unit_price Decimal(15, 2)))',
  "DateTime64(3, 'UTC')",
  "DateTime64(3, 'UTC')",
  'LowCardinality(String)',
] as const

/**
 * The transcoder of a writer schema's order events into rows of columns of `columnTypes`, or null
 * when the schema is not the order contract's shape, its record is not `expected`, or the columns
 * are not order_events' (those records take the general way).
 */
export function orderRowTranscoder(type: avsc.Type, expected: string, columnTypes: readonly string[]): OrderRowTranscoder | null {
  if (!WRITES_ORDER_EVENT_COLUMNS) return null
  if (columnTypes.length !== ORDER_EVENT_COLUMN_TYPES.length || columnTypes.some((c, k) => c !== ORDER_EVENT_COLUMN_TYPES[k])) return null
  const reader = orderEventReader(type, expected, true)
  return reader ? new Transcoder(reader) : null
}

const SYMBOLS = ORDER_EVENT_TYPES.map((s) => Buffer.from(s, 'latin1'))

class Transcoder implements OrderRowTranscoder {
  constructor(private readonly r: OrderEventReader) {}

  get tenant(): number {
    return this.r.num[TENANT_ID]!
  }

  get currency(): number {
    return this.r.currency
  }

  row(w: ByteWriter, buf: Uint8Array, start: number, end: number, now: number): boolean {
    if (!this.r.read(buf, start, end, now)) return false
    this.write(w)
    return true
  }

  /** The row, in ORDER_EVENT_COLUMNS' order, from what read() kept. */
  private write(w: ByteWriter): void {
    const { num, itemRows: items, itemCount } = this.r
    w.int64(num[TENANT_ID]!)
    w.int64(num[CUSTOMER_ID]!)
    this.string(w, ORDER_ID)
    this.string(w, EVENT_ID)
    const symbol = SYMBOLS[num[EVENT_TYPE]!]!
    w.ensure(symbol.length + 1)
    w.buf[w.pos++] = symbol.length
    w.buf.set(symbol, w.pos)
    w.pos += symbol.length
    this.string(w, STATUS)
    w.int64(num[TOTAL]!)
    const refunded = num[REFUNDED]!
    if (Number.isNaN(refunded)) w.u8(1)
    else {
      w.u8(0)
      w.int64(refunded)
    }
    this.string(w, CURRENCY)
    w.varint(itemCount)
    w.ensure(items.pos)
    w.buf.set(items.buf.subarray(0, items.pos), w.pos)
    w.pos += items.pos
    w.int64(num[PLACED_AT]!)
    w.int64(num[OCCURRED_AT]!)
    this.string(w, SOURCE)
  }

  private string(w: ByteWriter, f: number): void {
    this.r.bytes(w, this.r.start[f]!, this.r.len[f]!)
  
  }
}
