import client from 'prom-client'
import { registry } from '../../../common/runtime/metrics.ts'
import type { Store } from '../../../common/store/clickhouse.ts'
import type { Logger } from '../../../common/logger.ts'
import { ResponseCache } from './cache.ts'
import type { AnalyticsContext } from './endpoint.ts'
import { loadCustomerColumns, prepareSelection, type CustomerColumns } from './customer-columns.ts'
import type { PublishedSummary } from './body-workers.ts'

/**
 * Tenant summaries: the tenant-wide aggregates of the analytics endpoints, computed ahead of the
 * request so an unfiltered overview reads a few stored rows instead of scanning a million
 * customers or ten million orders.
 *
 * An endpoint marks each heavy, tenant-wide sub-query with `tenantWide(ctx, tenant, name, applies, live)`:
 * `applies` is false when a customer filter narrows the set (then the query always runs live).
 * The refresher runs the endpoints' bodies for their unfiltered default queries in *record* mode,
 * which runs every marked sub-query live and keeps its rows under its name; requests then read
 * those rows. A summary is as of its refresh (`asOf`): refreshed when the tenant's features,
 * orders or segment changes moved (checked every interval), after each processing run, and at
 * least every REFRESH_AFTER_MS as time passes; a summary older than MAX_AGE_MS is not used.
 * When a tenant's data moved, `onDataMoved` lets the response cache drop that tenant's answers,
 * so a cached answer is at most one interval behind the data.
 * Summaries live in the API process's memory (each API replica keeps its own): they are a cache
 * of ClickHouse, rebuilt on start.
 */
export interface SummarySource {
  lookup(tenantId: number, name: string): unknown
  /** When the tenant's usable summary was computed, or null. */
  asOf(tenantId: number): number | null
  /** Present in record mode: keeps a sub-query's rows under its name. */
  record?(tenantId: number, name: string, value: unknown): void
  /** The tenant's customer columns as of its usable summary (customer-columns.ts), if kept. */
  columns?(tenantId: number): CustomerColumns | undefined
}

/**
 * The context of one request of a tenant: while the tenant has a usable summary, the request is
 * answered as of that summary (its clock), so stored and live parts describe the same moment.
 */
export function asOfSummary(ctx: AnalyticsContext, tenantId: number): AnalyticsContext {
  const at = ctx.summaries?.asOf(tenantId) ?? null
  return at === null ? ctx : { ...ctx, now: () => at }
}

/**
 * A tenant-wide sub-query: the stored rows when a summary applies and has them. Otherwise (a
 * filtered request, `applies` false, or a part the summary does not hold) it is answered by
 * `columnar`, the sub-query's twin over the summary's customer columns, when the summary has
 * them and the twin can evaluate the request (it returns null when it cannot, e.g. for `as_of`);
 * else live.
 */
export async function tenantWide<T>(
  ctx: AnalyticsContext,
  tenantId: number,
  name: string,
  applies: boolean,
  live: () => Promise<T>,
  columnar?: (columns: CustomerColumns) => T | null | Promise<T | null>,
): Promise<T> {
  const s = ctx.summaries
  if (!s) return live()
  if (applies && s.record) {
    const v = await live()
    s.record(tenantId, name, v)
    return v
  }
  const hit = applies ? s.lookup(tenantId, name) : undefined
  if (hit !== undefined) return hit as T
  // Filtered, or a part the summary does not hold (e.g. another cohort window): the columns, else live.
  const cols = columnar && !s.record ? s.columns?.(tenantId) : undefined
  const v = cols ? await columnar!(cols) : null
  if (v !== null) countColumnar()
  return v ?? live()
}

/** Rows of a default-ordered list kept in a summary: pages within them are read from it, deeper pages live. */
export const SUMMARY_TOP_ROWS = 1000

/**
 * A page of a list (`offset`, `limit`) in its default order: when the whole page lies within the
 * first SUMMARY_TOP_ROWS rows and a summary applies, a slice of the stored top rows; else live.
 * A filtered page is chosen by `pageIds` from the summary's customer columns when it can (the
 * page's customer ids in order, or null), and its rows are then read for those ids only.
 */
export async function tenantWidePage<T>(
  ctx: AnalyticsContext,
  tenantId: number,
  name: string,
  applies: boolean,
  page: { limit: number; offset: number },
  rows: (limit: number, offset: number, ids?: number[]) => Promise<T[]>,
  pageIds?: (columns: CustomerColumns, limit: number, offset: number) => number[] | null,
  pageRows?: (columns: CustomerColumns, ids: number[]) => T[],
): Promise<T[]> {
  if (!applies) {
    const s = ctx.summaries
    const cols = pageIds && s && !s.record ? s.columns?.(tenantId) : undefined
    const ids = cols ? pageIds!(cols, page.limit, page.offset) : null
    if (ids !== null) {
      countColumnar()
      if (!ids.length) return []
      // The page's rows from the columns too when the list has them (as of the summary, like the
      // ids that chose them), else read by id.
      return pageRows ? pageRows(cols!, ids) : rows(ids.length, 0, ids)
    }
  }
  if (!applies || !ctx.summaries || page.offset + page.limit > SUMMARY_TOP_ROWS) return rows(page.limit, page.offset)
  const top = await tenantWide(ctx, tenantId, name, true, () => rows(SUMMARY_TOP_ROWS, 0))
  return top.slice(page.offset, page.offset + page.limit)
}

/** The requests whose tenant-wide parts a refresh records: an endpoint path and its extra query. */
export interface SummaryQuery {
  path: string
  query?: Record<string, string>
}

export interface SummaryDeps {
  store: Store
  logger: Logger
  /** The analytics endpoints (path, query schema, body). */
  endpoints: ReadonlyArray<{ path: string; query: { parse(v: unknown): unknown }; body(ctx: AnalyticsContext, q: never): Promise<unknown>; prepare?(columns: CustomerColumns, nowMs: number): void | Promise<void> }>
  queries: readonly SummaryQuery[]
  now?: () => number
  intervalMs: number
  /** Called after a tenant's summary was recomputed because its data moved (the response cache drops the tenant's answers). */
  onDataMoved?: (tenantId: number) => void
  /** Each tenant's reference instant, the clock its summary is computed against (default: the wall clock). */
  reference?: (tenantId: number) => Promise<number>
  /** Keep each tenant's customer columns with its summary, so filtered overviews are answered in memory (default true). */
  columns?: boolean
  /** Told of each summary kept with customer columns, and of each tenant whose summary is gone (the body workers follow). */
  onKept?: (tenantId: number, summary: PublishedSummary) => void
  onDropped?: (tenantId: number) => void
}

/** A summary older than this is not used (the live queries answer). */
export const MAX_AGE_MS = 15 * 60_000
/** Time-relative figures (dashboard windows, 90-day retention) move with the clock: refresh at least this often. */
export const REFRESH_AFTER_MS = 10 * 60_000

const refreshes = new client.Counter({ name: 'cdp_analytics_summary_refreshes_total', help: 'Tenant summary refreshes', labelNames: ['outcome'] as const, registers: [registry] })
const refreshSeconds = new client.Histogram({ name: 'cdp_analytics_summary_refresh_seconds', help: 'Duration of a tenant summary refresh', buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [registry] })
const tenantsGauge = new client.Gauge({ name: 'cdp_analytics_summary_tenants', help: 'Tenants with a usable analytics summary', registers: [registry] })
const columnarAnswers = new client.Counter({ name: 'cdp_analytics_columnar_answers_total', help: 'Filtered sub-queries answered from the customer columns of a tenant summary instead of ClickHouse', registers: [registry] })
let columnarUncollected = 0
function countColumnar(): void {
  columnarAnswers.inc()
  columnarUncollected++
}
/** The columnar answers counted since the last call (a worker thread reports its own to the main thread, whose registry is exported). */
export function collectColumnarCount(): number {
  const n = columnarUncollected
  columnarUncollected = 0
  return n
}
export const addColumnarAnswers = (n: number): void => columnarAnswers.inc(n)
const columnCustomers = new client.Gauge({ name: 'cdp_analytics_summary_column_customers', help: 'Customers held in the customer columns of the tenant summaries', registers: [registry] })

interface TenantSummary {
  /** Wall-clock time of the refresh (its age). */
  asOf: number
  /** The tenant's reference instant the summary describes (its clock). */
  referenceMs: number
  stamp: string
  values: Map<string, unknown>
  columns?: CustomerColumns
}

const yieldToRequests = () => new Promise<void>((resolve) => setImmediate(resolve))
let longestStep = 0

/**
 * Works out what the endpoints' filtered answers read from freshly loaded columns (selectMask's
 * narrow copies, each endpoint's `prepare`), each step in its own turn of the event loop so
 * requests are answered in between. A failed step throws, unless `onError` takes it (the step's
 * facts are then worked out by the first request that needs them).
 */
export async function prepareColumns(columns: CustomerColumns, endpoints: SummaryDeps['endpoints'], referenceMs: number, onError?: (err: unknown) => void): Promise<void> {
  const steps = [() => prepareSelection(columns), ...endpoints.flatMap((ep) => (ep.prepare ? [() => ep.prepare!(columns, referenceMs)] : []))]
  for (const step of steps) {
    await yieldToRequests()
    const t = performance.now()
    try {
      await step()
    } catch (err) {
      if (!onError) throw err
      onError(err)
    }
    longestStep = Math.max(longestStep, performance.now() - t)
  }
}

export class TenantSummaries implements SummarySource {
  private readonly tenants = new Map<number, TenantSummary>()
  /** Bumped by invalidate(): a refresh that began before it does not store its (older) result. */
  private readonly generations = new Map<number, number>()
  private readonly now: () => number
  private timer: NodeJS.Timeout | null = null
  private running: Promise<void> = Promise.resolve()
  private stopped = false

  constructor(private readonly deps: SummaryDeps) {
    this.now = deps.now ?? Date.now
  }

  lookup(tenantId: number, name: string): unknown {
    return this.usable(tenantId)?.values.get(name)
  }

  columns(tenantId: number): CustomerColumns | undefined {
    return this.usable(tenantId)?.columns
  }

  private usable(tenantId: number): TenantSummary | undefined {
    const t = this.tenants.get(tenantId)
    return t && this.now() - t.asOf <= MAX_AGE_MS ? t : undefined
  }

  private forget(tenantId: number): void {
    if (this.tenants.delete(tenantId)) this.deps.onDropped?.(tenantId)
  }

  private countColumns(): void {
    let n = 0
    for (const t of this.tenants.values()) n += t.columns?.size ?? 0
    columnCustomers.set(n)
  }

  asOf(tenantId: number): number | null {
    const t = this.tenants.get(tenantId)
    return t && this.now() - t.asOf <= MAX_AGE_MS ? t.referenceMs : null
  }

  /** Drops a tenant's summary at once (its data changed under it, e.g. a processing run): requests go live until the next refresh. */
  invalidate(tenantId: number): void {
    this.forget(tenantId)
    this.generations.set(tenantId, (this.generations.get(tenantId) ?? 0) + 1)
    tenantsGauge.set(this.tenants.size)
    this.countColumns()
  }

  /** Recomputes one tenant's summary now (serialised with the other refreshes). */
  refresh(tenantId: number, stamp = ''): Promise<void> {
    const generation = this.generations.get(tenantId) ?? 0
    const next = this.running.then(() => this.compute(tenantId, stamp, generation))
    this.running = next.catch(() => undefined)
    return next
  }

  private async compute(tenantId: number, stamp: string, generation: number): Promise<void> {
    const started = performance.now()
    const asOf = this.now()
    const referenceMs = this.deps.reference ? await this.deps.reference(tenantId) : asOf
    const values = new Map<string, unknown>()
    const recorder: SummarySource = { lookup: () => undefined, asOf: () => null, record: (t, name, v) => t === tenantId && values.set(name, v) }
    const ctx: AnalyticsContext = { store: this.deps.store, logger: this.deps.logger, now: () => referenceMs, cache: new ResponseCache(), summaries: recorder }
    try {
      for (const sq of this.deps.queries) {
        const ep = this.deps.endpoints.find((e) => e.path === sq.path)
        if (!ep) throw new Error(`no analytics endpoint ${sq.path}`)
        await ep.body(ctx, ep.query.parse({ tenant_id: String(tenantId), ...sq.query }) as never)
      }
      const columns = this.deps.columns === false ? undefined : await loadCustomerColumns(this.deps.store, tenantId)
      if (columns) await prepareColumns(columns, this.deps.endpoints, referenceMs)
      if ((this.generations.get(tenantId) ?? 0) !== generation) return // invalidated meanwhile: this result may predate the change
      this.tenants.set(tenantId, { asOf, referenceMs, stamp, values, columns })
      if (columns) this.deps.onKept?.(tenantId, { referenceMs, values, columns })
      else this.deps.onDropped?.(tenantId)
      tenantsGauge.set(this.tenants.size)
      this.countColumns()
      refreshes.inc({ outcome: 'ok' })
      refreshSeconds.observe((performance.now() - started) / 1000)
      this.deps.logger.debug({ tenantId, ms: Math.round(performance.now() - started), parts: values.size, longestPrepareMs: Math.round(longestStep) }, 'analytics summary refreshed')
    } catch (err) {
      refreshes.inc({ outcome: 'error' })
      throw err
    }
  }

  /**
   * One pass: every tenant whose features, orders or segment changes moved since its summary
   * (or whose summary is older than REFRESH_AFTER_MS) is refreshed. The change stamps are
   * column scans without FINAL: cheap even at ten million orders.
   */
  async pass(): Promise<number> {
    const rs = await this.deps.store.query({
      query: `SELECT tenant_id, toString(arraySort(groupArray(s))) AS stamp FROM (
                SELECT tenant_id, concat('f', toString(count()), ':', toString(max(processed_at))) AS s FROM customer_features GROUP BY tenant_id
                UNION ALL SELECT tenant_id, concat('o', toString(count()), ':', toString(max(updated_at))) AS s FROM orders GROUP BY tenant_id
                UNION ALL SELECT tenant_id, concat('s', toString(count())) AS s FROM segment_changes GROUP BY tenant_id
              ) GROUP BY tenant_id ORDER BY tenant_id`,
      format: 'JSONEachRow',
    })
    const rows = await rs.json<{ tenant_id: string; stamp: string }>()
    // A tenant whose data is gone (a replay emptied it) keeps no summary.
    const present = new Set(rows.map((r) => Number(r.tenant_id)))
    for (const t of [...this.tenants.keys()]) if (!present.has(t)) this.forget(t)
    tenantsGauge.set(this.tenants.size)
    this.countColumns()
    let refreshed = 0
    for (const r of rows) {
      if (this.stopped) break
      const tenantId = Number(r.tenant_id)
      const cur = this.tenants.get(tenantId)
      if (cur && cur.stamp === r.stamp && this.now() - cur.asOf < REFRESH_AFTER_MS) continue
      try {
        await this.refresh(tenantId, r.stamp)
        refreshed++
        // A first summary too: answers cached before it were computed live from older data.
        if (!cur || cur.stamp !== r.stamp) this.deps.onDataMoved?.(tenantId)
      } catch (err) {
        this.deps.logger.error({ err, tenantId }, 'analytics summary refresh failed; the live queries answer meanwhile')
      }
    }
    return refreshed
  }

  /** Runs a pass now and then every intervalMs until stop(). */
  start(): void {
    const loop = async () => {
      try {
        await this.pass()
      } catch (err) {
        this.deps.logger.error({ err }, 'analytics summary pass failed')
      }
      if (!this.stopped) this.timer = setTimeout(loop, this.deps.intervalMs)
    }
    void loop()
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    await this.running
  }
}
