import type avsc from 'avsc'
import { ORDER_EVENT_TYPES, orderVersion, type CustomerUpserted, type OrderEvent } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { Currencies, serveDecodeJobs, ThreadSchemas, type DecodeJob } from '../../common/runtime/decode-thread-worker.ts'
import { customerSemanticErrors, orderSemanticErrors } from '../../common/event-rules.ts'
import { customerEventReader, type CustomerEventReader } from '../../common/customer-event-reader.ts'
import { CUSTOMER_ID, EVENT_ID, EVENT_TYPE, OCCURRED_AT, ORDER_ID, orderEventReader, PLACED_AT, TENANT_ID, TOTAL, type OrderEventReader } from '../../common/order-event-reader.ts'
import { factOf } from './order-facts.ts'
import { orderKey } from './order-book.ts'
import { CUSTOMER, joinTexts, ORDER, STRIDE, type InputsReply, type InputsSetup } from './inputs-reply.ts'

const CANCELLED = ORDER_EVENT_TYPES.indexOf('cancelled')

/**
 * The decode thread of the feature consumer (input-thread.ts): order and customer records' values
 * in, the fields the fold reads out (inputs-reply.ts). A record its writer schema's reader takes
 * (common/order-event-reader.ts, customer-event-reader.ts) is read from its Avro bytes, making only
 * the strings the fold keeps (an order's two ids, a customer's email); the others are decoded by
 * avsc and checked here.
 */
export class InputsDecoder {
  private setup: InputsSetup | null = null
  private readonly schemas = new ThreadSchemas()
  /** By writer schema id: its order or customer reader, or null where it has none. */
  private readonly readers = new Map<number, OrderEventReader | null>()
  private readonly customerReaders = new Map<number, CustomerEventReader | null>()

  /** `direct` false: every record is decoded by avsc (the tests' reference). */
  constructor(private readonly direct = true) {}

  /** The job's inputs; pure apart from the schemas and setup it keeps for the next jobs. */
  inputs(job: DecodeJob<InputsSetup>): InputsReply {
    if (job.setup) {
      this.setup = job.setup
      this.readers.clear()
      this.customerReaders.clear()
    }
    this.schemas.add(job.schemas)
    const setup = this.setup
    if (!setup) throw new Error('no setup sent to the feature inputs thread')
    const n = job.ends.length
    const orders = job.topic === TOPICS.orders.name
    const expected = orders ? setup.orders : job.topic === TOPICS.customers.name ? setup.customers : null
    const kind = new Uint8Array(n)
    const nums = new Float64Array(n * STRIDE)
    const cancelled = new Uint8Array(n)
    const texts: string[] = new Array(2 * n).fill('')
    const currencyOf = new Uint16Array(n)
    const currencies = new Currencies()
    // The readers of a schema new to this thread, made once (not a closure a record).
    const orderReader = (type: avsc.Type) => orderEventReader(type, setup.orders, false)
    const customerReader = (type: avsc.Type) => customerEventReader(type, setup.customers)
    // A record is marked taken (kind) last: one whose rules or fields throw stays LEFT.
    const fromBytes = (i: number, values: Buffer, start: number, end: number): boolean => {
      const r = this.schemas.madeFor(this.readers, values, start, end, orderReader)
      if (!r?.read(values, start, end, job.now)) return false
      const at = i * STRIDE
      const { num } = r
      const type = num[EVENT_TYPE]!
      const orderId = r.text(ORDER_ID)
      nums[at] = num[TENANT_ID]!
      nums[at + 1] = num[CUSTOMER_ID]!
      nums[at + 2] = num[OCCURRED_AT]!
      nums[at + 3] = orderVersion({ occurred_at: num[OCCURRED_AT]!, event_type: ORDER_EVENT_TYPES[type]! })
      nums[at + 4] = num[PLACED_AT]!
      nums[at + 5] = num[TOTAL]!
      nums[at + 6] = orderKey(orderId)
      cancelled[i] = type === CANCELLED ? 1 : 0
      texts[2 * i] = orderId
      texts[2 * i + 1] = r.text(EVENT_ID)
      currencyOf[i] = currencies.ofCode(r.currency)
      kind[i] = ORDER
      return true
    }
    const customerFromBytes = (i: number, values: Buffer, start: number, end: number): boolean => {
      const r = this.schemas.madeFor(this.customerReaders, values, start, end, customerReader)
      if (!r?.read(values, start, end)) return false
      const at = i * STRIDE
      nums[at] = r.tenant
      nums[at + 1] = r.customer
      nums[at + 2] = r.occurredAt
      texts[2 * i] = r.email
      kind[i] = CUSTOMER
      return true
    }
    this.schemas.each(job, expected, (i, value) => {
      const at = i * STRIDE
      if (orders) {
        const e = value as OrderEvent
        if (orderSemanticErrors(e, job.now).length) return
        const fact = factOf(e)
        nums[at] = e.tenant_id
        nums[at + 1] = e.customer_id
        nums[at + 2] = e.occurred_at
        nums[at + 3] = fact.version
        nums[at + 4] = fact.placedAt
        nums[at + 5] = fact.cents
        nums[at + 6] = orderKey(e.order_id)
        cancelled[i] = fact.cancelled ? 1 : 0
        texts[2 * i] = e.order_id
        texts[2 * i + 1] = fact.eventId
        currencyOf[i] = currencies.ofText(e.currency)
        kind[i] = ORDER
        return
      }
      const e = value as CustomerUpserted
      if (customerSemanticErrors(e).length) return
      nums[at] = e.tenant_id
      nums[at + 1] = e.customer_id
      nums[at + 2] = e.occurred_at
      texts[2 * i] = e.email ?? ''
      kind[i] = CUSTOMER
    }, undefined, !this.direct ? undefined : orders ? fromBytes : customerFromBytes)
    return { id: job.id, kind, nums, cancelled, ...joinTexts(texts), currencyOf, currencies: currencies.list }
  }
}

const decoder = new InputsDecoder()
serveDecodeJobs<InputsSetup, InputsReply>(
  (job) => decoder.inputs(job),
  (reply) => [reply.kind, reply.nums, reply.cancelled, reply.textEnds, reply.currencyOf].map((a) => a.buffer),
)
