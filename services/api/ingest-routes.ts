import express, { type Router } from 'express'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { IngestBatchSchema, validateCustomerInput, validateOrderInput, fieldErrorsFromZod, MAX_BATCH_EVENTS } from '../../pipelines/ingest/validation.ts'
import { publishEvents, type IngestKind } from '../../pipelines/ingest/publisher.ts'
import { sendError } from './errors.ts'

const VALIDATORS = { orders: validateOrderInput, customers: validateCustomerInput } as const

/**
 * POST /api/v2/cdp/ingest/{orders|customers} with `{ "events": [...] }` (1 to 10,000).
 * A batch is all or nothing: any invalid event → 400 listing every field error by index, and
 * nothing is written. 202 once every event is durable in the log.
 */
export function ingestRouter(deps: { log: EventLog; codec: EventCodec; now?: () => number }): Router {
  const router = express.Router()
  for (const kind of ['orders', 'customers'] as const satisfies IngestKind[]) {
    router.post(`/api/v2/cdp/ingest/${kind}`, async (req, res, next) => {
      try {
        const batch = IngestBatchSchema.safeParse(req.body)
        if (!batch.success) {
          return sendError(res, 400, 'Invalid request body', { errors: fieldErrorsFromZod(batch.error.issues), max_events: MAX_BATCH_EVENTS })
        }
        const now = (deps.now ?? Date.now)()
        const events: (OrderEvent | CustomerUpserted)[] = []
        const errors: { index: number; path: string; code: string; message: string }[] = []
        batch.data.events.forEach((input, index) => {
          const r = VALIDATORS[kind](input, { defaultSource: 'http', now })
          if (r.ok) events.push(r.value)
          else for (const e of r.errors) errors.push({ index, ...e })
        })
        if (errors.length) return sendError(res, 400, 'Invalid events', { errors })
        await publishEvents(deps.log, deps.codec, kind, events)
        res.status(202).json({ success: true, data: { accepted: events.length, event_ids: events.map((e) => e.event_id) } })
      } catch (err) {
        next(err)
      }
    })
  }
  return router
}
