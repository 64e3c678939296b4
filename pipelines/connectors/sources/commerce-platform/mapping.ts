/**
 * Commerce platform records → our contracts (cdp.customers.v1, cdp.orders.v1). Pure.
 *
 * An order becomes its life-cycle events: `placed` at creationDate (value and items),
 * `status_changed` to `shipped` at invoicedDate, `cancelled` at cancellationDate (total 0), one
 * `refunded` per refund (total = value − refunds so far). Money comes in cents. The items of a
 * placed event must add up to its total: a shipping total line becomes a `SHIPPING` item; an
 * order whose lines do not reconcile with its value is published without items and flagged.
 */
import { z } from 'zod'
import type { CustomerUpserted, OrderEvent, OrderItem } from '../../../../common/events.ts'
import {
  centsToDecimal,
  connectorEventId,
  countryCode,
  deriveCustomerId,
  parseTime,
  textOrNull,
  type MappedCustomer,
  type MappedOrder,
  type MappedProduct,
  type MappingContext,
} from '../mapping.ts'

export const SOURCE = 'commerce_platform'

export type Mapped<T> = { ok: true; value: T } | { ok: false; externalId: string | null; reason: string }

const str = z.string().nullish()
const address = z.looseObject({ street: str, city: str, state: str, postalCode: str, country: str })

const profileSchema = z.looseObject({ userProfileId: str, email: str, firstName: str, lastName: str, document: str, phone: str })

const orderSchema = z.looseObject({
  orderId: z.string().min(1),
  creationDate: z.string(),
  status: z.string(),
  value: z.number().int(),
  totals: z.array(z.looseObject({ id: z.string(), value: z.number().int() })).default([]),
  currencyCode: z.string().regex(/^[A-Z]{3}$/).default('ARS'),
  items: z.array(z.looseObject({ id: z.coerce.string(), refId: str, name: str, quantity: z.number().int().positive(), price: z.number().int(), sellingPrice: z.number().int().nullish() })).default([]),
  clientProfileData: profileSchema.nullish(),
  shippingData: z.looseObject({ address: address.nullish() }).nullish(),
  invoicedDate: str,
  cancellationDate: str,
  refunds: z.array(z.looseObject({ value: z.number().int(), date: z.string() })).default([]),
})

const customerSchema = z.looseObject({
  id: z.string().min(1),
  email: str,
  firstName: str,
  lastName: str,
  document: str,
  phone: str,
  registrationSource: str,
  createdIn: str,
  updatedIn: z.string(),
  addresses: z.array(address).default([]),
})

const productSchema = z.looseObject({ skuId: z.coerce.string(), refId: str, name: z.string() })

type Address = z.infer<typeof address>
type Contact = Pick<z.infer<typeof profileSchema>, 'email' | 'firstName' | 'lastName' | 'phone' | 'document'>

/** The contact and address fields of a customer event; master data and an order's client profile carry the same ones. */
const contactFields = (p: Contact, a: Address | null | undefined) => ({
  email: textOrNull(p.email),
  first_name: textOrNull(p.firstName),
  last_name: textOrNull(p.lastName),
  phone: textOrNull(p.phone),
  national_id: textOrNull(p.document),
  street: textOrNull(a?.street),
  city: textOrNull(a?.city),
  province: textOrNull(a?.state),
  postal_code: textOrNull(a?.postalCode),
  country: countryCode(a?.country),
})

const fail = <T>(raw: unknown, idKey: string, error: z.ZodError | string): Mapped<T> => ({
  ok: false,
  externalId: typeof (raw as Record<string, unknown> | null)?.[idKey] === 'string' ? ((raw as Record<string, string>)[idKey] as string) : null,
  reason: typeof error === 'string' ? error : z.prettifyError(error).split('\n').slice(0, 2).join(' '),
})

export const orderIdOf = (ctx: MappingContext, externalId: string) => `${SOURCE}:${ctx.account}:${externalId}`

export function mapCustomer(raw: unknown, ctx: MappingContext): Mapped<MappedCustomer> {
  const r = customerSchema.safeParse(raw)
  if (!r.success) return fail(raw, 'id', r.error)
  const c = r.data
  const updated = parseTime(c.updatedIn)
  if (updated === null) return fail(raw, 'id', 'updatedIn is not a timestamp')
  const event: CustomerUpserted = {
    event_id: '',
    tenant_id: ctx.tenantId,
    occurred_at: updated,
    source: SOURCE,
    customer_id: deriveCustomerId(SOURCE, ctx.account, c.id),
    ...contactFields(c, c.addresses[0]),
    registration_source: textOrNull(c.registrationSource),
    created_at: parseTime(c.createdIn),
    source_ids: [{ source: SOURCE, id: c.id }],
  }
  event.event_id = connectorEventId([ctx.tenantId, SOURCE, ctx.account, 'customer', c.id, updated])
  return { ok: true, value: { externalId: c.id, event } }
}

export function mapProduct(raw: unknown): Mapped<MappedProduct> {
  const r = productSchema.safeParse(raw)
  if (!r.success) return fail(raw, 'skuId', r.error)
  return { ok: true, value: { sku: r.data.refId ?? r.data.skuId, name: r.data.name } }
}

/** `products` maps SKUs to catalogue names, used when an order line comes without one. */
export function mapOrder(raw: unknown, ctx: MappingContext, products: ReadonlyMap<string, string> = new Map()): Mapped<MappedOrder> {
  const r = orderSchema.safeParse(raw)
  if (!r.success) return fail(raw, 'orderId', r.error)
  const o = r.data
  const placedAt = parseTime(o.creationDate)
  if (placedAt === null) return fail(raw, 'orderId', 'creationDate is not a timestamp')
  const p = o.clientProfileData
  const customerExternalId = textOrNull(p?.userProfileId) ?? (textOrNull(p?.email) ? `email:${p!.email!.trim().toLowerCase()}` : null)
  if (!customerExternalId) return fail(raw, 'orderId', 'the order names no customer (clientProfileData.userProfileId or email)')
  const customerId = deriveCustomerId(SOURCE, ctx.account, customerExternalId)
  const orderId = orderIdOf(ctx, o.orderId)

  const lines: OrderItem[] = o.items.map((i) => {
    const sku = i.refId ?? i.id
    return { sku, name: textOrNull(i.name) ?? products.get(sku) ?? null, quantity: i.quantity, unit_price: centsToDecimal(i.sellingPrice ?? i.price) }
  })
  const linesCents = o.items.reduce((s, i) => s + i.quantity * (i.sellingPrice ?? i.price), 0)
  const shipping = o.totals.find((t) => t.id === 'Shipping')?.value ?? 0
  let items: OrderItem[] = []
  let totalMismatch = false
  if (linesCents === o.value) items = lines
  else if (linesCents + shipping === o.value && shipping > 0) items = [...lines, { sku: 'SHIPPING', name: 'Shipping', quantity: 1, unit_price: centsToDecimal(shipping) }]
  // Discounts or taxes that the total lines explain: the value is right, the items cannot carry it.
  else totalMismatch = o.totals.reduce((s, t) => s + t.value, 0) !== o.value

  const base = { tenant_id: ctx.tenantId, source: SOURCE, order_id: orderId, customer_id: customerId, currency: o.currencyCode, placed_at: placedAt }
  const value = centsToDecimal(o.value)
  const events: Omit<OrderEvent, 'event_id'>[] = [
    { ...base, occurred_at: placedAt, event_type: 'placed', status: o.status === 'payment-pending' ? 'pending' : 'paid', total: value, refunded_amount: null, items },
  ]
  const invoiced = parseTime(o.invoicedDate)
  if (invoiced !== null) events.push({ ...base, occurred_at: Math.max(invoiced, placedAt), event_type: 'status_changed', status: 'shipped', total: value, refunded_amount: null, items })
  const cancelled = parseTime(o.cancellationDate)
  if (cancelled !== null) events.push({ ...base, occurred_at: Math.max(cancelled, placedAt), event_type: 'cancelled', status: 'cancelled', total: '0.00', refunded_amount: null, items: [] })
  let refunded = 0
  for (const f of [...o.refunds].sort((a, b) => (parseTime(a.date) ?? 0) - (parseTime(b.date) ?? 0))) {
    const at = parseTime(f.date)
    if (at === null) continue
    refunded += f.value
    events.push({ ...base, occurred_at: Math.max(at, placedAt), event_type: 'refunded', status: 'refunded', total: centsToDecimal(Math.max(0, o.value - refunded)), refunded_amount: centsToDecimal(f.value), items: [] })
  }

  const profile: CustomerUpserted | null = p
    ? {
        event_id: connectorEventId([ctx.tenantId, SOURCE, ctx.account, 'order-profile', customerExternalId, placedAt]),
        tenant_id: ctx.tenantId,
        occurred_at: placedAt,
        source: SOURCE,
        customer_id: customerId,
        ...contactFields(p, o.shippingData?.address),
        registration_source: 'checkout',
        created_at: placedAt,
        source_ids: [{ source: SOURCE, id: customerExternalId }],
      }
    : null

  return {
    ok: true,
    value: {
      externalId: o.orderId,
      customerExternalId,
      customerId,
      profile,
      events: events.map((e) => ({ ...e, event_id: connectorEventId([ctx.tenantId, SOURCE, ctx.account, 'order', o.orderId, e.event_type, e.occurred_at]) })),
      totalMismatch,
    },
  }
}
