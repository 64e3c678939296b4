import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { indexIn, serveDecodeJobs, ThreadSchemas, type DecodeJob } from '../../common/runtime/decode-thread-worker.ts'
import { customerSemanticErrors, orderSemanticErrors } from '../../common/event-rules.ts'
import { factOf } from './order-facts.ts'
import { orderKey } from './order-book.ts'
import { CUSTOMER, ORDER, STRIDE, type InputsReply, type InputsSetup } from './inputs-reply.ts'

/**
 * The decode thread of the feature consumer (input-thread.ts): order and customer records' values
 * in, the fields the fold reads out (inputs-reply.ts).
 */
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
    const orders = job.topic === TOPICS.orders.name
    const expected = orders ? setup.orders : job.topic === TOPICS.customers.name ? setup.customers : null
    const kind = new Uint8Array(n)
    const nums = new Float64Array(n * STRIDE)
    const cancelled = new Uint8Array(n)
    const texts: string[] = new Array(2 * n).fill('')
    const currencyOf = new Uint16Array(n)
    const currencies: string[] = []
    // A record is marked taken (kind) last: one whose rules or fields throw stays LEFT.
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
        currencyOf[i] = indexIn(currencies, e.currency)
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
    })
    return { id: job.id, kind, nums, cancelled, texts, currencyOf, currencies }
  }
}

const decoder = new InputsDecoder()
serveDecodeJobs<InputsSetup, InputsReply>(
  (job) => decoder.inputs(job),
  (reply) => [reply.kind, reply.nums, reply.cancelled, reply.currencyOf].map((a) => a.buffer),
)
