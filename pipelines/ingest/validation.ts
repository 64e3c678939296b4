/**
 * Validation and normalisation of inbound order and customer events (HTTP ingest and file
 * import). Pure: no I/O, the clock is passed in, so results are reproducible and testable.
 *
 * Validation runs in three stages, each reporting every error it finds:
 *   1. shape: a zod schema whose field parsers coerce the friendly input forms (digit strings,
 *      ISO dates, numeric amounts) and report a machine-readable code per field;
 *   2. context: tenant from the caller, defaults that depend on other fields (status, ids);
 *   3. semantics: orderSemanticErrors / customerSemanticErrors (common/event-rules.ts) on the
 *      finished event, the same checks consumers run on decoded records before dead-lettering them.
 * A later stage only runs when the earlier one passed, since it needs its values.
 *
 * Timestamps: epoch milliseconds (number or digit string) or ISO 8601. An ISO date-time without
 * a zone designator ("2024-03-01T10:00:00", "2024-03-01") is taken as UTC, never as the server's
 * local time, so the same file imports identically on every machine.
 */
import { createHash } from 'node:crypto'
import { ISO_3166_1_ALPHA_2 } from './countries.ts'
import { z } from 'zod'
import { DecimalError, normaliseAmount } from '../../common/decimal.ts'
import { customerSemanticErrors, emailIssue, FieldIssue, MAX_TIMESTAMP, MIN_TIMESTAMP, orderSemanticErrors, typeName, type FieldError } from '../../common/event-rules.ts'
import {
  ORDER_EVENT_TYPES,
  type CustomerUpserted,
  type OrderEvent,
  type OrderEventType,
} from '../../common/events.ts'

export { customerSemanticErrors, FUTURE_TOLERANCE_MS, MAX_EMAIL_LENGTH, MAX_TIMESTAMP, MIN_TIMESTAMP, orderSemanticErrors, refundErrors, type FieldError } from '../../common/event-rules.ts'

export type Validated<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] }

export interface ValidationContext {
  /** Used when the input has no source ('http', 'import'). */
  defaultSource: string
  /** Current time in epoch ms, for the future-timestamp rule. */
  now: number
  /** Tenant of the caller (e.g. from its API key); the input may then omit tenant_id. */
  tenantId?: number
  /**
   * The tenant's currency (its setting, or the first order's): fills a blank `currency`, and an
   * order in another one is refused (`currency_mismatch`). Unknown: a blank currency is refused.
   */
  tenantCurrency?: string | null
}

export const MAX_BATCH_EVENTS = 10_000
/** Cap on free-text fields: keeps one record far below Kafka's default 1 MB message limit. */
export const MAX_TEXT_LENGTH = 1024

export const IngestBatchSchema = z.object({
  events: z.array(z.unknown()).min(1).max(MAX_BATCH_EVENTS),
})

const DEFAULT_STATUS: Partial<Record<OrderEventType, string>> = {
  placed: 'paid',
  cancelled: 'cancelled',
  refunded: 'refunded',
  credit_note: 'credited',
}

// ---------------------------------------------------------------------------------------------
// Field parsers: plain functions that return the normalised value or throw a FieldIssue; field()
// turns them into zod schemas so the failure lands at the right path.

function fail(code: string, message: string): never {
  throw new FieldIssue(code, message)
}

function field<T>(parse: (v: unknown) => T) {
  // .optional() marks the key as allowed-absent, so the parser itself decides (default or "required").
  return z.unknown().optional().transform((v, ctx): T => {
    try {
      return parse(v)
    } catch (err) {
      if (err instanceof FieldIssue || err instanceof DecimalError) {
        ctx.issues.push({ code: 'custom', message: err.message, input: v, params: { code: err.code } })
        return z.NEVER
      }
      throw err
    }
  })
}

/** Absent, null and whitespace-only all mean "not given" (CSV cannot tell them apart anyway). */
function isBlank(v: unknown): boolean {
  return v === undefined || v === null || (typeof v === 'string' && v.trim() === '')
}

function required<T>(parse: (v: unknown) => T | null): (v: unknown) => T {
  return (v) => {
    if (isBlank(v)) fail('required', 'is required')
    return parse(v) as T
  }
}

/** Optional text: trimmed, blank -> null. Integral numbers are accepted (phone, national_id, ids). */
function text(v: unknown): string | null {
  if (isBlank(v)) return null
  let s: string
  if (typeof v === 'string') s = v.trim()
  else if (typeof v === 'number' && Number.isSafeInteger(v)) s = String(v)
  else return fail('invalid_type', `expected a string, got ${typeName(v)}`)
  if (s.length > MAX_TEXT_LENGTH) fail('too_big', `must be at most ${MAX_TEXT_LENGTH} characters`)
  return s
}

/** Positive safe integer; digit strings accepted ("42"). */
function positiveId(v: unknown): number | null {
  if (isBlank(v)) return null
  let n: number
  if (typeof v === 'number') n = v
  else if (typeof v === 'string' && /^[+-]?\d+$/.test(v.trim())) n = Number(v.trim())
  else return fail('invalid_type', `expected a positive integer, got ${typeName(v)}`)
  if (!Number.isInteger(n)) fail('invalid_type', `expected a positive integer, got ${n}`)
  if (n <= 0) fail('too_small', `must be a positive integer, got ${n}`)
  if (!Number.isSafeInteger(n)) fail('too_big', `must be at most ${Number.MAX_SAFE_INTEGER}`)
  return n
}

// YYYY-MM-DD, optionally followed by [T ]HH:MM[:SS[.fff]][Z|±HH[:MM]].
const ISO_8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i

/** Parses ISO 8601 to epoch ms; no zone means UTC. Returns null when the text is not a valid date. */
export function parseIsoTimestamp(s: string): number | null {
  const m = ISO_8601.exec(s.trim())
  if (!m) return null
  const [year, month, day, hour = 0, minute = 0, second = 0] = m.slice(1, 7).map((x) => (x ? Number(x) : undefined))
  const ms = Number((m[7] ?? '').slice(0, 3).padEnd(3, '0'))
  if (year === undefined || month === undefined || day === undefined) return null
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null
  let offsetMinutes = 0
  const zone = m[8]
  if (zone && zone.toUpperCase() !== 'Z') {
    const digits = zone.slice(1).replace(':', '')
    const oh = Number(digits.slice(0, 2))
    const om = Number(digits.slice(2) || '0')
    if (oh > 23 || om > 59) return null
    offsetMinutes = (zone.startsWith('-') ? -1 : 1) * (oh * 60 + om)
  }
  const utc = new Date(0)
  utc.setUTCFullYear(year, month - 1, day) // unlike Date.UTC, does not map years 0-99 to 19xx
  // Dates roll Feb 30 over into March; reject instead of guessing.
  if (utc.getUTCDate() !== day) return null
  utc.setUTCHours(hour, minute, second, ms)
  return utc.getTime() - offsetMinutes * 60_000
}

/** Epoch ms (number or digit string) or ISO 8601 -> epoch ms; blank -> null. */
function timestamp(v: unknown): number | null {
  if (isBlank(v)) return null
  let t: number | null
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) fail('invalid_timestamp', `expected integer epoch milliseconds, got ${v}`)
    t = v
  } else if (typeof v === 'string') {
    const s = v.trim()
    t = /^\d+$/.test(s) ? Number(s) : parseIsoTimestamp(s)
    if (t === null) fail('invalid_timestamp', `"${s}" is neither epoch milliseconds nor an ISO 8601 date-time`)
  } else {
    return fail('invalid_type', `expected epoch milliseconds or an ISO 8601 string, got ${typeName(v)}`)
  }
  if (t < MIN_TIMESTAMP || t > MAX_TIMESTAMP) {
    fail('invalid_timestamp', `${String(v).trim()} is outside 1990..9999 (epoch seconds instead of milliseconds?)`)
  }
  return t
}

/**
 * Amount: number or decimal string -> "12.50"; within 1e-6 of a cent it is snapped to the cent
 * (float noise of exports: 22.200000000000003 -> "22.20"); DecimalError codes pass through.
 */
function decimal(v: unknown): string | null {
  if (isBlank(v)) return null
  if (typeof v !== 'number' && typeof v !== 'string') fail('invalid_type', `expected a decimal amount, got ${typeName(v)}`)
  return normaliseAmount(v)
}

/** Any finite number (digit strings accepted); that it is a positive integer is a semantic rule. */
function quantity(v: unknown): number | null {
  if (isBlank(v)) return null
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^[+-]?\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : NaN
  if (!Number.isFinite(n)) fail('invalid_type', `expected a number, got ${typeName(v)}`)
  return n
}

/** Blank: null, resolved in stage 2 (a negative total makes it a credit note, else placed). */
function eventType(v: unknown): OrderEventType | null {
  if (isBlank(v)) return null
  const s = typeof v === 'string' ? v.trim().toLowerCase() : undefined
  const t = ORDER_EVENT_TYPES.find((x) => x === s)
  return t ?? fail('invalid_value', `expected one of ${ORDER_EVENT_TYPES.join(', ')}`)
}

/** Blank: null, filled in stage 2 from the tenant's currency. */
function currency(v: unknown): string | null {
  if (isBlank(v)) return null
  const s = typeof v === 'string' ? v.trim().toUpperCase() : ''
  if (!/^[A-Z]{3}$/.test(s)) fail('invalid_currency', 'expected a 3-letter ISO 4217 code, e.g. ARS')
  return s
}

/** ISO 3166-1 alpha-2 per the Avro contract (an assigned code); case-insensitive on input. */
function country(v: unknown): string | null {
  const s = text(v)
  if (s === null) return null
  if (!/^[A-Za-z]{2}$/.test(s)) fail('invalid_country', 'expected a 2-letter ISO 3166-1 code, e.g. AR')
  const code = s.toUpperCase()
  if (!ISO_3166_1_ALPHA_2.has(code)) fail('invalid_country', `${code} is not an ISO 3166-1 alpha-2 country code`)
  return code
}

function email(v: unknown): string | null {
  if (isBlank(v)) return null
  if (typeof v !== 'string') fail('invalid_type', `expected a string, got ${typeName(v)}`)
  const s = v.trim()
  const issue = emailIssue(s)
  if (issue) throw issue
  return s
}

/** Arrays default to [] when absent (or blank, as a CSV column would be). */
function list<T extends z.ZodType>(item: T) {
  return z.preprocess((v) => (isBlank(v) ? [] : v), z.array(item))
}

// ---------------------------------------------------------------------------------------------
// Input schemas (stage 1). Unknown keys are dropped: import files often carry extra columns.

const OrderItemInput = z.object({
  sku: field(required(text)),
  name: field(text),
  quantity: field(required(quantity)),
  unit_price: field(required(decimal)),
})

const OrderInput = z.object({
  event_id: field(text),
  tenant_id: field(positiveId),
  occurred_at: field(required(timestamp)),
  source: field(text),
  event_type: field(eventType),
  order_id: field(required(text)),
  customer_id: field(required(positiveId)),
  status: field(text),
  total: field(required(decimal)),
  currency: field(currency),
  refunded_amount: field(decimal),
  items: list(OrderItemInput),
  placed_at: field(timestamp),
})

const CustomerInput = z.object({
  event_id: field(text),
  tenant_id: field(positiveId),
  occurred_at: field(required(timestamp)),
  source: field(text),
  customer_id: field(required(positiveId)),
  email: field(email),
  first_name: field(text),
  last_name: field(text),
  phone: field(text),
  national_id: field(text),
  street: field(text),
  city: field(text),
  province: field(text),
  postal_code: field(text),
  country: field(country),
  registration_source: field(text),
  created_at: field(timestamp),
  source_ids: list(z.object({ source: field(required(text)), id: field(required(text)) })),
})

/** The fields an order and a customer record may carry (import files: their column names). */
export const ORDER_INPUT_FIELDS = Object.keys(OrderInput.shape) as readonly string[]
export const CUSTOMER_INPUT_FIELDS = Object.keys(CustomerInput.shape) as readonly string[]
/** Fields of an order's items (JSONL only: a CSV row has no nested items). */
export const ORDER_ITEM_FIELDS = Object.keys(OrderItemInput.shape) as readonly string[]

/** zod issues -> FieldErrors; our field parsers carry their code in params.code. */
export function fieldErrorsFromZod(issues: readonly z.core.$ZodIssue[]): FieldError[] {
  return issues.map((i) => ({
    path: i.path.map(String).join('.'),
    code: i.code === 'custom' ? String(i.params?.code ?? 'invalid') : i.code,
    message: i.message,
  }))
}

// ---------------------------------------------------------------------------------------------
// Stage 2 helpers.

/**
 * Deterministic UUID-shaped id (RFC 9562 version 8, "custom") from the SHA-256 of the parts, so
 * importing the same file twice yields the same event ids and consumers deduplicate them.
 */
export function deriveEventId(parts: readonly (string | number)[]): string {
  const h = createHash('sha256').update(JSON.stringify(parts)).digest()
  h[6] = (h[6]! & 0x0f) | 0x80
  h[8] = (h[8]! & 0x3f) | 0x80
  const x = h.subarray(0, 16).toString('hex')
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`
}

function resolveTenant(given: number | null, fromCtx: number | undefined, errors: FieldError[]): number | undefined {
  if (fromCtx === undefined) {
    if (given === null) errors.push({ path: 'tenant_id', code: 'required', message: 'is required' })
    return given ?? undefined
  }
  if (given !== null && given !== fromCtx) {
    errors.push({ path: 'tenant_id', code: 'tenant_mismatch', message: `tenant_id ${given} does not match the caller's tenant ${fromCtx}` })
    return undefined
  }
  return fromCtx
}

export function validateOrderInput(input: unknown, ctx: ValidationContext): Validated<OrderEvent> {
  const parsed = OrderInput.safeParse(input)
  if (!parsed.success) return { ok: false, errors: fieldErrorsFromZod(parsed.error.issues) }
  const d = parsed.data
  const errors: FieldError[] = []
  const tenantId = resolveTenant(d.tenant_id, ctx.tenantId, errors)
  // Exports write credit notes as negative invoices without a type: a blank type with a negative
  // total is a credit note, any other blank type an order being placed.
  const type: OrderEventType = d.event_type ?? (d.total.startsWith('-') ? 'credit_note' : 'placed')
  const status = d.status ?? DEFAULT_STATUS[type]
  if (status === undefined) {
    errors.push({ path: 'status', code: 'required', message: `is required for ${type} events` })
  }
  // A credit note's order_id is its own number (e.g. C536379): it names no original order.
  const orderId = d.order_id
  const cur = d.currency ?? ctx.tenantCurrency ?? null
  if (cur === null) {
    errors.push({ path: 'currency', code: 'required', message: "is required: the tenant has no currency yet (give it, or set the tenant's currency)" })
  } else if (ctx.tenantCurrency && cur !== ctx.tenantCurrency) {
    errors.push({ path: 'currency', code: 'currency_mismatch', message: `${cur} is not the tenant's currency ${ctx.tenantCurrency}; amounts in different currencies are never summed` })
  }
  if (tenantId === undefined || status === undefined || cur === null || errors.length) return { ok: false, errors }

  const event: OrderEvent = {
    // With the source's own event_id, a corrected event re-sent with the same time is a new event;
    // the derived id covers what identifies an order's step (docs: "Event identity").
    event_id: d.event_id ?? deriveEventId(['order', tenantId, type, orderId, status, d.occurred_at]),
    tenant_id: tenantId,
    occurred_at: d.occurred_at,
    source: d.source ?? ctx.defaultSource,
    event_type: type,
    order_id: orderId,
    customer_id: d.customer_id,
    status,
    total: d.total,
    currency: cur,
    refunded_amount: d.refunded_amount,
    items: d.items,
    placed_at: d.placed_at ?? d.occurred_at,
  }
  const semantic = orderSemanticErrors(event, ctx.now)
  return semantic.length > 0 ? { ok: false, errors: semantic } : { ok: true, value: event }
}

export function validateCustomerInput(input: unknown, ctx: ValidationContext): Validated<CustomerUpserted> {
  const parsed = CustomerInput.safeParse(input)
  if (!parsed.success) return { ok: false, errors: fieldErrorsFromZod(parsed.error.issues) }
  const d = parsed.data
  const errors: FieldError[] = []
  const tenantId = resolveTenant(d.tenant_id, ctx.tenantId, errors)
  if (tenantId === undefined) return { ok: false, errors }

  const event: CustomerUpserted = {
    ...d,
    // A customer event has no status or type of its own: one id per customer and moment.
    event_id: d.event_id ?? deriveEventId(['customer', tenantId, d.customer_id, d.occurred_at]),
    tenant_id: tenantId,
    source: d.source ?? ctx.defaultSource,
  }
  const semantic = customerSemanticErrors(event)
  return semantic.length > 0 ? { ok: false, errors: semantic } : { ok: true, value: event }
}
