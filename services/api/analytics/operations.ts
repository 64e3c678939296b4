import { z } from 'zod'
import { failure } from '../errors.ts'
import { shared, type Operation, type ResponseSpec, type Responses, type RouteGroup } from '../routes.ts'
import { isBodyExport, type AnalyticsEndpoint, type EndpointExport } from './endpoint.ts'
import { ANALYTICS_ENDPOINTS } from './endpoints.ts'
import { EXPORT_ROW_LIMIT, exportName } from './exports.ts'

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

/** What `format` gives, format by format (exports.ts writes them). */
function exportText(ep: AnalyticsEndpoint): string {
  const tableColumn = isBodyExport(ep.export) ? ep.export.tableColumn : undefined
  const names = isBodyExport(ep.export) ? Object.keys(ep.export.tables) : []
  const csv = 'RFC 4180, UTF-8 with a byte order mark, a header row; text that a spreadsheet would read as a formula (starting with `=`, `+`, `-`, `@`, TAB or CR) is prefixed with `\''
  const layout = tableColumn
    ? `csv: ${csv}; a single table whose first column \`${tableColumn}\` names each row's table, followed by the union of the tables' columns in order of first appearance (empty where the row's table has no such column); excel: an xlsx workbook with a sheet per table (${names.map((n) => `\`${n}\``).join(', ')}), typed cells; json: an object holding each table's rows (objects keyed by column name) under its name`
    : `csv: ${csv}; excel: an xlsx workbook of one sheet, typed cells; json: an array of the rows (objects keyed by column name)`
  const limit = `At most ${EXPORT_ROW_LIMIT.toLocaleString('en')} rows in all; more is a 400 (\`Export too large\`) asking to narrow the filters.`
  const empty = ep.noContent ? ' Without data the answer is the same 204 as without `format`.' : ''
  return `\`format=csv|excel|json\` downloads, instead of the JSON body, ${ep.export.description}. ${layout}; file name \`${exportName(ep.path)}-<tenant_id>.<csv|xlsx|json>\`. ${limit}${empty}`
}

function description(ep: AnalyticsEndpoint): string {
  const parts: string[] = ep.notes ? [ep.notes] : []
  if (ep.overview) parts.push('Overview response: sent with `Cache-Control: private, max-age=300`.')
  parts.push(exportText(ep))
  if (ep.ignores?.length) parts.push(`Options that do not apply here: ${ep.ignores.join(', ')}.`)
  return parts.join('\n\n')
}

/** The JSON export's document: the rows (one table) or an object of each table's rows by name. */
function exportJson(x: EndpointExport): z.ZodType {
  if (!isBodyExport(x)) return z.array(x.row)
  const tables = Object.entries(x.tables)
  if (!x.tableColumn) return z.array(tables[0]![1])
  return z.strictObject(Object.fromEntries(tables.map(([name, row]) => [name, z.array(row)])))
}

/** 200: the analytics body, or with `format` the export file. */
function answer(ep: AnalyticsEndpoint): ResponseSpec {
  const headers: Record<string, string> = {
    'X-Reference-Date': 'The date (YYYY-MM-DD) the answer is computed as of',
    'Cache-Control': ep.overview ? '`private, max-age=300`; with `format`: `no-store`' : 'With `format`: `no-store`',
    'Content-Disposition': `With \`format\`: \`attachment; filename="${exportName(ep.path)}-<tenant_id>.<csv|xlsx|json>"\``,
  }
  return {
    description: 'The analytics body, or with `format` the export file (what it holds: the operation description)',
    content: {
      'application/json': z.union([ep.response, exportJson(ep.export).meta({ description: 'format=json: the export' })]),
      'text/csv': z.string().meta({ description: 'format=csv: the export' }),
      [XLSX]: z.string().meta({ contentEncoding: 'binary', description: 'format=excel: the export (an xlsx workbook)' }),
    },
    headers,
  }
}

function responses(ep: AnalyticsEndpoint): Responses {
  const refusals = ['invalid query parameters (`details.errors[]` lists each)', 'an export of more rows than allowed (`Export too large`)', '`as_of` where this service answers only as of the reference date']
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
