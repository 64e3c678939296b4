import { z } from 'zod'
import { failure } from '../errors.ts'
import { json, shared, type Operation, type ResponseSpec, type Responses, type RouteGroup } from '../routes.ts'
import type { AnalyticsEndpoint } from './endpoint.ts'
import { ANALYTICS_ENDPOINTS } from './endpoints.ts'
import { EXPORT_ROW_LIMIT } from './exports.ts'

/**
 * One documented operation per analytics endpoint (endpoints.ts), built from its module: its
 * query schema, its answer's schema, and what the router does for all of them (router.ts).
 */

const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'
const NO_EFFECT = 'Accepted; has no effect on this endpoint.'

const operationId = (path: string) => {
  const slug = path.replace(/^\/api\/(v2\/cdp|cdp\/v2)\//, '').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c?: string) => (c ? c.toUpperCase() : ''))
  return `get${slug.charAt(0).toUpperCase()}${slug.slice(1)}`
}

function description(ep: AnalyticsEndpoint): string {
  const parts: string[] = ep.notes ? [ep.notes] : []
  if (ep.overview) parts.push('Overview response: sent with `Cache-Control: private, max-age=300`.')
  if (ep.export) {
    parts.push(
      `\`format=csv|excel|json\` downloads the endpoint's rows as a file (CSV: RFC 4180, UTF-8 with BOM; excel: xlsx; json: an array of objects) instead of the JSON body; at most ${EXPORT_ROW_LIMIT.toLocaleString('en')} rows, more is a 400 asking to narrow the filters.`,
    )
  } else {
    parts.push('This endpoint has no row-level export: it takes no `format` (400 `Export not available`).')
  }
  if (ep.ignores?.length) parts.push(`Options that do not apply here: ${ep.ignores.join(', ')}.`)
  return parts.join('\n\n')
}

/** 200: the analytics body, or with `format` a download of the rows. */
function answer(ep: AnalyticsEndpoint): ResponseSpec {
  const headers: Record<string, string> = { 'X-Reference-Date': 'The date (YYYY-MM-DD) the answer is computed as of' }
  if (ep.overview) headers['Cache-Control'] = '`private, max-age=300`'
  if (!ep.export) return json('The analytics body', ep.response, headers)
  headers['Content-Disposition'] = 'With `format`: `attachment; filename="<endpoint>-<tenant_id>.<csv|xlsx|json>"`'
  return {
    description: "The analytics body, or with `format` a download of the endpoint's rows, one object per row keyed by column header",
    content: {
      'application/json': z.union([ep.response, z.array(ep.export.row).meta({ description: 'format=json: the rows' })]),
      'text/csv': z.string().meta({ description: 'CSV export (format=csv)' }),
      [XLSX]: z.string().meta({ contentEncoding: 'binary', description: 'xlsx export (format=excel)' }),
    },
    headers,
  }
}

function responses(ep: AnalyticsEndpoint): Responses {
  const refusals = ['invalid query parameters (`details.errors[]` lists each)', ep.export ? 'an export of more rows than allowed' : '`format` (no export here)', '`as_of` where this service answers only as of the reference date']
  if (ep.unknownTenantStatus === 400) refusals.push('an unknown tenant (`Tenant not found`)')
  const out: Responses = { 200: answer(ep), 400: failure(`Refused: ${refusals.join(', ')}`), 403: shared('Forbidden') }
  if (ep.unknownTenantStatus !== 400) out[404] = failure('Tenant not found')
  if (ep.noContent) out[204] = { description: ep.noContent }
  if (ep.filterErrorStatus) out[ep.filterErrorStatus.status] = failure(`A value of ${ep.filterErrorStatus.fields.join(', ')} outside the allowed set (\`Invalid filter value\`)`)
  return out
}

export function analyticsOperation(ep: AnalyticsEndpoint): Operation {
  if (!(ep.query instanceof z.ZodObject)) throw new Error(`${ep.path}: the query schema must be an object`)
  return {
    method: 'get',
    path: ep.path,
    ...(ep.aliases ? { aliases: ep.aliases } : {}),
    operationId: operationId(ep.path),
    summary: ep.summary,
    description: description(ep),
    request: { query: ep.query, queryNotes: Object.fromEntries((ep.ignores ?? []).map((k) => [k, NO_EFFECT])) },
    responses: responses(ep),
  }
}

/** By endpoint path, in the order of ANALYTICS_ENDPOINTS. */
export const ANALYTICS_OPERATIONS = new Map(ANALYTICS_ENDPOINTS.map((ep) => [ep.path, analyticsOperation(ep)]))

export const ANALYTICS_ROUTES: RouteGroup = {
  tag: { name: 'Analytics', description: `Read-only analytics; tenant_id is required; pages hold at most 1,000 results, exports at most ${EXPORT_ROW_LIMIT.toLocaleString('en')} rows.` },
  operations: [...ANALYTICS_OPERATIONS.values()],
}
