import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { serveDecodeJobs, ThreadSchemas, type DecodeJob } from '../../common/runtime/decode-thread-worker.ts'
import { customerSemanticErrors, orderSemanticErrors } from '../ingest/index.ts'
import { factOf } from './order-facts.ts'
import { orderKey } from './order-book.ts'

/**
 * The decode thread of the feature consumer (input-thread.ts): order and customer records' values
 * in, the fields the fold reads out (engine.ts' EngineInput), in typed arrays and one array of
 * strings. Only what is certain is done here: a record whose schema this thread was not given,
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

export class InputsDecoder {
  private setup: InputsSetup | null = null
  private readonly schemas = new ThreadSchemas()

  /** The job's inputs; pure apart from the schemas and setup it keeps for the next jobs. */
  inputs(job: DecodeJob<InputsSetup>): InputsReply {
    if (job.setup) this.setup = job.setup
    this.schemas.add(job.schemas)
    const setup = this.setup
    if (!setup) throw new Error('no setup sent to the feature inputs thread')
    const n = job.ends.length
    const values = Buffer.from(job.values.buffer, job.values.byteOffset, job.values.length)
    const orders = job.topic === TOPICS.orders.name
    const expected = orders ? setup.orders : job.topic === TOPICS.customers.name ? setup.customers : null
    const kind = new Uint8Array(n)
    const nums = new Float64Array(n * STRIDE)
    const cancelled = new Uint8Array(n)
    const texts: string[] = new Array(2 * n).fill('')
    const currencyOf = new Uint16Array(n)
    const currencies: string[] = []
    let start = 0
    for (let i = 0; i < n; i++) {
      const end = job.ends[i]!
      try {
        const value = expected ? this.schemas.read(values, start, end, expected) : null
        const at = i * STRIDE
        if (value && orders) {
          const e = value as OrderEvent
          if (!orderSemanticErrors(e, job.now).length) {
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
            let c = currencies.indexOf(e.currency)
            if (c < 0) c = currencies.push(e.currency) - 1
            currencyOf[i] = c
            kind[i] = ORDER
          }
        } else if (value) {
          const e = value as CustomerUpserted
          if (!customerSemanticErrors(e).length) {
            nums[at] = e.tenant_id
            nums[at + 1] = e.customer_id
            nums[at + 2] = e.occurred_at
            texts[2 * i] = e.email ?? ''
            kind[i] = CUSTOMER
          }
        }
      } catch {
        // Whatever failed (an undecodable value, a rule that threw) is the main thread's to judge, as its own decode would.
        kind[i] = LEFT
      }
      start = end
    }
    return { id: job.id, kind, nums, cancelled, texts, currencyOf, currencies }
  }
}

const decoder = new InputsDecoder()
serveDecodeJobs<InputsSetup, InputsReply>(
  (job) => decoder.inputs(job),
  (reply) => [reply.kind, reply.nums, reply.cancelled, reply.currencyOf].map((a) => a.buffer),
)
