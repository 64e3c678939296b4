import type avsc from 'avsc'
import type { OrderEvent } from '../../common/events.ts'
import { Currencies, serveDecodeJobs, ThreadSchemas, type DecodeJob } from '../../common/runtime/decode-thread-worker.ts'
import { ByteWriter, encoderFor, RowEncoder } from '../../common/store/row-binary.ts'
import { orderSemanticErrors } from '../../common/event-rules.ts'
import { orderEventValues } from './rows.ts'
import { orderRowTranscoder, type OrderRowTranscoder } from './order-row-transcoder.ts'

/**
 * The decode thread of the projection (order-rows.ts): order records' values in, their
 * `order_events` rows out as one RowBinary body. A record its writer schema's transcoder takes
 * (order-row-transcoder.ts) goes from its Avro bytes to its row without being decoded; the others
 * are decoded by avsc and checked here. Only what is certain is done here: a record whose
 * schema this thread was not given, that does not decode exactly, is of another type, breaks an
 * order rule or has a value RowBinary does not take is left to the main thread (`handled` 0),
 * which decodes it again and says why. The currency check needs the store: the main thread does
 * it, from each row's tenant and currency.
 *
 * Sent with a thread's first job: the row's column types and the record type the orders topic carries.
 */
export interface OrderRowsSetup {
  types: string[]
  expected: string
}

export interface OrderRowsReply {
  id: number
  /** The rows of the handled records, one after another; record i's ends at rowEnds[i] (empty when not handled). */
  body: Uint8Array
  rowEnds: Int32Array
  /** 1: record i's row is in body; 0: left to the main thread. */
  handled: Uint8Array
  tenants: Float64Array
  /** Record i's currency is currencies[currencyOf[i]]. */
  currencyOf: Uint16Array
  currencies: string[]
}

interface Setup {
  rows: RowEncoder
  expected: string
  types: string[]
}

export class OrderRowsDecoder {
  private setup: Setup | null = null
  private readonly schemas = new ThreadSchemas()
  /** By writer schema id: its transcoder, or null where it has none (order-row-transcoder.ts). */
  private readonly transcoders = new Map<number, OrderRowTranscoder | null>()

  /** `transcode` false: every record is decoded by avsc (the tests' reference). */
  constructor(private readonly transcode = true) {}

  /** The job's rows; pure apart from the schemas and setup it keeps for the next jobs. */
  rows(job: DecodeJob<OrderRowsSetup>): OrderRowsReply {
    if (job.setup) {
      this.setup = { rows: new RowEncoder(job.setup.types.map(encoderFor)), expected: job.setup.expected, types: job.setup.types }
      this.transcoders.clear()
    }
    this.schemas.add(job.schemas)
    const setup = this.setup
    if (!setup) throw new Error('no setup sent to the order rows thread')
    const n = job.ends.length
    const w = new ByteWriter(Math.max(1 << 16, job.values.length * 2))
    const rowEnds = new Int32Array(n)
    const handled = new Uint8Array(n)
    const tenants = new Float64Array(n)
    const currencyOf = new Uint16Array(n)
    const currencies = new Currencies()
    // The transcoder of a schema new to this thread, made once (not a closure a record).
    const transcoder = (type: avsc.Type) => orderRowTranscoder(type, setup.expected, setup.types)
    this.schemas.each(
      job,
      setup.expected,
      (i, value) => {
        const event = value as OrderEvent
        if (orderSemanticErrors(event, job.now).length) return
        // encodeInto writes nothing of a row it refuses (RowBinaryUnsupported): the record is left.
        setup.rows.encodeInto(w, orderEventValues(event))
        handled[i] = 1
        tenants[i] = event.tenant_id
        currencyOf[i] = currencies.ofText(event.currency)
      },
      (i) => (rowEnds[i] = w.pos),
      this.transcode
        ? (i, values, start, end) => {
            const t = this.schemas.madeFor(this.transcoders, values, start, end, transcoder)
            if (!t?.row(w, values, start, end, job.now)) return false
            handled[i] = 1
            tenants[i] = t.tenant
            currencyOf[i] = currencies.ofCode(t.currency)
            return true
          }
        : undefined,
    )
    return { id: job.id, body: w.buf.subarray(0, w.pos), rowEnds, handled, tenants, currencyOf, currencies: currencies.list }
  }
}

const decoder = new OrderRowsDecoder()
// The body's buffer is this reply's own (a ByteWriter per job): handed over, not copied.
serveDecodeJobs<OrderRowsSetup, OrderRowsReply>(
  (job) => decoder.rows(job),
  (reply) => [reply.body, reply.rowEnds, reply.handled, reply.tenants, reply.currencyOf].map((a) => a.buffer),
)
