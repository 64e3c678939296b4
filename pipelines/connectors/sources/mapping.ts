/**
 * Pure helpers the platform mappings share: our customer ids for external customers, deterministic
 * event ids, money and time conversions. No I/O.
 */
import { createHash } from 'node:crypto'
import { fromCents, toCents } from '../../../common/decimal.ts'
import type { CustomerUpserted, OrderEvent, OrderItem } from '../../../common/events.ts'
import { deriveEventId } from '../../ingest/index.ts'

/**
 * Our `customer_id` for a customer of an external system: 53 bits of SHA-256 over
 * (source, account, external id), so it is stable across runs and processes, fits Avro `long`
 * and JSON numbers, and does not collide between two platforms or two accounts of one. (A
 * customer who buys on two platforms gets two ids: merging identities is not done here.)
 */
export function deriveCustomerId(source: string, account: string, externalId: string): number {
  const h = createHash('sha256').update(`${source}\u0000${account}\u0000${externalId}`).digest()
  const id = Number(h.readBigUInt64BE(0) & ((1n << 53n) - 1n))
  return id === 0 ? 1 : id
}

/** Deterministic event id: re-reading the same record publishes the same event, which every consumer deduplicates. */
export const connectorEventId = (parts: (string | number)[]) => deriveEventId(['connector', ...parts])

/** Integer cents → decimal string. */
export const centsToDecimal = (cents: number) => fromCents(BigInt(Math.round(cents)))
/** A money amount sent as a JSON number (e.g. 45000.5) → decimal string, rounded to the cent. */
export const numberToDecimal = (n: number) => fromCents(BigInt(Math.round(n * 100)))
export const decimalCents = (s: string) => toCents(s)

/** ISO 8601 (any offset) → epoch ms; null when absent or unparseable. */
export function parseTime(v: unknown): number | null {
  if (typeof v !== 'string' || !v) return null
  const ms = Date.parse(v)
  return Number.isFinite(ms) ? ms : null
}

const ALPHA3: Record<string, string> = { ARG: 'AR', BRA: 'BR', CHL: 'CL', URY: 'UY', PRY: 'PY', BOL: 'BO', PER: 'PE', COL: 'CO', MEX: 'MX', USA: 'US', ESP: 'ES' }

/** ISO 3166 alpha-3 or alpha-2 → alpha-2; null when unknown. */
export function countryCode(v: unknown): string | null {
  if (typeof v !== 'string') return null
  const s = v.trim().toUpperCase()
  if (/^[A-Z]{2}$/.test(s)) return s
  return ALPHA3[s] ?? null
}

const blank = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v.trim() : null)
export { blank as textOrNull }

/** Sum of the items in cents. */
export const itemsCents = (items: readonly OrderItem[]) => items.reduce((s, i) => s + BigInt(i.quantity) * toCents(i.unit_price), 0n)

/** One order of an external system, mapped: its life-cycle events and who bought it. */
export interface MappedOrder {
  externalId: string
  /** The buyer's id in the external system. */
  customerExternalId: string
  customerId: number
  /** The buyer's profile as the order carries it: published when the customer is otherwise unknown. */
  profile: CustomerUpserted | null
  events: OrderEvent[]
  /** The items (and shipping) do not add up to the order's value: the events carry no items. */
  totalMismatch: boolean
}

export interface MappedCustomer {
  externalId: string
  event: CustomerUpserted
}

export interface MappedProduct {
  sku: string
  name: string
}

/** Everything a mapping needs beside the record. */
export interface MappingContext {
  tenantId: number
  /** The account within the platform (commerce account name, marketplace seller id). */
  account: string
}
