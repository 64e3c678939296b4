/**
 * Marketplace records → our contracts. Pure.
 *
 * An order becomes `placed` at date_created (total_amount, items), `status_changed` to
 * `delivered` at shipping.date_delivered, `cancelled` at cancel_detail.date, and `refunded` per
 * payment with a refunded amount (at its date_last_modified). Money arrives as JSON numbers in
 * pesos and is rounded to the cent; times carry the seller's offset and are stored in UTC.
 */
import { z } from 'zod'
import type { CustomerUpserted, OrderEvent, OrderItem } from '../../../../common/events.ts'
import { centsToDecimal, connectorEventId, deriveCustomerId, numberToDecimal, parseTime, textOrNull, type MappedCustomer, type MappedOrder, type MappingContext } from '../mapping.ts'
import type { Mapped } from '../commerce-platform/mapping.ts'

export const SOURCE = 'marketplace'

/** The marketplace's site → country. */
const SITE_COUNTRY: Record<string, string> = { MLA: 'AR', MLB: 'BR', MLM: 'MX', MLC: 'CL', MLU: 'UY', MCO: 'CO', MPE: 'PE' }
export const countryOfSite = (siteId: string) => SITE_COUNTRY[siteId] ?? null

const str = z.string().nullish()
const id = z.union([z.number().int(), z.string().min(1)]).transform(String)

const orderSchema = z.looseObject({
  id,
  status: z.string(),
  date_created: z.string(),
  total_amount: z.number(),
  currency_id: z.string().regex(/^[A-Z]{3}$/).default('ARS'),
  buyer: z.looseObject({ id, first_name: str, last_name: str, email: str }),
  order_items: z.array(z.looseObject({ item: z.looseObject({ id: z.coerce.string(), title: str, seller_sku: str }), quantity: z.number().int().positive(), unit_price: z.number() })).default([]),
  payments: z.array(z.looseObject({ transaction_amount_refunded: z.number().nullish(), date_last_modified: str })).default([]),
  shipping: z.looseObject({ date_delivered: str }).nullish(),
  cancel_detail: z.looseObject({ date: str }).nullish(),
})

const customerSchema = z.looseObject({
  id,
  first_name: str,
  last_name: str,
  email: str,
  phone: z.looseObject({ area_code: str, number: str }).nullish(),
  identification: z.looseObject({ type: str, number: str }).nullish(),
  address: z.looseObject({ address: str, city: str, state: str, zip_code: str }).nullish(),
  registration_date: str,
  last_updated: z.string(),
})

const fail = <T>(raw: unknown, error: z.ZodError | string): Mapped<T> => {
  const rid = (raw as { id?: unknown } | null)?.id
  return { ok: false, externalId: rid === undefined || rid === null ? null : String(rid), reason: typeof error === 'string' ? error : z.prettifyError(error).split('\n').slice(0, 2).join(' ') }
}

export interface MarketplaceContext extends MappingContext {
  /** ISO 3166 alpha-2 of the seller's site. */
  country: string | null
}

export const orderIdOf = (ctx: MappingContext, externalId: string) => `${SOURCE}:${ctx.account}:${externalId}`

export function mapCustomer(raw: unknown, ctx: MarketplaceContext): Mapped<MappedCustomer> {
  const r = customerSchema.safeParse(raw)
  if (!r.success) return fail(raw, r.error)
  const c = r.data
  const updated = parseTime(c.last_updated)
  if (updated === null) return fail(raw, 'last_updated is not a timestamp')
  const phone = [c.phone?.area_code, c.phone?.number].filter((x) => x && x.trim()).join(' ')
  const event: CustomerUpserted = {
    event_id: connectorEventId([ctx.tenantId, SOURCE, ctx.account, 'customer', c.id, updated]),
    tenant_id: ctx.tenantId,
    occurred_at: updated,
    source: SOURCE,
    customer_id: deriveCustomerId(SOURCE, ctx.account, c.id),
    email: textOrNull(c.email),
    first_name: textOrNull(c.first_name),
    last_name: textOrNull(c.last_name),
    phone: phone || null,
    national_id: textOrNull(c.identification?.number),
    street: textOrNull(c.address?.address),
    city: textOrNull(c.address?.city),
    province: textOrNull(c.address?.state),
    postal_code: textOrNull(c.address?.zip_code),
    country: ctx.country,
    registration_source: SOURCE,
    created_at: parseTime(c.registration_date),
    source_ids: [{ source: SOURCE, id: c.id }],
  }
  return { ok: true, value: { externalId: c.id, event } }
}

export function mapOrder(raw: unknown, ctx: MarketplaceContext): Mapped<MappedOrder> {
  const r = orderSchema.safeParse(raw)
  if (!r.success) return fail(raw, r.error)
  const o = r.data
  const placedAt = parseTime(o.date_created)
  if (placedAt === null) return fail(raw, 'date_created is not a timestamp')
  const customerId = deriveCustomerId(SOURCE, ctx.account, o.buyer.id)
  const total = numberToDecimal(o.total_amount)
  const lines: OrderItem[] = o.order_items.map((i) => ({ sku: i.item.seller_sku ?? i.item.id, name: textOrNull(i.item.title), quantity: i.quantity, unit_price: numberToDecimal(i.unit_price) }))
  const linesCents = o.order_items.reduce((s, i) => s + i.quantity * Math.round(i.unit_price * 100), 0)
  const totalMismatch = linesCents !== Math.round(o.total_amount * 100)
  const items = totalMismatch ? [] : lines

  const base = { tenant_id: ctx.tenantId, source: SOURCE, order_id: orderIdOf(ctx, o.id), customer_id: customerId, currency: o.currency_id, placed_at: placedAt }
  const events: Omit<OrderEvent, 'event_id'>[] = [{ ...base, occurred_at: placedAt, event_type: 'placed', status: 'paid', total, refunded_amount: null, items }]
  const delivered = parseTime(o.shipping?.date_delivered)
  if (delivered !== null) events.push({ ...base, occurred_at: Math.max(delivered, placedAt), event_type: 'status_changed', status: 'delivered', total, refunded_amount: null, items })
  const cancelled = o.status === 'cancelled' ? (parseTime(o.cancel_detail?.date) ?? placedAt) : null
  if (cancelled !== null) events.push({ ...base, occurred_at: Math.max(cancelled, placedAt), event_type: 'cancelled', status: 'cancelled', total: '0.00', refunded_amount: null, items: [] })
  let refundedCents = 0
  for (const p of o.payments) {
    const cents = Math.round((p.transaction_amount_refunded ?? 0) * 100)
    const at = parseTime(p.date_last_modified)
    if (cents <= 0 || at === null) continue
    refundedCents += cents
    const after = Math.max(0, Math.round(o.total_amount * 100) - refundedCents)
    events.push({ ...base, occurred_at: Math.max(at, placedAt), event_type: 'refunded', status: 'refunded', total: centsToDecimal(after), refunded_amount: centsToDecimal(cents), items: [] })
  }

  const profile: CustomerUpserted = {
    event_id: connectorEventId([ctx.tenantId, SOURCE, ctx.account, 'order-profile', o.buyer.id, placedAt]),
    tenant_id: ctx.tenantId,
    occurred_at: placedAt,
    source: SOURCE,
    customer_id: customerId,
    email: textOrNull(o.buyer.email),
    first_name: textOrNull(o.buyer.first_name),
    last_name: textOrNull(o.buyer.last_name),
    phone: null,
    national_id: null,
    street: null,
    city: null,
    province: null,
    postal_code: null,
    country: ctx.country,
    registration_source: SOURCE,
    created_at: placedAt,
    source_ids: [{ source: SOURCE, id: o.buyer.id }],
  }
  return {
    ok: true,
    value: {
      externalId: o.id,
      customerExternalId: o.buyer.id,
      customerId,
      profile,
      events: events.map((e) => ({ ...e, event_id: connectorEventId([ctx.tenantId, SOURCE, ctx.account, 'order', o.id, e.event_type, e.occurred_at]) })),
      totalMismatch,
    },
  }
}
