/**
 * State of the commerce-platform simulator: accounts, app keys, the shop's data (from the
 * generator), rate-limit windows, faults and the request log. Renders records in the platform's
 * own shapes (camelCase, money in cents, ISO times), which pipelines/connectors/sources maps to ours.
 */
import { createHash } from 'node:crypto'
import { PRODUCTS } from '../../../pipelines/ingest/synthetic/catalog.ts'
import { PlatformState, type PlatformStateOptions } from '../shared/platform-state.ts'
import { inRange, OrderView, type Dataset, type DatasetOptions, type OrderAt, type SimCustomer, type SimOrder, type TimeRange } from './dataset.ts'
import { datasetOf, type AccountTruth, type SharedPopulationOption, type TruthRow } from './shared-population.ts'
import { iso } from '../../../common/time.ts'

export type Resource = 'catalog' | 'orders' | 'masterdata' | 'payments'
export type Resources = Record<Resource, boolean>
export const ALL_RESOURCES: Resources = { catalog: true, orders: true, masterdata: true, payments: true }

export interface SeedAppKey {
  appKey: string
  appToken: string
  /** The APIs this key may call; default all. */
  resources?: Partial<Resources>
}

export interface Anomalies {
  /** The first N orders are listed twice (pagination overlap, as a platform under load does). */
  duplicateOrders: number
  /** N orders whose value exceeds their items and shipping (an unexplained surcharge of 1.00). */
  totalMismatches: number
  /** The last N customers are missing from master data: their orders come from unknown (guest) customers. */
  guestCustomers: number
}

export interface ModelOptions extends PlatformStateOptions {
  accountName: string
  accountId: string
  environments: string[]
  hosts: string[]
  isActive: boolean
  maxPerPage: number
}


/** A stable UUID-shaped id from a string (customer ids of master data). */
export function stableUuid(s: string): string {
  const h = createHash('sha256').update(s).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`
}

export const orderIdOf = (seq: number) => `${1_000_000 + seq}-01`
export const seqOfOrderId = (id: string) => (/^(\d+)-01$/.test(id) ? Number(id.slice(0, -3)) - 1_000_000 : NaN)

/** Category names of the catalogue's SKU prefixes. */
const CATEGORIES: Record<string, string> = {
  ALM: 'Almacén', ACC: 'Accesorios', IND: 'Indumentaria', CAL: 'Calzado', LIB: 'Libros', ELE: 'Electrónica', BAZ: 'Bazar',
  HOG: 'Hogar', BEL: 'Belleza', DEP: 'Deportes', JUG: 'Juguetes', MAS: 'Mascotas',
}

function documentType(doc: string | null): 'DNI' | 'CUIL' | null {
  if (!doc) return null
  return doc.replace(/\D/g, '').length === 11 ? 'CUIL' : 'DNI'
}

/** A customer's contact fields as master data and an order's client profile both render them. */
function contactOf(c: SimCustomer) {
  return { email: c.email, firstName: c.firstName, lastName: c.lastName, document: c.document, documentType: documentType(c.document), phone: c.phone }
}

export class CommercePlatformState extends PlatformState<ModelOptions> {
  readonly appKeys = new Map<string, { appToken: string; resources: Resources }>()
  anomalies: Anomalies = { duplicateOrders: 0, totalMismatches: 0, guestCustomers: 0 }
  private readonly view: OrderView
  /** Products' last change: the catalogue is loaded when the dataset starts. */
  private readonly catalogUpdatedAt: number

  /** `sharedTruth`: the person behind each customer number, when the dataset is one side of a shared population. */
  constructor(opts: ModelOptions, readonly data: Dataset, catalogUpdatedAt: number, private readonly sharedTruth: AccountTruth[] | null = null) {
    super(opts)
    this.view = new OrderView(data.orders)
    this.catalogUpdatedAt = catalogUpdatedAt
  }

  /** With `overlap`: the commerce side of a population shared with the marketplace simulator. */
  static fromGenerator(opts: ModelOptions, gen: DatasetOptions & SharedPopulationOption): CommercePlatformState {
    const { data, truth } = datasetOf('commerce', gen)
    return new CommercePlatformState(opts, data, gen.start.getTime(), truth)
  }

  /** The person behind each customer, by the id the API shows; null without a shared population. */
  truth(): TruthRow[] | null {
    return this.sharedTruth?.map((t) => ({ source: t.source, id: this.customerId(t.customer_id), person_id: t.person_id })) ?? null
  }

  addAppKey(seed: SeedAppKey): void {
    this.appKeys.set(seed.appKey, { appToken: seed.appToken, resources: { ...ALL_RESOURCES, ...seed.resources } })
  }

  setAnomalies(a: Partial<Anomalies>): void {
    const before = this.anomalies.totalMismatches
    this.anomalies = { ...this.anomalies, ...a }
    if (this.anomalies.totalMismatches !== before) {
      this.data.orders.forEach((o, i) => (o.unexplainedCents = i < this.anomalies.totalMismatches ? 100 : 0))
      this.view.invalidate()
    }
  }

  /** null when the key and token are right and belong to this account; else the reason. */
  authenticate(appKey: string | undefined, appToken: string | undefined): string | null {
    if (!appKey || !appToken) return 'send the X-App-Key and X-App-Token headers'
    const k = this.appKeys.get(appKey)
    if (!k || k.appToken !== appToken) return 'the app key or app token is not valid for this account'
    return null
  }

  resourcesOf(appKey: string): Resources {
    return this.appKeys.get(appKey)?.resources ?? { catalog: false, orders: false, masterdata: false, payments: false }
  }

  // ---- data changes (admin endpoints, tests) ------------------------------------------------

  /** A new order for customer `customerNo`, placed at `placedAt` (default now). */
  addOrder(customerNo: number, items: { sku: string; quantity: number }[], placedAt = this.opts.now()): SimOrder {
    if (!this.data.customers.some((c) => c.no === customerNo)) throw new Error(`unknown customer ${customerNo}`)
    const lines = items.map((i) => {
      const p = PRODUCTS.find((x) => x.sku === i.sku)
      if (!p) throw new Error(`unknown sku ${i.sku}`)
      return { sku: p.sku, name: p.name, quantity: i.quantity, unitCents: p.refPrice * 100 }
    })
    const seq = Math.max(0, ...this.data.orders.map((o) => o.seq)) + 1
    const o: SimOrder = {
      seq, customerNo, placedAt, items: lines, itemsCents: lines.reduce((s, l) => s + l.quantity * l.unitCents, 0), shippingCents: 0, unexplainedCents: 0,
      cancelledAt: null, deliveredAt: null, refund: null,
    }
    this.data.orders.push(o)
    this.view.invalidate()
    return o
  }

  cancelOrder(seq: number, at = this.opts.now()): SimOrder {
    const o = this.data.orders.find((x) => x.seq === seq)
    if (!o) throw new Error(`unknown order ${seq}`)
    o.cancelledAt = at
    this.view.invalidate()
    return o
  }

  // ---- listings ------------------------------------------------------------------------------

  /** Customers in master data (guests excluded), by (updatedIn, number). */
  customersIn(r: TimeRange): SimCustomer[] {
    const now = this.opts.now()
    const cut = this.data.customers.length - this.anomalies.guestCustomers
    return this.data.customers
      .filter((c) => c.no <= cut && c.registeredAt <= now && inRange(c.updatedAt, r))
      .sort((a, b) => a.updatedAt - b.updatedAt || a.no - b.no)
  }

  /** Orders by (lastChange, id); with `duplicateOrders`, the first ones are listed twice. */
  ordersIn(r: { updated: TimeRange; created: TimeRange }): OrderAt[] {
    const rows = this.view.at(this.opts.now()).filter((o) => inRange(o.lastChange, r.updated) && inRange(o.order.placedAt, r.created))
    const dup = this.anomalies.duplicateOrders
    if (!dup) return rows
    const out: OrderAt[] = []
    rows.forEach((o, i) => {
      out.push(o)
      if (i < dup) out.push(o)
    })
    return out
  }

  order(seq: number): OrderAt | null {
    return this.view.at(this.opts.now()).find((o) => o.order.seq === seq) ?? null
  }

  productsIn(r: TimeRange): typeof PRODUCTS[number][] {
    // One change time for the whole catalogue: by (updatedAt, skuId) is by SKU.
    return inRange(this.catalogUpdatedAt, r) && this.catalogUpdatedAt <= this.opts.now() ? [...PRODUCTS].sort((a, b) => (a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0)) : []
  }

  // ---- rendering in the platform's shapes ------------------------------------------------------

  customerId(no: number): string {
    return stableUuid(`${this.opts.accountName}|customer|${no}`)
  }

  renderCustomer(c: SimCustomer) {
    return {
      id: this.customerId(c.no),
      ...contactOf(c),
      isCorporate: false,
      registrationSource: c.registrationSource,
      createdIn: iso(c.registeredAt),
      updatedIn: iso(c.updatedAt),
      addresses: c.city || c.street ? [{ street: c.street, city: c.city, state: c.province, postalCode: c.postalCode, country: 'ARG' }] : [],
    }
  }

  renderOrder(v: OrderAt) {
    const o = v.order
    const c = this.data.customers.find((x) => x.no === o.customerNo)!
    const status = v.cancelledAt !== null ? 'canceled' : v.deliveredAt !== null || v.refund ? 'invoiced' : 'payment-approved'
    return {
      orderId: orderIdOf(o.seq),
      sequence: String(1_000_000 + o.seq),
      creationDate: iso(o.placedAt),
      lastChange: iso(v.lastChange),
      status,
      value: v.valueCents,
      totals: [
        { id: 'Items', name: 'Total de los items', value: o.itemsCents },
        { id: 'Discounts', name: 'Total de descuentos', value: 0 },
        { id: 'Shipping', name: 'Costo total del envío', value: o.shippingCents },
        { id: 'Tax', name: 'Total de impuestos', value: 0 },
      ],
      currencyCode: 'ARS',
      items: o.items.map((i) => ({ id: i.sku, refId: i.sku, productId: i.sku.split('-')[1], name: i.name, quantity: i.quantity, price: i.unitCents, sellingPrice: i.unitCents })),
      clientProfileData: { userProfileId: this.customerId(c.no), ...contactOf(c) },
      shippingData: { address: { street: c.street, city: c.city, state: c.province, postalCode: c.postalCode, country: 'ARG' } },
      invoicedDate: v.deliveredAt !== null ? iso(v.deliveredAt) : v.refund ? iso(v.refund.at) : null,
      cancellationDate: v.cancelledAt !== null ? iso(v.cancelledAt) : null,
      refunds: v.refund ? [{ value: v.refund.cents, date: iso(v.refund.at) }] : [],
    }
  }

  renderProduct(p: (typeof PRODUCTS)[number]) {
    const prefix = p.sku.split('-')[0]!
    return {
      productId: p.sku.split('-')[1],
      skuId: p.sku,
      refId: p.sku,
      name: p.name,
      category: CATEGORIES[prefix] ?? prefix,
      brand: null,
      price: p.refPrice * 100,
      isActive: true,
      updatedAt: iso(this.catalogUpdatedAt),
    }
  }

  renderAccount(appKey: string) {
    return {
      id: this.opts.accountId,
      accountName: this.opts.accountName,
      tradingName: this.opts.accountName,
      isActive: this.opts.isActive,
      hosts: this.opts.hosts,
      environments: this.opts.environments,
      resources: this.resourcesOf(appKey),
    }
  }

  snapshot() {
    return {
      account: { name: this.opts.accountName, id: this.opts.accountId, environments: this.opts.environments },
      customers: this.data.customers.length,
      orders: this.data.orders.length,
      appKeys: [...this.appKeys.keys()],
      faults: this.faults,
      anomalies: this.anomalies,
      rateLimit: { requests: this.window.limit, windowMs: this.window.windowMs },
      requests: this.requestLog.length,
    }
  }
}
