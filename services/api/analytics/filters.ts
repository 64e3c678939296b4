import type { CommonOptions } from './options.ts'
import { resolveWindow } from './options.ts'

/**
 * The customer filter of the shared query options, as SQL over `customer_features` (alias `f`)
 * with bound parameters only. Meaning of each option for customer-level endpoints:
 * - segments / exclude_segments: the customer's current RFM segment;
 * - min_value / max_value: the customer's net spend (monetary), inclusive;
 * - customer_ids: these customers only; email_domain: email ends with `@domain` (case-insensitive);
 * - registration_source: the customer profile's registration source;
 * - date_from / date_to / period: customers whose last order falls in the window.
 */
export interface SqlFilter {
  where: string
  params: Record<string, unknown>
}

export function customerFilter(o: CommonOptions, nowMs: number, alias = 'f'): SqlFilter {
  const c: string[] = [`${alias}.tenant_id = {tenant_id:UInt64}`]
  const params: Record<string, unknown> = { tenant_id: o.tenant_id }
  if (o.segments?.length) {
    c.push(`${alias}.segment IN {segments:Array(String)}`)
    params.segments = o.segments
  }
  if (o.exclude_segments?.length) {
    c.push(`(${alias}.segment IS NULL OR ${alias}.segment NOT IN {exclude_segments:Array(String)})`)
    params.exclude_segments = o.exclude_segments
  }
  if (o.min_value !== undefined) {
    c.push(`${alias}.monetary >= {min_value:Float64}`)
    params.min_value = o.min_value
  }
  if (o.max_value !== undefined) {
    c.push(`${alias}.monetary <= {max_value:Float64}`)
    params.max_value = o.max_value
  }
  if (o.customer_ids?.length) {
    c.push(`${alias}.customer_id IN {customer_ids:Array(UInt64)}`)
    params.customer_ids = o.customer_ids
  }
  if (o.email_domain) {
    c.push(`endsWith(lower(${alias}.email), {email_domain:String})`)
    params.email_domain = `@${o.email_domain.toLowerCase().replace(/^@/, '')}`
  }
  if (o.registration_source) {
    c.push(`${alias}.customer_id IN (SELECT customer_id FROM customers FINAL WHERE tenant_id = {tenant_id:UInt64} AND registration_source = {registration_source:String})`)
    params.registration_source = o.registration_source
  }
  const w = resolveWindow(o, nowMs)
  if (w) {
    c.push(`${alias}.last_order_at >= fromUnixTimestamp64Milli({window_from:Int64}, 'UTC') AND ${alias}.last_order_at < fromUnixTimestamp64Milli({window_to:Int64}, 'UTC')`)
    params.window_from = w.from
    params.window_to = w.to
  }
  return { where: c.join(' AND '), params }
}

/** These customers of the tenant only: a page whose ids were chosen elsewhere (the customer columns, summary.ts). */
export function idsFilter(tenantId: number, ids: readonly number[]): SqlFilter {
  return { where: 'f.tenant_id = {tenant_id:UInt64} AND f.customer_id IN {page_ids:Array(UInt64)}', params: { tenant_id: tenantId, page_ids: ids } }
}
