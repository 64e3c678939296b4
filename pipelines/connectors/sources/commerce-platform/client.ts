/**
 * Client of the commerce platform (services/simulators/commerce-platform/README.md documents the
 * API): app key and app token headers, the account and environment in the base URL, page-numbered
 * listings of orders, master-data customers and catalogue products filtered by last change.
 */
import { z } from 'zod'
import { ConnectorError, requestJson, type HttpOptions } from '../http.ts'
import type { CommerceCredentials } from '../types.ts'

/** `{account_name}` / `{environment}` placeholders filled in, or both appended as path segments. */
export function commerceBaseUrl(template: string, accountName: string, environment: string): string {
  const base = template.replace(/\/+$/, '')
  if (base.includes('{account_name}') || base.includes('{environment}')) {
    return base.replaceAll('{account_name}', encodeURIComponent(accountName)).replaceAll('{environment}', encodeURIComponent(environment))
  }
  return `${base}/${encodeURIComponent(accountName)}/${encodeURIComponent(environment)}`
}

const accountSchema = z.looseObject({
  id: z.coerce.string(),
  accountName: z.string(),
  isActive: z.boolean(),
  hosts: z.array(z.string()).default([]),
  resources: z.looseObject({ catalog: z.boolean(), orders: z.boolean(), masterdata: z.boolean(), payments: z.boolean() }).partial().default({}),
})
export type CommerceAccount = z.output<typeof accountSchema>

const pagingSchema = z.looseObject({ total: z.number().int(), pages: z.number().int() })
const listSchema = z.looseObject({ list: z.array(z.unknown()), paging: pagingSchema.extend({ currentPage: z.number().int().optional() }) })
const dataSchema = z.looseObject({ data: z.array(z.unknown()), paging: pagingSchema })

export interface PageQuery {
  page: number
  perPage: number
  /** Last change from (inclusive) / to (exclusive), epoch ms. */
  updatedFrom?: number | null
  updatedTo?: number | null
}

export interface Page {
  items: unknown[]
  total: number
  pages: number
}

const errorMessage = (body: unknown) => {
  const e = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error
  return e && typeof e.message === 'string' ? `${String(e.code ?? 'error')}: ${e.message}` : null
}

export class CommercePlatformClient {
  readonly baseUrl: string
  constructor(baseUrlTemplate: string, private readonly creds: CommerceCredentials, private readonly http: HttpOptions = {}) {
    this.baseUrl = commerceBaseUrl(baseUrlTemplate, creds.account_name, creds.environment)
  }

  private get<T>(path: string, what: string, query: Record<string, string> = {}): Promise<T> {
    const qs = new URLSearchParams(query).toString()
    return requestJson<T>(
      { url: `${this.baseUrl}${path}${qs ? `?${qs}` : ''}`, headers: { 'x-app-key': this.creds.app_key, 'x-app-token': this.creds.app_token }, what: `commerce platform ${what}`, errorMessage },
      this.http,
    )
  }

  async account(): Promise<CommerceAccount> {
    return parse(accountSchema, await this.get('/api/account', 'account'), 'account')
  }

  async orders(q: PageQuery): Promise<Page> {
    const r = parse(listSchema, await this.get('/api/oms/orders', `orders page ${q.page}`, query(q)), 'orders')
    return { items: r.list, total: r.paging.total, pages: r.paging.pages }
  }

  async customers(q: PageQuery): Promise<Page> {
    const r = parse(dataSchema, await this.get('/api/masterdata/customers', `customers page ${q.page}`, query(q)), 'customers')
    return { items: r.data, total: r.paging.total, pages: r.paging.pages }
  }

  async products(q: PageQuery): Promise<Page> {
    const r = parse(dataSchema, await this.get('/api/catalog/products', `products page ${q.page}`, query(q)), 'products')
    return { items: r.data, total: r.paging.total, pages: r.paging.pages }
  }
}

function query(q: PageQuery): Record<string, string> {
  // Ascending by last change (then id): the sync pages by keyset on it (source.ts).
  const out: Record<string, string> = { page: String(q.page), per_page: String(q.perPage), sort: 'updated_asc' }
  if (q.updatedFrom != null) out.updated_from = new Date(q.updatedFrom).toISOString()
  if (q.updatedTo != null) out.updated_to = new Date(q.updatedTo).toISOString()
  return out
}

function parse<S extends z.ZodType>(schema: S, body: unknown, what: string): z.output<S> {
  const r = schema.safeParse(body)
  if (!r.success) throw new ConnectorError('BAD_RESPONSE', `commerce platform ${what}: unexpected answer (${z.prettifyError(r.error).split('\n')[0]})`)
  return r.data
}
