import fs from 'node:fs'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { avroType } from '../../common/eventlog/schema-registry.ts'
import { JURISDICTIONS } from '../../pipelines/ingest/synthetic/argentina.ts'
import { generateEvents, generateOrderEvents, type GeneratedEvent, type GenerateOptions } from '../../pipelines/ingest/synthetic/generate.ts'
import {
  cuilCheckDigit,
  cuilFor,
  dniForBirthYear,
  formatCuil,
  formatDni,
  formatPhone,
  isValidCuil,
  typicalDniForBirthYear,
} from '../../pipelines/ingest/synthetic/identity.ts'
import { toCents } from '../../common/decimal.ts'

const decimalToCents = (s: string): number => Number(toCents(s))
import { Rng } from '../../pipelines/ingest/synthetic/random.ts'

const WINDOW = { start: new Date('2023-01-01T00:00:00Z'), end: new Date('2025-01-01T00:00:00Z') }
const BASE: GenerateOptions = { tenantId: 3, customers: 200, seed: 'test-seed', ...WINDOW }
const MONEY = /^\d+\.\d{2}$/

function collect(opts: GenerateOptions): GeneratedEvent[] {
  return [...generateEvents(opts)]
}
const customersOf = (events: GeneratedEvent[]) =>
  events.filter((e) => e.topic === 'customers').map((e) => e.value as CustomerUpserted)
const ordersOf = (events: GeneratedEvent[]) => events.filter((e) => e.topic === 'orders').map((e) => e.value as OrderEvent)

/** One shared sample: generation is deterministic, so tests can read it without interfering. */
const sample = collect(BASE)

afterEach(() => {
  vi.restoreAllMocks()
})

describe('determinism', () => {
  it('same seed gives byte-identical output, a different seed different output', () => {
    expect(JSON.stringify(collect(BASE))).toBe(JSON.stringify(sample))
    expect(JSON.stringify(collect({ ...BASE, seed: 'other-seed' }))).not.toBe(JSON.stringify(sample))
    // A numeric seed works too and is as reproducible.
    expect(JSON.stringify(collect({ ...BASE, seed: 7, customers: 20 }))).toBe(JSON.stringify(collect({ ...BASE, seed: 7, customers: 20 })))
  })

  it('never calls Math.random', () => {
    vi.spyOn(Math, 'random').mockImplementation(() => {
      throw new Error('Math.random used')
    })
    expect(() => collect({ ...BASE, customers: 30 })).not.toThrow()
    expect(() => [...generateOrderEvents({ tenantId: 1, count: 50, customers: 5, seed: 1, ...WINDOW })]).not.toThrow()
  })

  it('a customer does not depend on how many customers are generated', () => {
    const small = collect({ ...BASE, customers: 10 })
    expect(JSON.stringify(customersOf(small))).toBe(JSON.stringify(customersOf(sample).slice(0, 10)))
  })

  it('event ids are UUID-shaped and unique', () => {
    const ids = sample.map((e) => e.value.event_id)
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(new Set(ids).size).toBe(ids.length)
  })
})

describe('counts and shape', () => {
  it('200 customers give 200 customer events and a plausible number of orders', () => {
    const customers = customersOf(sample)
    expect(customers).toHaveLength(200)
    expect(customers.map((c) => c.customer_id)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1))
    const placed = ordersOf(sample).filter((o) => o.event_type === 'placed')
    expect(placed.length).toBeGreaterThan(250)
    expect(placed.length).toBeLessThan(1500)
    expect(new Set(placed.map((o) => o.order_id)).size).toBe(placed.length)
    for (const o of placed) expect(o.order_id).toMatch(/^ORD-3-\d+$/)
  })

  it('keys are tenant:customer and every value fits its Avro schema (encode/decode round trip)', () => {
    const schema = (name: string) => fs.readFileSync(new URL(`../../schemas/avro/${name}.avsc`, import.meta.url), 'utf8')
    const fieldNames = (json: string) => (JSON.parse(json) as { fields: { name: string }[] }).fields.map((f) => f.name).sort()
    const schemas = { customers: schema('customer-upserted'), orders: schema('order-event') }
    const types = { customers: avroType(schemas.customers), orders: avroType(schemas.orders) }
    const fields = { customers: fieldNames(schemas.customers), orders: fieldNames(schemas.orders) }
    for (const event of sample) {
      const value = event.value as CustomerUpserted | OrderEvent
      expect(event.key).toBe(`3:${value.customer_id}`)
      // avsc accepts a missing nullable field as null: check that every field is really present.
      expect(Object.keys(value).sort()).toEqual(fields[event.topic])
      const type = types[event.topic]
      const errors: string[] = []
      const valid = type.isValid(value, { errorHook: (path) => errors.push(path.join('.')) })
      expect(errors, `${event.topic} ${value.event_id}`).toEqual([])
      expect(valid).toBe(true)
      expect(type.fromBuffer(type.toBuffer(value))).toEqual(value)
    }
  })

  it('customer fields: country AR, known registration sources, created_at before the first order', () => {
    for (const c of customersOf(sample)) {
      expect(c.country).toBe('AR')
      expect(['web', 'app', 'marketplace', 'store']).toContain(c.registration_source)
      expect(c.created_at).toBe(c.occurred_at)
      expect(c.source).toBe('generator')
      expect(c.source_ids[0]).toEqual({ source: 'generator', id: String(c.customer_id) })
    }
    const emails = customersOf(sample).flatMap((c) => (c.email === null ? [] : [c.email.toLowerCase()]))
    expect(new Set(emails).size).toBe(emails.length)
    for (const e of emails) expect(e).toMatch(/^[a-z._]+\d*@(gmail\.com|hotmail\.com|outlook\.com|yahoo\.com\.ar)$/)
  })

  it('uses the given source', () => {
    const events = collect({ ...BASE, customers: 5, source: 'import' })
    for (const e of events) expect(e.value.source).toBe('import')
  })
})

describe('per-customer ordering', () => {
  it('the upsert comes first and occurred_at never decreases within a customer', () => {
    const byCustomer = new Map<string, GeneratedEvent[]>()
    for (const e of sample) byCustomer.set(e.key, [...(byCustomer.get(e.key) ?? []), e])
    expect(byCustomer.size).toBe(200)
    for (const events of byCustomer.values()) {
      expect(events[0]!.topic).toBe('customers')
      expect(events.filter((e) => e.topic === 'customers')).toHaveLength(1)
      const created = (events[0]!.value as CustomerUpserted).created_at!
      for (let i = 1; i < events.length; i++) {
        expect(events[i]!.value.occurred_at).toBeGreaterThanOrEqual(events[i - 1]!.value.occurred_at)
        expect((events[i]!.value as OrderEvent).placed_at).toBeGreaterThan(created)
      }
    }
  })

  it('all events fall inside [start, end)', () => {
    for (const e of sample) {
      expect(e.value.occurred_at).toBeGreaterThanOrEqual(WINDOW.start.getTime())
      expect(e.value.occurred_at).toBeLessThan(WINDOW.end.getTime())
    }
  })
})

describe('money', () => {
  it('totals, refunds and unit prices are non-negative decimals with exactly 2 places', () => {
    for (const o of ordersOf(sample)) {
      expect(o.total).toMatch(MONEY)
      expect(o.currency).toBe('ARS')
      if (o.refunded_amount !== null) expect(o.refunded_amount).toMatch(MONEY)
      for (const item of o.items) expect(item.unit_price).toMatch(MONEY)
    }
  })

  it('item sums equal the total wherever items are listed', () => {
    const withItems = ordersOf(sample).filter((o) => o.items.length > 0)
    expect(withItems.length).toBeGreaterThan(0)
    for (const o of withItems) {
      expect(o.items.length).toBeLessThanOrEqual(4)
      const sum = o.items.reduce((s, i) => s + i.quantity * decimalToCents(i.unit_price), 0)
      expect(sum).toBe(decimalToCents(o.total))
    }
    for (const o of ordersOf(sample).filter((x) => x.event_type === 'placed')) {
      expect(o.status).toBe('paid')
      expect(o.items.length).toBeGreaterThanOrEqual(1)
      const total = decimalToCents(o.total)
      expect(total).toBeGreaterThanOrEqual(500_000)
      expect(total).toBeLessThanOrEqual(30_000_000)
    }
  })

  it('cancelled orders go to 0.00; refunds subtract from the placed total', () => {
    const events = collect({ ...BASE, customers: 2000, seed: 'lifecycle' })
    const orders = ordersOf(events)
    const placedTotal = new Map(orders.filter((o) => o.event_type === 'placed').map((o) => [o.order_id, decimalToCents(o.total)]))
    const cancelled = orders.filter((o) => o.event_type === 'cancelled')
    const refunded = orders.filter((o) => o.event_type === 'refunded')
    const delivered = orders.filter((o) => o.event_type === 'status_changed')
    const share = (n: number) => n / placedTotal.size
    expect(share(cancelled.length)).toBeGreaterThan(0.01)
    expect(share(cancelled.length)).toBeLessThan(0.06)
    expect(share(refunded.length)).toBeGreaterThan(0.005)
    expect(share(refunded.length)).toBeLessThan(0.04)
    expect(share(delivered.length)).toBeGreaterThan(0.5)
    for (const o of cancelled) expect([o.status, o.total]).toEqual(['cancelled', '0.00'])
    for (const o of delivered) expect(o.status).toBe('delivered')
    let partial = 0
    for (const o of refunded) {
      expect(o.status).toBe('refunded')
      const refund = decimalToCents(o.refunded_amount!)
      expect(refund).toBeGreaterThan(0)
      expect(decimalToCents(o.total) + refund).toBe(placedTotal.get(o.order_id))
      if (decimalToCents(o.total) > 0) partial++
    }
    expect(partial).toBeGreaterThan(0)
    expect(partial).toBeLessThan(refunded.length)
  })
})

describe('buying behaviour', () => {
  it('has both one-time and repeat buyers, and some who never bought', () => {
    const placedPerCustomer = new Map<number, number>()
    for (const o of ordersOf(sample)) {
      if (o.event_type === 'placed') placedPerCustomer.set(o.customer_id, (placedPerCustomer.get(o.customer_id) ?? 0) + 1)
    }
    const counts = [...placedPerCustomer.values()]
    const oneTime = counts.filter((n) => n === 1).length
    const repeat = counts.filter((n) => n >= 2).length
    expect(oneTime).toBeGreaterThan(200 * 0.15)
    expect(repeat).toBeGreaterThan(200 * 0.2)
    expect(Math.max(...counts)).toBeGreaterThanOrEqual(5)
    expect(placedPerCustomer.size).toBeLessThan(200)
  })

  it('seasonality: December has more orders than February over a large sample', () => {
    const byMonth = new Array<number>(12).fill(0)
    for (const e of generateEvents({ ...BASE, customers: 4000, seed: 'season' })) {
      const v = e.value as OrderEvent
      if (e.topic !== 'orders' || v.event_type !== 'placed') continue
      const month = new Date(v.placed_at - 3 * 3600_000).getUTCMonth() // Argentina time
      byMonth[month]!++
    }
    expect(byMonth[11]!).toBeGreaterThan(byMonth[1]! * 1.5)
    expect(byMonth[10]!).toBeGreaterThan(byMonth[0]!)
  })
})

describe('dirty records', () => {
  const canonicalProvinces = new Set(JURISDICTIONS.map((j) => j.name))

  it('dirtyShare 0 gives canonical provinces, digit-only national ids, international phones', () => {
    for (const c of customersOf(collect({ ...BASE, dirtyShare: 0 }))) {
      expect(canonicalProvinces.has(c.province!)).toBe(true)
      if (c.national_id !== null) expect(c.national_id).toMatch(/^\d{7,8}$|^\d{11}$/)
      if (c.phone !== null) expect(c.phone).toMatch(/^\+54 ?9/)
      expect(c.postal_code).toMatch(/^[A-Z]?\d{4}([A-Z]{3})?$/)
    }
  })

  it('the default share yields aliases, dotted DNIs, dashed CUILs and local phone formats', () => {
    const customers = customersOf(collect({ ...BASE, customers: 1000, seed: 'dirty' }))
    const messyProvinces = customers.filter((c) => !canonicalProvinces.has(c.province!)).length
    expect(messyProvinces).toBeGreaterThan(1000 * 0.05)
    expect(messyProvinces).toBeLessThan(1000 * 0.3)
    expect(customers.some((c) => c.national_id !== null && /^\d{1,2}\.\d{3}\.\d{3}$/.test(c.national_id))).toBe(true)
    expect(customers.some((c) => c.national_id !== null && /^\d{2}-\d{8}-\d$/.test(c.national_id))).toBe(true)
    expect(customers.some((c) => c.phone !== null && /^0\d+ /.test(c.phone))).toBe(true)
    expect(customers.some((c) => c.province === 'Capital Federal' || c.province === 'Bs As' || c.province === 'CABA')).toBe(true)
  })

  it('every CUIL generated has a valid check digit', () => {
    const customers = customersOf(collect({ ...BASE, customers: 1000, seed: 'cuil' }))
    let checked = 0
    for (const c of customers) {
      const digits = c.national_id?.replace(/\D/g, '') ?? ''
      if (digits.length !== 11) continue
      checked++
      expect(isValidCuil(digits), c.national_id!).toBe(true)
      expect(['20', '23', '27']).toContain(digits.slice(0, 2))
    }
    expect(checked).toBeGreaterThan(100)
  })
})

describe('CUIL check digit', () => {
  it('matches hand-computed examples', () => {
    // Weights 5,4,3,2,7,6,5,4,3,2 over prefix + DNI; result = 11 − (sum mod 11).
    // 20-12345678-?: 2·5 + 0·4 + 1·3 + 2·2 + 3·7 + 4·6 + 5·5 + 6·4 + 7·3 + 8·2
    //              = 10 + 0 + 3 + 4 + 21 + 24 + 25 + 24 + 21 + 16 = 148; 148 mod 11 = 5; 11 − 5 = 6.
    expect(cuilCheckDigit('2012345678')).toBe(6)
    expect(isValidCuil('20-12345678-6')).toBe(true)
    expect(isValidCuil('20-12345678-7')).toBe(false)
    // 20-05536168-?: 10 + 0 + 0·3 + 5·2 + 5·7 + 3·6 + 6·5 + 1·4 + 6·3 + 8·2
    //              = 10 + 0 + 0 + 10 + 35 + 18 + 30 + 4 + 18 + 16 = 141; 141 mod 11 = 9; 11 − 9 = 2.
    expect(cuilCheckDigit('2005536168')).toBe(2)
    // 20-30000007-?: 10 + 0 + 3·3 + 7·2 = 33; 33 mod 11 = 0; 11 − 0 = 11 → 0.
    expect(cuilCheckDigit('2030000007')).toBe(0)
    expect(cuilFor(30_000_007, 'M')).toBe('20300000070')
  })

  it('moves to prefix 23 when 20/27 would need a 10 (9 for men, 4 for women)', () => {
    // 20-30000002-?: 10 + 0 + 9 + 2·2 = 23; 23 mod 11 = 1; 11 − 1 = 10 → not a digit.
    //   23-30000002-?: 2·5 + 3·4 + 3·3 + 2·2 = 10 + 12 + 9 + 4 = 35; 35 mod 11 = 2; 11 − 2 = 9.
    expect(cuilCheckDigit('2030000002')).toBeNull()
    expect(cuilFor(30_000_002, 'M')).toBe('23300000029')
    // 27-30000013-?: 10 + 7·4 + 9 + 1·3 + 3·2 = 10 + 28 + 9 + 3 + 6 = 56; 56 mod 11 = 1 → 10.
    //   23-30000013-?: 10 + 12 + 9 + 3 + 6 = 40; 40 mod 11 = 7; 11 − 7 = 4.
    expect(cuilCheckDigit('2730000013')).toBeNull()
    expect(cuilFor(30_000_013, 'F')).toBe('23300000134')
  })

  it('cuilFor is always valid, and formats as printed', () => {
    const rng = new Rng('cuil-property')
    for (let i = 0; i < 5000; i++) {
      const dni = rng.int(1_000_000, 59_999_999)
      const cuil = cuilFor(dni, rng.chance(0.5) ? 'F' : 'M')
      expect(isValidCuil(cuil), cuil).toBe(true)
      expect(cuil.slice(2, 10)).toBe(String(dni).padStart(8, '0'))
    }
    expect(formatCuil('20123456786', true)).toBe('20-12345678-6')
    expect(cuilFor(5_536_168, 'M')).toBe('20055361682') // DNIs under 10M are zero-padded
  })
})

describe('identity formats', () => {
  it('DNI numbers grow with birth year along the known anchors', () => {
    expect(typicalDniForBirthYear(1955)).toBeCloseTo(11_000_000, -5)
    expect(typicalDniForBirthYear(1968)).toBeCloseTo(20_000_000, -5)
    expect(typicalDniForBirthYear(1983)).toBeCloseTo(30_000_000, -5)
    expect(typicalDniForBirthYear(1997)).toBeCloseTo(40_000_000, -5)
    const rng = new Rng('dni')
    for (let year = 1940; year <= 2006; year++) {
      expect(typicalDniForBirthYear(year + 1)).toBeGreaterThan(typicalDniForBirthYear(year))
      const dni = dniForBirthYear(rng, year)
      expect(Math.abs(dni - typicalDniForBirthYear(year))).toBeLessThan(3_000_000)
    }
    expect(formatDni(30_123_456, true)).toBe('30.123.456')
    expect(formatDni(9_876_543, true)).toBe('9.876.543')
    expect(formatDni(30_123_456, false)).toBe('30123456')
  })

  it('phones in the usual spellings', () => {
    const phone = { areaCode: '11', subscriber: '41234567' }
    expect(formatPhone(phone, 'international')).toBe('+54 9 11 4123-4567')
    expect(formatPhone(phone, 'domestic')).toBe('011 4123 4567')
    expect(formatPhone(phone, 'domestic15')).toBe('011 15 4123-4567')
    expect(formatPhone({ areaCode: '351', subscriber: '4123456' }, 'compact')).toBe('3514123456')
    expect(formatPhone({ areaCode: '351', subscriber: '4123456' }, 'international')).toBe('+54 9 351 412-3456')
  })
})

describe('generateOrderEvents', () => {
  const opts = { tenantId: 9, count: 5000, customers: 300, seed: 'bench', ...WINDOW }

  it('yields exactly count placed events with distinct order ids, deterministically', () => {
    const events = [...generateOrderEvents(opts)]
    expect(events).toHaveLength(5000)
    const orders = events.map((e) => e.value as OrderEvent)
    expect(new Set(orders.map((o) => o.order_id)).size).toBe(5000)
    expect(new Set(orders.map((o) => o.event_id)).size).toBe(5000)
    for (const [i, o] of orders.entries()) {
      expect(o.event_type).toBe('placed')
      expect(o.customer_id).toBeGreaterThanOrEqual(1)
      expect(o.customer_id).toBeLessThanOrEqual(300)
      expect(events[i]!.key).toBe(`9:${o.customer_id}`)
      expect(o.total).toMatch(MONEY)
      if (i > 0) expect(o.occurred_at).toBeGreaterThanOrEqual(orders[i - 1]!.occurred_at)
    }
    expect(new Set(orders.map((o) => o.customer_id)).size).toBeGreaterThan(150)
    expect(JSON.stringify([...generateOrderEvents(opts)])).toBe(JSON.stringify(events))
    expect([...generateOrderEvents({ ...opts, count: 0 })]).toHaveLength(0)
  })
})

describe('random helpers', () => {
  it('distributions have the expected means', () => {
    const rng = new Rng(12345)
    const mean = (f: () => number, n = 20000) => {
      let s = 0
      for (let i = 0; i < n; i++) s += f()
      return s / n
    }
    expect(mean(() => rng.gamma(2, 3))).toBeCloseTo(6, 0)
    expect(mean(() => rng.gamma(0.5, 2))).toBeCloseTo(1, 0)
    expect(mean(() => rng.beta(2, 6))).toBeCloseTo(0.25, 1)
    expect(mean(() => rng.poisson(4))).toBeCloseTo(4, 0)
    expect(mean(() => rng.poisson(80), 2000)).toBeCloseTo(80, -1)
    expect(mean(() => rng.exponential(0.5))).toBeCloseTo(2, 0)
    expect(mean(() => rng.normal(10, 2))).toBeCloseTo(10, 0)
    const ints = new Set(Array.from({ length: 1000 }, () => rng.int(1, 6)))
    expect([...ints].sort()).toEqual([1, 2, 3, 4, 5, 6])
  })
})
