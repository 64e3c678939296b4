import { describe, expect, it } from 'vitest'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import {
  customerSemanticErrors,
  deriveEventId,
  fieldErrorsFromZod,
  IngestBatchSchema,
  orderSemanticErrors,
  parseIsoTimestamp,
  validateCustomerInput,
  validateOrderInput,
  type FieldError,
  type Validated,
} from '../../pipelines/ingest/validation.ts'

const NOW = Date.UTC(2024, 4, 20, 12, 0, 0) // 2024-05-20T12:00:00Z
// The tenant's currency: a blank one takes it (there is no silent default).
const ctx = { defaultSource: 'import', now: NOW, tenantCurrency: 'ARS' }
const T = Date.UTC(2024, 4, 1, 13, 0, 0) // 2024-05-01T13:00:00Z
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const baseOrder = { tenant_id: 1, order_id: 'A-1', customer_id: 7, total: '25.00', occurred_at: T }

function value<T>(r: Validated<T>): T {
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r.errors)}`)
  return r.value
}
function errors<T>(r: Validated<T>): FieldError[] {
  if (r.ok) throw new Error(`expected errors, got ${JSON.stringify(r.value)}`)
  return r.errors
}
/** [path, code] pairs: messages are asserted separately where they matter. */
function codes<T>(r: Validated<T>): [string, string][] {
  return errors(r).map((e) => [e.path, e.code])
}

describe('validateOrderInput: normalisation', () => {
  it('fills defaults and normalises amounts and timestamps', () => {
    const event = value(
      validateOrderInput(
        {
          tenant_id: '1',
          order_id: '  A-1 ',
          customer_id: '7',
          total: 25,
          occurred_at: '2024-05-01T10:00:00-03:00',
          items: [{ sku: 'SKU-1', quantity: 2, unit_price: 12.5 }],
          unknown_column: 'dropped',
        },
        ctx,
      ),
    )
    expect(event).toEqual({
      event_id: deriveEventId(['order', 1, 'placed', 'A-1', 'paid', T]),
      tenant_id: 1,
      occurred_at: T,
      source: 'import',
      event_type: 'placed',
      order_id: 'A-1',
      customer_id: 7,
      status: 'paid',
      total: '25.00',
      currency: 'ARS',
      refunded_amount: null,
      items: [{ sku: 'SKU-1', name: null, quantity: 2, unit_price: '12.50' }],
      placed_at: T,
    } satisfies OrderEvent)
    expect(event.event_id).toMatch(UUID)
  })

  it('keeps given values over defaults', () => {
    const event = value(
      validateOrderInput(
        {
          ...baseOrder,
          event_id: 'evt-42',
          source: 'marketplace',
          event_type: 'Refunded',
          status: 'refunded_partially',
          currency: 'usd',
          total: '100',
          refunded_amount: '30.5',
          placed_at: '2024-04-30',
          items: [],
        },
        { ...ctx, tenantCurrency: null },
      ),
    )
    expect(event).toMatchObject({
      event_id: 'evt-42',
      source: 'marketplace',
      event_type: 'refunded',
      status: 'refunded_partially',
      currency: 'USD',
      total: '100.00',
      refunded_amount: '30.50',
      placed_at: Date.UTC(2024, 3, 30),
      items: [],
    })
  })

  it.each([
    ['cancelled', 'cancelled'],
    ['refunded', 'refunded'],
    ['placed', 'paid'],
  ])('defaults status of %s events to %s', (eventType, status) => {
    expect(value(validateOrderInput({ ...baseOrder, event_type: eventType }, ctx)).status).toBe(status)
  })

  it('requires a status for status_changed events', () => {
    expect(errors(validateOrderInput({ ...baseOrder, event_type: 'status_changed' }, ctx))).toEqual([
      { path: 'status', code: 'required', message: 'is required for status_changed events' },
    ])
  })

  it('treats blank optional strings as absent', () => {
    const event = value(validateOrderInput({ ...baseOrder, status: '  ', currency: '', source: null, items: [{ sku: 'X', name: ' ', quantity: '1', unit_price: '25' }] }, ctx))
    expect([event.status, event.currency, event.source, event.items]).toEqual(['paid', 'ARS', 'import', [{ sku: 'X', name: null, quantity: 1, unit_price: '25.00' }]])
  })

  it.each([
    ['2024-05-01T13:00:00Z', T],
    ['2024-05-01T13:00:00.000Z', T],
    ['2024-05-01T13:00:00', T], // no zone: UTC
    ['2024-05-01 13:00:00', T],
    ['2024-05-01T10:00-03:00', T],
    ['2024-05-01T15:00:00+0200', T],
    ['2024-05-01T13:00:00.5z', T + 500],
    ['2024-05-01T13:00:00,123456Z', T + 123],
    ['2024-05-01', Date.UTC(2024, 4, 1)],
    [String(T), T],
    [T, T],
  ])('occurred_at %j -> %d', (input, expected) => {
    expect(value(validateOrderInput({ ...baseOrder, occurred_at: input, placed_at: T - 86_400_000 }, ctx)).occurred_at).toBe(expected)
  })
})

describe('validateOrderInput: errors', () => {
  it('rejects a negative total on an order; without a type it is a credit note', () => {
    expect(errors(validateOrderInput({ ...baseOrder, event_type: 'placed', total: '-5' }, ctx))).toEqual([
      { path: 'total', code: 'negative_total', message: 'total -5.00 is negative (a credit note not tied to an order is event_type credit_note)' },
    ])
    const { event_type: _, ...untyped } = baseOrder as Record<string, unknown>
    expect(value(validateOrderInput({ ...untyped, order_id: 'C536379', total: '-5' }, ctx))).toMatchObject({ event_type: 'credit_note', status: 'credited', order_id: 'C536379', total: '-5.00' })
  })

  it('reports a missing customer_id', () => {
    const { customer_id: _, ...input } = baseOrder
    expect(errors(validateOrderInput(input, ctx))).toEqual([{ path: 'customer_id', code: 'required', message: 'is required' }])
  })

  it('reports every malformed field at once, with dotted paths', () => {
    const r = validateOrderInput(
      {
        tenant_id: 0,
        customer_id: 'abc',
        total: '10.005',
        occurred_at: 'yesterday',
        currency: 'pesos',
        event_type: 'shipped',
        items: [{ sku: 'A', quantity: 1, unit_price: '1.999' }, { quantity: 'x', unit_price: true }],
      },
      ctx,
    )
    expect(codes(r)).toEqual([
      ['tenant_id', 'too_small'],
      ['occurred_at', 'invalid_timestamp'],
      ['event_type', 'invalid_value'],
      ['order_id', 'required'],
      ['customer_id', 'invalid_type'],
      ['total', 'too_many_decimals'],
      ['currency', 'invalid_currency'],
      ['items.0.unit_price', 'too_many_decimals'],
      ['items.1.sku', 'required'],
      ['items.1.quantity', 'invalid_type'],
      ['items.1.unit_price', 'invalid_type'],
    ])
    expect(errors(r).find((e) => e.path === 'total')).toEqual({ path: 'total', code: 'too_many_decimals', message: '10.005 has more than 2 decimals' })
  })

  it.each([
    ['10000000000000', 'too_many_digits'],
    [Number.NaN, 'not_finite'],
    ['Infinity', 'not_finite'],
    ['12,50', 'invalid_decimal'],
    [{}, 'invalid_type'],
  ])('rejects total %j with %s', (total, code) => {
    expect(codes(validateOrderInput({ ...baseOrder, total }, ctx))).toEqual([['total', code]])
  })

  it.each([
    [1_714_568_400, 'epoch seconds'],
    ['2024-02-30T00:00:00Z', 'impossible date'],
    ['2024-05-01T24:00:00Z', 'hour 24'],
    ['01/05/2024', 'not ISO'],
    [T + 0.5, 'fractional ms'],
  ])('rejects occurred_at %j (%s)', (occurred_at, _why) => {
    expect(codes(validateOrderInput({ ...baseOrder, occurred_at }, ctx))).toEqual([['occurred_at', 'invalid_timestamp']])
  })

  it('rejects a non-object record', () => {
    expect(errors(validateOrderInput([1], ctx))).toEqual([{ path: '', code: 'invalid_type', message: 'Invalid input: expected object, received array' }])
    expect(codes(validateOrderInput('x', ctx))).toEqual([['', 'invalid_type']])
  })

  it('rejects items that do not add up to the total of a placed order', () => {
    const items = [
      { sku: 'A', quantity: 3, unit_price: '0.10' },
      { sku: 'B', quantity: 1, unit_price: '24.60' },
    ]
    expect(value(validateOrderInput({ ...baseOrder, total: '24.90', items }, ctx)).items).toHaveLength(2)
    expect(errors(validateOrderInput({ ...baseOrder, total: '24.91', items }, ctx))).toEqual([
      { path: 'items', code: 'items_total_mismatch', message: 'items add up to 24.90 but total is 24.91' },
    ])
    // Later events may carry a changed total with the original items.
    expect(value(validateOrderInput({ ...baseOrder, event_type: 'cancelled', total: '0', items }, ctx)).total).toBe('0.00')
  })

  it.each([0, -1, 1.5])('rejects quantity %j', (quantity) => {
    expect(codes(validateOrderInput({ ...baseOrder, items: [{ sku: 'A', quantity, unit_price: '25' }] }, ctx))).toEqual([
      ['items.0.quantity', 'invalid_quantity'],
    ])
  })

  it('rejects negative refunds; a full refund may exceed the remaining total', () => {
    expect(value(validateOrderInput({ ...baseOrder, event_type: 'refunded', total: '0.00', items: [], refunded_amount: '25.00' }, ctx)).refunded_amount).toBe('25.00')
    expect(errors(validateOrderInput({ ...baseOrder, event_type: 'refunded', refunded_amount: '-0.01' }, ctx))).toEqual([
      { path: 'refunded_amount', code: 'invalid_refund', message: 'refunded_amount -0.01 is negative' },
    ])
    expect(codes(validateOrderInput({ ...baseOrder, event_type: 'refunded', refunded_amount: -1 }, ctx))).toEqual([['refunded_amount', 'invalid_refund']])
    expect(value(validateOrderInput({ ...baseOrder, event_type: 'refunded', refunded_amount: 25 }, ctx)).refunded_amount).toBe('25.00')
  })

  it('rejects occurred_at more than 5 minutes in the future', () => {
    expect(value(validateOrderInput({ ...baseOrder, occurred_at: NOW + 5 * 60_000 }, ctx)).occurred_at).toBe(NOW + 300_000)
    expect(errors(validateOrderInput({ ...baseOrder, occurred_at: NOW + 5 * 60_000 + 1 }, ctx))).toEqual([
      { path: 'occurred_at', code: 'future_timestamp', message: 'occurred_at 2024-05-20T12:05:00.001Z is more than 5 minutes in the future' },
    ])
  })

  it('rejects placed_at after occurred_at', () => {
    expect(errors(validateOrderInput({ ...baseOrder, placed_at: T + 1 }, ctx))).toEqual([
      { path: 'placed_at', code: 'invalid_timestamps', message: 'placed_at is after occurred_at' },
    ])
  })
})

describe('tenant', () => {
  const { tenant_id: _, ...noTenant } = baseOrder

  it('is required without a caller tenant', () => {
    expect(errors(validateOrderInput(noTenant, ctx))).toEqual([{ path: 'tenant_id', code: 'required', message: 'is required' }])
  })

  it('comes from the caller when omitted, and must match it when given', () => {
    expect(value(validateOrderInput(noTenant, { ...ctx, tenantId: 9 })).tenant_id).toBe(9)
    expect(value(validateOrderInput({ ...baseOrder, tenant_id: '9' }, { ...ctx, tenantId: 9 })).tenant_id).toBe(9)
    expect(errors(validateOrderInput({ ...baseOrder, tenant_id: 2 }, { ...ctx, tenantId: 9 }))).toEqual([
      { path: 'tenant_id', code: 'tenant_mismatch', message: "tenant_id 2 does not match the caller's tenant 9" },
    ])
    expect(codes(validateCustomerInput({ tenant_id: 2, customer_id: 1, occurred_at: T }, { ...ctx, tenantId: 9 }))).toEqual([['tenant_id', 'tenant_mismatch']])
  })
})

describe('derived event ids', () => {
  const idOf = (input: Record<string, unknown>, c: { defaultSource: string; now: number; tenantId?: number } = ctx) =>
    value(validateOrderInput(input, c)).event_id

  it('is pinned: changing the derivation would re-create every imported event', () => {
    expect(idOf(baseOrder)).toBe(deriveEventId(['order', 1, 'placed', 'A-1', 'paid', T]))
    expect(deriveEventId(['order', 1, 'placed', 'A-1', 'paid', T])).toBe('15c08dee-81a9-8451-86bc-1b2bc277d885')
  })

  it('is the same for the same event, however it is spelled or delivered', () => {
    const id = idOf(baseOrder)
    expect(idOf({ ...baseOrder })).toBe(id)
    expect(idOf({ ...baseOrder, occurred_at: '2024-05-01T10:00:00-03:00', tenant_id: '1', total: 25 })).toBe(id)
    expect(idOf({ ...baseOrder, source: 'http' })).toBe(id)
    expect(idOf({ ...baseOrder, status: 'paid' })).toBe(id)
    const { tenant_id: _, ...noTenant } = baseOrder
    expect(idOf(noTenant, { ...ctx, tenantId: 1 })).toBe(id)
  })

  it('differs when status, type, order, tenant or time differ', () => {
    const ids = [
      idOf(baseOrder),
      idOf({ ...baseOrder, status: 'shipped' }),
      idOf({ ...baseOrder, event_type: 'cancelled' }),
      idOf({ ...baseOrder, order_id: 'A-2' }),
      idOf({ ...baseOrder, tenant_id: 2 }),
      idOf({ ...baseOrder, occurred_at: T - 1 }),
    ]
    expect(new Set(ids).size).toBe(6)
    for (const id of ids) expect(id).toMatch(UUID)
  })

  it('is derived for customers from tenant, customer and time', () => {
    const input = { tenant_id: 1, customer_id: 7, occurred_at: T }
    const id = value(validateCustomerInput(input, ctx)).event_id
    expect(id).toBe('676a6194-d9b4-815e-b686-d0d95d30b35a')
    expect(value(validateCustomerInput({ ...input, email: 'x@y.com', source: 'http' }, ctx)).event_id).toBe(id)
    expect(value(validateCustomerInput({ ...input, customer_id: 8 }, ctx)).event_id).not.toBe(id)
  })
})

describe('validateCustomerInput', () => {
  it('normalises a profile', () => {
    const event = value(
      validateCustomerInput(
        {
          tenant_id: '3',
          customer_id: '42',
          occurred_at: '2024-05-01T13:00:00Z',
          email: '  Ana.Perez@Example.com ',
          first_name: ' Ana ',
          last_name: '',
          phone: 1145678901,
          national_id: '20-12345678-3',
          country: 'ar',
          created_at: '2023-01-15',
          source_ids: [{ source: 'shop', id: 981 }],
        },
        ctx,
      ),
    )
    expect(event).toEqual({
      event_id: deriveEventId(['customer', 3, 42, T]),
      tenant_id: 3,
      occurred_at: T,
      source: 'import',
      customer_id: 42,
      email: 'Ana.Perez@Example.com',
      first_name: 'Ana',
      last_name: null,
      phone: '1145678901',
      national_id: '20-12345678-3',
      street: null,
      city: null,
      province: null,
      postal_code: null,
      country: 'AR',
      registration_source: null,
      created_at: Date.UTC(2023, 0, 15),
      source_ids: [{ source: 'shop', id: '981' }],
    } satisfies CustomerUpserted)
  })

  it('rejects a bad email', () => {
    expect(errors(validateCustomerInput({ tenant_id: 1, customer_id: 1, occurred_at: T, email: 'ana@' }, ctx))).toEqual([
      { path: 'email', code: 'invalid_email', message: '"ana@" does not look like an email address' },
    ])
    expect(codes(validateCustomerInput({ tenant_id: 1, customer_id: 1, occurred_at: T, email: `${'a'.repeat(250)}@x.com` }, ctx))).toEqual([['email', 'too_big']])
    expect(codes(validateCustomerInput({ tenant_id: 1, customer_id: 1, occurred_at: T, email: 'a b@x.com' }, ctx))).toEqual([['email', 'invalid_email']])
  })

  it.each(['XX', 'zz', 'EU', 'QM', 'UK'])('refuses %s: two letters, but not an assigned ISO 3166-1 country code', (country) => {
    expect(codes(validateCustomerInput({ tenant_id: 1, customer_id: 5, occurred_at: NOW, country }, ctx))).toEqual([['country', 'invalid_country']])
  })

  it.each([['ar', 'AR'], ['Uy', 'UY'], [' br ', 'BR'], ['AX', 'AX']])('accepts %j as %s', (given, code) => {
    const r = validateCustomerInput({ tenant_id: 1, customer_id: 5, occurred_at: NOW, country: given }, ctx)
    expect(r.ok && r.value.country).toBe(code)
  })

  it('reports missing and malformed fields', () => {
    expect(codes(validateCustomerInput({ tenant_id: 1, country: 'Argentina', created_at: 'soon', source_ids: [{ id: 'x' }] }, ctx))).toEqual([
      ['occurred_at', 'required'],
      ['customer_id', 'required'],
      ['country', 'invalid_country'],
      ['created_at', 'invalid_timestamp'],
      ['source_ids.0.source', 'required'],
    ])
  })
})

describe('semantic checks on decoded events', () => {
  const order: OrderEvent = {
    event_id: 'e1',
    tenant_id: 1,
    occurred_at: T,
    source: 'commerce_platform',
    event_type: 'placed',
    order_id: 'A-1',
    customer_id: 7,
    status: 'paid',
    total: '25.00',
    currency: 'ARS',
    refunded_amount: null,
    items: [{ sku: 'A', name: null, quantity: 2, unit_price: '12.50' }],
    placed_at: T,
  }

  it('accepts a valid order', () => {
    expect(orderSemanticErrors(order, NOW)).toEqual([])
  })

  it('flags malformed decoded orders', () => {
    const bad: OrderEvent = { ...order, tenant_id: 0, total: '12.345', currency: 'ars', items: [{ sku: '', name: null, quantity: 2, unit_price: 'x' }], placed_at: T + 1 }
    expect(orderSemanticErrors(bad, NOW).map((e) => [e.path, e.code])).toEqual([
      ['tenant_id', 'invalid_id'],
      ['currency', 'invalid_currency'],
      ['total', 'too_many_decimals'],
      ['items.0.sku', 'required'],
      ['items.0.unit_price', 'invalid_decimal'],
      ['placed_at', 'invalid_timestamps'],
    ])
  })

  it('adds up items exactly even where the sum passes 2^53 cents (a float sum reads -1 here, the exact one 1)', () => {
    const max = '9999999999999.99'
    const items = [
      { sku: 'A', name: null, quantity: 11, unit_price: max },
      { sku: 'B', name: null, quantity: 1, unit_price: `-${max}` },
      { sku: 'C', name: null, quantity: 10, unit_price: `-${max}` },
      { sku: 'D', name: null, quantity: 1, unit_price: '0.01' },
    ]
    expect(orderSemanticErrors({ ...order, total: '0.01', items }, NOW)).toEqual([])
    expect(orderSemanticErrors({ ...order, total: '0.02', items }, NOW)).toEqual([{ path: 'items', code: 'items_total_mismatch', message: 'items add up to 0.01 but total is 0.02' }])
    // A line past 2^53 after a negative one: the running sum stays safe, the product does not.
    const lines = [
      { sku: 'A', name: null, quantity: 9, unit_price: `-${max}` },
      { sku: 'B', name: null, quantity: 11, unit_price: '8188362958855.45' },
    ]
    expect(orderSemanticErrors({ ...order, total: '71992547410.04', items: lines }, NOW)).toEqual([])
    expect(orderSemanticErrors({ ...order, total: '71992547410.05', items: lines }, NOW).map((e) => e.code)).toEqual(['items_total_mismatch'])
    // A path is built for the item at fault only, amounts outside the fast path included.
    const odd = [{ sku: ' ', name: null, quantity: 1, unit_price: ' 12.50 ' }, { sku: 'B', name: null, quantity: 1, unit_price: '12.505' }]
    expect(orderSemanticErrors({ ...order, items: odd }, NOW).map((e) => [e.path, e.code])).toEqual([
      ['items.0.sku', 'required'],
      ['items.1.unit_price', 'too_many_decimals'],
    ])
  })

  it('flags malformed decoded customers', () => {
    const customer = value(validateCustomerInput({ tenant_id: 1, customer_id: 7, occurred_at: T, email: 'a@b.co' }, ctx))
    expect(customerSemanticErrors(customer)).toEqual([])
    expect(customerSemanticErrors({ ...customer, customer_id: -1, email: 'nope', country: 'ar', created_at: 12 }).map((e) => [e.path, e.code])).toEqual([
      ['customer_id', 'invalid_id'],
      ['email', 'invalid_email'],
      ['country', 'invalid_country'],
      ['created_at', 'invalid_timestamp'],
    ])
  })
})

describe('IngestBatchSchema', () => {
  it('accepts 1 to 10,000 events', () => {
    expect(IngestBatchSchema.safeParse({ events: [{}] }).success).toBe(true)
    expect(IngestBatchSchema.safeParse({ events: new Array(10_000).fill({}) }).success).toBe(true)
  })

  it.each([
    [{ events: [] }, [['events', 'too_small']]],
    [{ events: new Array(10_001).fill({}) }, [['events', 'too_big']]],
    [{}, [['events', 'invalid_type']]],
    [[], [['', 'invalid_type']]],
  ])('rejects %#', (body, expected) => {
    const r = IngestBatchSchema.safeParse(body)
    expect(r.success ? [] : fieldErrorsFromZod(r.error.issues).map((e) => [e.path, e.code])).toEqual(expected)
  })
})

describe('parseIsoTimestamp', () => {
  it('returns null for invalid dates rather than rolling them over', () => {
    expect(parseIsoTimestamp('2023-02-29')).toBeNull()
    expect(parseIsoTimestamp('2024-02-29')).toBe(Date.UTC(2024, 1, 29))
    expect(parseIsoTimestamp('2024-13-01')).toBeNull()
    expect(parseIsoTimestamp('2024-01-01T10:60:00Z')).toBeNull()
    expect(parseIsoTimestamp('2024-01-01T10:00:00+25:00')).toBeNull()
    expect(parseIsoTimestamp('0099-01-01')).toBe(-59042995200000) // not 1999
    expect(parseIsoTimestamp('0000-02-29')).toBe(-62162121600000) // leap in the proleptic calendar, unlike 1900
  })
})
