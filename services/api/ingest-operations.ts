import { z } from 'zod'
import { ORDER_EVENT_TYPES } from '../../common/events.ts'
import { IngestBatchSchema, MAX_BATCH_EVENTS, MAX_TIMESTAMP, MIN_TIMESTAMP } from '../../pipelines/ingest/validation.ts'
import { ISO_3166_1_ALPHA_2 } from '../../pipelines/ingest/countries.ts'
import type { IngestKind } from '../../pipelines/ingest/publisher.ts'
import { failure } from './errors.ts'
import { propertiesOf, type JsonSchema } from './request-schemas.ts'
import { json, shared, type Operation, type RouteGroup } from './routes.ts'
import { Count, success } from './response-schemas.ts'

/**
 * The ingest operations (POST /api/v2/cdp/ingest/{orders|customers}). The field parsers of
 * pipelines/ingest/validation.ts accept lenient input (digit strings for numbers, ISO 8601 or
 * epoch ms for times), which zod cannot express as JSON Schema, so the event item schemas are
 * written out here; the batch envelope is IngestBatchSchema's.
 */
const TIMESTAMP = {
  anyOf: [
    { type: 'integer', minimum: MIN_TIMESTAMP, maximum: MAX_TIMESTAMP, description: 'epoch milliseconds, from 1990; at most 5 minutes ahead of the server clock' },
    { type: 'string', description: 'ISO 8601; without a zone it is UTC. From 1990; at most 5 minutes ahead of the server clock' },
  ],
}
const ID = { anyOf: [{ type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER }, { type: 'string', pattern: '^0*[1-9]\\d{0,14}$' }] }
const AMOUNT = { anyOf: [{ type: 'number' }, { type: 'string', pattern: '^-?\\d+(\\.\\d+)?$' }], description: 'decimal amount' }
const TEXT = { type: 'string', maxLength: 1024 }
const COMMON_EVENT = {
  event_id: { ...TEXT, description: 'Derived from the content when absent (idempotent re-sends)' },
  tenant_id: ID,
  occurred_at: TIMESTAMP,
  source: { ...TEXT, description: 'default: http' },
}
const ORDER_EVENT: JsonSchema = {
  type: 'object',
  required: ['tenant_id', 'occurred_at', 'order_id', 'customer_id', 'total'],
  properties: {
    ...COMMON_EVENT,
    event_type: { type: 'string', enum: [...ORDER_EVENT_TYPES], default: 'placed' },
    order_id: TEXT,
    customer_id: ID,
    status: TEXT,
    total: AMOUNT,
    currency: { type: 'string', pattern: '^[A-Za-z]{3}$', description: "The tenant's currency (blank: the tenant's; the first order sets it)" },
    refunded_amount: AMOUNT,
    items: {
      type: 'array',
      items: { type: 'object', required: ['sku', 'quantity', 'unit_price'], properties: { sku: TEXT, name: TEXT, quantity: { type: 'number' }, unit_price: AMOUNT } },
    },
    placed_at: TIMESTAMP,
  },
}
const CUSTOMER_EVENT: JsonSchema = {
  type: 'object',
  required: ['tenant_id', 'occurred_at', 'customer_id'],
  properties: {
    ...COMMON_EVENT,
    customer_id: ID,
    email: { type: 'string', maxLength: 255 },
    ...Object.fromEntries(['first_name', 'last_name', 'phone', 'national_id', 'street', 'city', 'province', 'postal_code', 'registration_source'].map((k) => [k, TEXT])),
    country: { type: 'string', enum: [...ISO_3166_1_ALPHA_2].sort(), description: 'ISO 3166-1 alpha-2 (an assigned code; lower case is accepted too)' },
    created_at: TIMESTAMP,
    source_ids: { type: 'array', items: { type: 'object', required: ['source', 'id'], properties: { source: TEXT, id: TEXT } } },
  },
}

const ITEM_SCHEMA: Record<IngestKind, string> = { orders: 'OrderEventInput', customers: 'CustomerEventInput' }

const EXAMPLE: Record<IngestKind, unknown> = {
  orders: {
    events: [
      { tenant_id: 1, customer_id: 7, order_id: 'A-1001', occurred_at: '2025-03-01T12:00:00Z', currency: 'ARS', total: '150.50', items: [{ sku: 'MATE-01', name: 'Mate', quantity: 2, unit_price: '75.25' }] },
    ],
  },
  customers: {
    events: [{ tenant_id: 1, customer_id: 7, occurred_at: '2025-03-01T12:00:00Z', email: 'ana@example.com', first_name: 'Ana', last_name: 'Pérez', province: 'Córdoba', country: 'AR' }],
  },
}

const Accepted = success({
  data: z.strictObject({ accepted: Count.min(1), event_ids: z.array(z.string()).meta({ description: 'The events’ ids, in the order sent' }) }),
})

function ingestOperation(kind: IngestKind): Operation {
  return {
    method: 'post',
    path: `/api/v2/cdp/ingest/${kind}`,
    operationId: `ingest${kind.charAt(0).toUpperCase()}${kind.slice(1)}`,
    summary: `Ingest a batch of ${kind === 'orders' ? 'order' : 'customer'} events`,
    description: `1 to ${MAX_BATCH_EVENTS.toLocaleString('en')} events. All or nothing: any invalid event is a 400 listing every field error by index and nothing is written. 202 once every event is durable in the event log.`,
    request: {
      body: {
        schema: IngestBatchSchema,
        required: true,
        example: EXAMPLE[kind],
        document: (body) => {
          const events = propertiesOf(body).events
          if (events) events.items = { $ref: `#/components/schemas/${ITEM_SCHEMA[kind]}` }
          return body
        },
      },
    },
    responses: {
      202: json('Accepted: `data.accepted` (count) and `data.event_ids`', Accepted),
      400: failure('Malformed JSON, an invalid batch or invalid events (`details.errors[]` with index, path, code, message)'),
      403: shared('Forbidden'),
    },
  }
}

export const INGEST_OPERATIONS = { orders: ingestOperation('orders'), customers: ingestOperation('customers') }

export const INGEST_ROUTES: RouteGroup = {
  tag: { name: 'Ingest', description: 'Send order and customer events.' },
  operations: Object.values(INGEST_OPERATIONS),
  schemas: () => ({ OrderEventInput: ORDER_EVENT, CustomerEventInput: CUSTOMER_EVENT }),
}
