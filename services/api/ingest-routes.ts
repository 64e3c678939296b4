import express, { type Router } from 'express'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import { TenantCurrencies, TenantSettingsStore } from '../../common/store/tenant-settings.ts'
import { IngestBatchSchema, validateCustomerInput, validateOrderInput, fieldErrorsFromZod, refundErrors, MAX_BATCH_EVENTS, ORDER_INPUT_FIELDS, CUSTOMER_INPUT_FIELDS, ORDER_ITEM_FIELDS, type FieldError } from '../../pipelines/ingest/validation.ts'
import { publishEvents, type IngestKind } from '../../pipelines/ingest/publisher.ts'
import { sendError } from './errors.ts'
import { tenantValue } from './auth.ts'
import { route } from './routes.ts'
import { INGEST_OPERATIONS } from './ingest-operations.ts'

type IndexedError = { index: number; path: string; code: string; message: string }

const field = (e: unknown, k: string): unknown => (e !== null && typeof e === 'object' ? (e as Record<string, unknown>)[k] : undefined)

/**
 * The currency each tenant of a batch is held to: its setting; for a tenant without one, the
 * currency of its stored orders (from before settings existed), else the first order of the batch
 * that names one (adopted once the batch is accepted).
 */
async function batchCurrencies(currencies: TenantCurrencies, settings: TenantSettingsStore, events: readonly unknown[]): Promise<{ held: Map<number, string | null>; adopt: Map<number, string> }> {
  const tenants = new Set<number>()
  for (const e of events) {
    const t = tenantValue(field(e, 'tenant_id'))
    if (t !== null) tenants.add(t)
  }
  const held = new Map<number, string | null>()
  const adopt = new Map<number, string>()
  for (const t of tenants) {
    const c = (await currencies.current(t)) ?? (await settings.storedCurrency(t))
    held.set(t, c)
    if (c) adopt.set(t, c)
  }
  for (const e of events) {
    const t = tenantValue(field(e, 'tenant_id'))
    const c = field(e, 'currency')
    if (t === null || held.get(t) || typeof c !== 'string' || !/^[A-Za-z]{3}$/.test(c.trim())) continue
    held.set(t, c.trim().toUpperCase())
    adopt.set(t, c.trim().toUpperCase())
  }
  return { held, adopt }
}

/** What was paid for the orders a batch refunds: their stored `placed` totals in cents, keyed tenant:order. */
async function paidTotals(store: Store, events: readonly OrderEvent[]): Promise<Map<string, bigint>> {
  const wanted = events.filter((e) => e.refunded_amount !== null && e.event_type !== 'placed' && e.event_type !== 'credit_note')
  const out = new Map<string, bigint>()
  if (!wanted.length) return out
  const rs = await store.query({
    query: `SELECT tenant_id, order_id, toString(argMax(toInt64(total * 100), occurred_at)) AS cents FROM order_events
            WHERE tenant_id IN {tenants:Array(UInt64)} AND order_id IN {orders:Array(String)} AND event_type = 'placed'
            GROUP BY tenant_id, order_id`,
    query_params: { tenants: [...new Set(wanted.map((e) => e.tenant_id))], orders: [...new Set(wanted.map((e) => e.order_id))] },
    format: 'JSONEachRow',
  })
  for (const r of await rs.json<{ tenant_id: number; order_id: string; cents: string }>()) out.set(`${r.tenant_id}:${r.order_id}`, BigInt(r.cents))
  return out
}

/**
 * Fields the event schema does not have (a typo, or a field such as `password` that must never be
 * sent): refused rather than dropped in silence, so a sender learns at once. HTTP ingest only; an
 * import file's extra columns are its own business (docs/import.md).
 */
function unknownFields(kind: IngestKind, input: unknown): FieldError[] {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return []
  const known = new Set(kind === 'orders' ? ORDER_INPUT_FIELDS : CUSTOMER_INPUT_FIELDS)
  const what = kind === 'orders' ? 'an order event' : 'a customer event'
  const out: FieldError[] = Object.keys(input)
    .filter((k) => !known.has(k))
    .map((k) => ({ path: k, code: 'unknown_field', message: `${k} is not a field of ${what}` }))
  const items = (input as { items?: unknown }).items
  if (kind === 'orders' && Array.isArray(items)) {
    const itemFields = new Set(ORDER_ITEM_FIELDS)
    items.forEach((item, i) => {
      if (typeof item !== 'object' || item === null) return
      for (const k of Object.keys(item)) if (!itemFields.has(k)) out.push({ path: `items.${i}.${k}`, code: 'unknown_field', message: `${k} is not a field of an order item` })
    })
  }
  return out
}

/**
 * POST /api/v2/cdp/ingest/{orders|customers} with `{ "events": [...] }` (1 to 10,000).
 * A batch is all or nothing: any invalid event → 400 listing every field error by index, and
 * nothing is written. 202 once every event is durable in the log. With a store, orders are also
 * held to their tenant's currency (`currency_mismatch`; a blank one takes the tenant's) and a
 * refund to what was paid for the order (`invalid_refund`).
 */
export function ingestRouter(deps: { log: EventLog; codec: EventCodec; store?: Store; now?: () => number }): Router {
  const router = express.Router()
  const settings = deps.store ? new TenantSettingsStore(deps.store, deps.now) : null
  const currencies = settings ? new TenantCurrencies(settings, deps.now) : null
  for (const kind of ['orders', 'customers'] as const satisfies IngestKind[]) {
    route(router, INGEST_OPERATIONS[kind], async (req, res, next) => {
      try {
        const batch = IngestBatchSchema.safeParse(req.body)
        if (!batch.success) {
          return sendError(res, 400, 'Invalid request body', { errors: fieldErrorsFromZod(batch.error.issues), max_events: MAX_BATCH_EVENTS })
        }
        const now = (deps.now ?? Date.now)()
        const events: (OrderEvent | CustomerUpserted)[] = []
        const errors: IndexedError[] = []
        const held = kind === 'orders' && settings && currencies ? await batchCurrencies(currencies, settings, batch.data.events) : null
        batch.data.events.forEach((input, index) => {
          const ctx = { defaultSource: 'http', now, tenantCurrency: held?.held.get(tenantValue(field(input, 'tenant_id')) ?? 0) ?? null }
          const r = kind === 'orders' ? validateOrderInput(input, held ? ctx : { ...ctx, tenantCurrency: undefined }) : validateCustomerInput(input, ctx)
          for (const e of unknownFields(kind, input)) errors.push({ index, ...e })
          if (r.ok) events.push(r.value)
          else for (const e of r.errors) errors.push({ index, ...e })
        })
        if (!errors.length && kind === 'orders' && deps.store) {
          const orders = events as OrderEvent[]
          for (const { index, error } of refundErrors(orders, await paidTotals(deps.store, orders))) errors.push({ index, ...error })
        }
        if (!errors.length && held && currencies) {
          // Adopt (or confirm) each tenant's currency; a batch whose currency lost to another
          // tenant's first batch meanwhile is refused, never published to be dead-lettered.
          for (const [t, c] of held.adopt) {
            const winner = await currencies.of(t, c)
            if (winner === c) continue
            ;(events as OrderEvent[]).forEach((e, index) => {
              if (e.tenant_id === t && e.currency !== winner) errors.push({ index, path: 'currency', code: 'currency_mismatch', message: `${e.currency} is not the tenant's currency ${winner}; amounts in different currencies are never summed` })
            })
          }
        }
        if (errors.length) return sendError(res, 400, 'Invalid events', { errors: errors.sort((a, b) => a.index - b.index) })
        await publishEvents(deps.log, deps.codec, kind, events)
        res.status(202).json({ success: true, data: { accepted: events.length, event_ids: events.map((e) => e.event_id) } })
      } catch (err) {
        next(err)
      }
    })
  }
  return router
}
