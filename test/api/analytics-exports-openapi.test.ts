import http from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import ExcelJS from 'exceljs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sendExport, sendTables, csvField, EXPORT_ROW_LIMIT, type ExportFormat } from '../../services/api/analytics/exports.ts'
import { isBodyExport, type ExportColumn, type ExportTable } from '../../services/api/analytics/endpoint.ts'
import { ANALYTICS_ENDPOINTS } from '../../services/api/analytics/endpoints.ts'
import { errorHandler } from '../../services/api/errors.ts'
import { createApp } from '../../services/api/app.ts'
import { type OpenApiDocument, type OpenApiParameter } from '../../services/api/openapi.ts'
import { ROUTE_GROUPS } from '../../services/api/operations.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { silentLogger } from '../helpers.ts'
import { parseCsv } from './export-files.ts'

interface Row {
  id: number
  name: string
  city: string | null
  amount: number | null
  active: boolean
}

const columns: ExportColumn<Row>[] = [
  { header: 'id', value: (r) => r.id },
  { header: 'name', value: (r) => r.name },
  { header: 'city', value: (r) => r.city },
  { header: 'amount', value: (r) => r.amount },
  { header: 'active', value: (r) => r.active },
]

const ROWS: Row[] = [
  { id: 1, name: 'José "Pepe" Pérez, Jr.', city: 'Peñalolén', amount: 1234.5, active: true },
  { id: 2, name: 'línea 1\nlínea 2', city: 'Ñuñoa\r\nSantiago', amount: -3, active: false },
  { id: 3, name: 'Zoë', city: null, amount: null, active: true },
  { id: 4, name: '=HYPERLINK("http://evil","x")', city: '+56 9 1234', amount: 0, active: false },
  { id: 5, name: '@SUM(A1)', city: '-2+3', amount: 0.1, active: true },
]

let server: http.Server
let base = ''
let source: () => AsyncIterable<Row> | Row[] = () => ROWS

/** A file of three tables: the rows, totals (sharing the `amount` column), and an empty one. */
interface Total {
  label: string
  amount: number
  share: number | null
}
const TOTALS: Total[] = [
  { label: '-total', amount: 1231.6, share: 1 },
  { label: 'Ñandú, "neto"', amount: -3, share: null },
]
const TABLES = (rows: AsyncIterable<Row> | Row[] = ROWS): ExportTable[] => [
  { name: 'clientes', columns, rows },
  { name: 'totales', columns: [{ header: 'label', value: (t: Total) => t.label }, { header: 'amount', value: (t: Total) => t.amount }, { header: 'share', value: (t: Total) => t.share }], rows: TOTALS },
  { name: 'vacía', columns: [{ header: 'note', value: () => 'x' }], rows: [] },
]
let tables: () => ExportTable[] = () => TABLES()

async function* generate(n: number, failAfter?: number): AsyncIterable<Row> {
  for (let i = 1; i <= n; i++) {
    if (failAfter !== undefined && i > failAfter) throw new Error('the store went away')
    yield { id: i, name: `Cliente ${i}, Peñalolén`, city: i % 3 ? 'Santiago' : null, amount: i * 1.5, active: i % 2 === 0 }
  }
}

/** Yields to the event loop every 1,000 rows, as a real database stream does. */
async function* slowly<T>(rows: AsyncIterable<T>): AsyncIterable<T> {
  let i = 0
  for await (const r of rows) {
    if (++i % 1000 === 0) await new Promise((r) => setImmediate(r))
    yield r
  }
}

beforeAll(async () => {
  const app = express()
  app.use((req, _res, next) => {
    req.log = silentLogger
    next()
  })
  app.get('/export/:format', async (req, res, next) => {
    try {
      await sendExport(res, req.params.format as ExportFormat, 'clientes-42', columns, source())
    } catch (err) {
      next(err)
    }
  })
  app.get('/tables/:format', async (req, res, next) => {
    try {
      await sendTables(res, req.params.format as ExportFormat, 'informe-42', tables(), 'section')
    } catch (err) {
      next(err)
    }
  })
  app.use(errorHandler)
  server = http.createServer(app)
  // fetch keeps idle connections for the server's advertised keep-alive less a second; with Node's
  // 5 s default, a busy machine let a request go out on a connection the server was closing
  // (ECONNRESET before any response). Kept longer than the tests run, no connection is closed under one.
  server.keepAliveTimeout = 120_000
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()))
})

const get = async (format: ExportFormat, rows: () => AsyncIterable<Row> | Row[] = () => ROWS) => {
  source = rows
  return fetch(`${base}/export/${format}`)
}

describe('sendExport: csv', () => {
  it('is RFC 4180 with a BOM, a header row, CRLF, and reads back to the same rows', async () => {
    const res = await get('csv')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="clientes-42.csv"')
    const bytes = new Uint8Array(await res.arrayBuffer())
    expect([...bytes.slice(0, 3)]).toEqual([0xef, 0xbb, 0xbf])
    const text = new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes)
    expect(text.startsWith('\uFEFFid,name,city,amount,active\r\n')).toBe(true)
    const records = parseCsv(text.slice(1))
    expect(records[0]).toEqual(['id', 'name', 'city', 'amount', 'active'])
    expect(records.slice(1)).toEqual([
      ['1', 'José "Pepe" Pérez, Jr.', 'Peñalolén', '1234.5', 'true'],
      ['2', 'línea 1\nlínea 2', 'Ñuñoa\r\nSantiago', '-3', 'false'],
      ['3', 'Zoë', '', '', 'true'],
      ['4', `'=HYPERLINK("http://evil","x")`, "'+56 9 1234", '0', 'false'],
      ['5', "'@SUM(A1)", "'-2+3", '0.1', 'true'],
    ])
  })

  it('neutralises formula injection in text but leaves numbers alone', () => {
    for (const s of ['=1+1', '+1', '-1', '@x', '\tx', '\rx']) expect(csvField(s).replace(/^"/, '').startsWith("'")).toBe(true)
    expect(csvField(-12.5)).toBe('-12.5')
    expect(csvField('a=b')).toBe('a=b')
    expect(csvField('=a,b')).toBe(`"'=a,b"`)
    expect(csvField(null)).toBe('')
    expect(csvField(Number.NaN)).toBe('')
  })

  it('an empty export is just the header row', async () => {
    const text = await (await get('csv', () => [])).text()
    expect(parseCsv(text.replace(/^\uFEFF/, ''))).toEqual([['id', 'name', 'city', 'amount', 'active']])
  })
})

describe('sendExport: excel', () => {
  it('is an xlsx with a bold header row, typed cells and the same rows', async () => {
    const res = await get('excel')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet')
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="clientes-42.xlsx"')
    const wb = new ExcelJS.Workbook()
    await wb.xlsx.load(Buffer.from(await res.arrayBuffer()) as unknown as ExcelJS.Buffer)
    expect(wb.worksheets).toHaveLength(1)
    const ws = wb.worksheets[0]!
    expect(ws.rowCount).toBe(ROWS.length + 1)
    const header = ws.getRow(1)
    expect([1, 2, 3, 4, 5].map((c) => header.getCell(c).value)).toEqual(['id', 'name', 'city', 'amount', 'active'])
    expect(header.getCell(1).font?.bold).toBe(true)
    ROWS.forEach((r, i) => {
      const row = ws.getRow(i + 2)
      const cells = [1, 2, 3, 4, 5].map((c) => row.getCell(c).value ?? null)
      // Text is stored as text (never a formula), so it comes back exactly, without a prefix.
      // (line breaks are LF in xlsx: XML normalises CR LF, and Excel breaks lines in a cell on LF)
      expect(cells).toEqual([r.id, r.name, r.city?.replaceAll('\r\n', '\n') ?? null, r.amount, r.active])
      expect(typeof row.getCell(1).value).toBe('number')
      if (r.amount !== null) expect(row.getCell(4).type).toBe(ExcelJS.ValueType.Number)
      expect(row.getCell(2).type).toBe(ExcelJS.ValueType.String)
    })
  })
})

describe('sendExport: json', () => {
  it('is a JSON array of objects keyed by header', async () => {
    const res = await get('json')
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="clientes-42.json"')
    expect(await res.json()).toEqual(ROWS.map((r) => ({ id: r.id, name: r.name, city: r.city, amount: r.amount, active: r.active })))
    expect(await (await get('json', () => [])).json()).toEqual([])
  })
})

describe('sendTables: several tables in one file', () => {
  const getTables = async (format: ExportFormat, make: () => ExportTable[] = () => TABLES()) => {
    tables = make
    return fetch(`${base}/tables/${format}`)
  }

  it('csv: one RFC 4180 table, the first column naming the table, then the union of the columns (the guard on every text cell)', async () => {
    const res = await getTables('csv')
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="informe-42.csv"')
    const text = new TextDecoder('utf-8', { ignoreBOM: true }).decode(await res.arrayBuffer())
    expect(text.startsWith('\uFEFFsection,id,name,city,amount,active,label,share,note\r\n')).toBe(true)
    const records = parseCsv(text.slice(1))
    expect(records.slice(1, 3)).toEqual([
      ['clientes', '1', 'José "Pepe" Pérez, Jr.', 'Peñalolén', '1234.5', 'true', '', '', ''],
      ['clientes', '2', 'línea 1\nlínea 2', 'Ñuñoa\r\nSantiago', '-3', 'false', '', '', ''],
    ])
    expect(records[4]).toEqual(['clientes', '4', `'=HYPERLINK("http://evil","x")`, "'+56 9 1234", '0', 'false', '', '', ''])
    expect(records.slice(6)).toEqual([
      ['totales', '', '', '', '1231.6', '', "'-total", '1', ''],
      ['totales', '', '', '', '-3', '', 'Ñandú, "neto"', '', ''],
    ])
  })

  it('json: an object of each table\'s rows under its name, every table present', async () => {
    const res = await getTables('json')
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="informe-42.json"')
    expect(await res.json()).toEqual({ clientes: ROWS, totales: TOTALS, vacía: [] })
    expect(await (await getTables('json', () => TABLES([]))).json()).toEqual({ clientes: [], totales: TOTALS, vacía: [] })
  })

  it('excel: a sheet per table, named after it, each with its bold header and typed cells', async () => {
    const res = await getTables('excel')
    const wb = new ExcelJS.Workbook()
    await wb.xlsx.load(Buffer.from(await res.arrayBuffer()) as unknown as ExcelJS.Buffer)
    expect(wb.worksheets.map((ws) => ws.name)).toEqual(['clientes', 'totales', 'vacía'])
    const [clientes, totales, vacia] = wb.worksheets
    expect(clientes!.rowCount).toBe(ROWS.length + 1)
    expect(clientes!.getRow(5).getCell(2).value).toBe('=HYPERLINK("http://evil","x")') // text, not a formula
    expect(totales!.getRow(1).font?.bold).toBe(true)
    expect([1, 2, 3].map((c) => totales!.getRow(1).getCell(c).value)).toEqual(['label', 'amount', 'share'])
    expect([1, 2, 3].map((c) => totales!.getRow(2).getCell(c).value)).toEqual(['-total', 1231.6, 1])
    expect(totales!.getRow(3).getCell(2).type).toBe(ExcelJS.ValueType.Number)
    expect(vacia!.rowCount).toBe(1)
  })

  it('a later table failing after the first bytes drops the connection; failing before them is an error body', async () => {
    const failing = (): ExportTable[] => [{ ...TABLES()[0]!, rows: slowly(generate(30_000)) }, { ...TABLES()[1]!, rows: generate(10, 0) }]
    for (const format of ['csv', 'json', 'excel'] as const) {
      const outcome = await getTables(format, failing).then(
        (res) => res.arrayBuffer().then(() => `complete ${res.status}`, () => `truncated ${res.status}`),
        () => 'no response',
      )
      expect(outcome, format).toBe('truncated 200')
      const early = await getTables(format, () => [{ ...TABLES()[0]!, rows: generate(10, 0) }, TABLES()[1]!])
      expect(early.status, format).toBe(500)
      expect(early.headers.get('content-disposition')).toBeNull()
    }
  })
})

describe('sendExport: large and failing streams', () => {
  it(`streams ${EXPORT_ROW_LIMIT} rows in every format`, async () => {
    const n = EXPORT_ROW_LIMIT
    const csv = await get('csv', () => generate(n))
    expect(csv.headers.get('content-length')).toBeNull() // chunked: written as it goes, not buffered
    const records = parseCsv((await csv.text()).replace(/^\uFEFF/, ''))
    expect(records).toHaveLength(n + 1)
    expect(records[n]).toEqual([String(n), `Cliente ${n}, Peñalolén`, n % 3 ? 'Santiago' : '', String(n * 1.5), String(n % 2 === 0)])

    const json = (await (await get('json', () => generate(n))).json()) as { id: number }[]
    expect(json).toHaveLength(n)
    expect(json.at(-1)!.id).toBe(n)

    const wb = new ExcelJS.Workbook()
    await wb.xlsx.load(Buffer.from(await (await get('excel', () => generate(n))).arrayBuffer()) as unknown as ExcelJS.Buffer)
    const ws = wb.worksheets[0]!
    expect(ws.rowCount).toBe(n + 1)
    expect(ws.getRow(n + 1).getCell(1).value).toBe(n)
    expect(ws.getRow(n + 1).getCell(4).value).toBe(n * 1.5)
  }, 120_000)

  it('a client that goes away stops the iteration', async () => {
    for (const format of ['csv', 'json', 'excel'] as const) {
      let closed = false
      let produced = 0
      async function* endless(): AsyncIterable<Row> {
        try {
          for (let i = 1; ; i++) {
            produced = i
            if (i % 1000 === 0) await new Promise((r) => setImmediate(r))
            yield { id: i, name: 'x'.repeat(50), city: null, amount: i, active: true }
          }
        } finally {
          closed = true
        }
      }
      const res = await get(format, endless)
      const reader = res.body!.getReader()
      await reader.read() // the download has started …
      await reader.cancel() // … and the client hangs up
      for (let t = 0; t < 200 && !closed; t++) await new Promise((r) => setTimeout(r, 25))
      expect(closed, format).toBe(true)
      expect(produced).toBeLessThan(10_000_000)
    }
  })

  it('a source failing before the first row is an ordinary error response', async () => {
    for (const format of ['csv', 'json', 'excel'] as const) {
      const res = await get(format, () => generate(10, 0))
      expect(res.status).toBe(500)
      expect(res.headers.get('content-disposition')).toBeNull()
      expect(await res.json()).toMatchObject({ success: false, error: 'Internal error' })
    }
  })

  it('a source failing midway drops the connection instead of sending a truncated file that looks complete', async () => {
    // Whether the client saw the 200 and part of the body depends on how much left the server
    // before the failure (the source here never waits for I/O); it must never see a clean end.
    for (const format of ['csv', 'json', 'excel'] as const) {
      const outcome = await get(format, () => slowly(generate(50_000, 20_000))).then(
        (res) => res.arrayBuffer().then(() => `complete ${res.status}`, () => `truncated ${res.status}`),
        () => 'no response',
      )
      expect(outcome, format).toBe('truncated 200')
    }
    // the server is still fine afterwards
    expect((await get('json')).status).toBe(200)
  })
})

describe('OpenAPI document and /docs', () => {
  let app: http.Server
  let url = ''
  let doc: OpenApiDocument

  beforeAll(async () => {
    app = http.createServer(createApp({ logger: silentLogger, log: {} as EventLog, codec: {} as EventCodec, readiness: [] }))
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(app.address() as AddressInfo).port}`
    const res = await fetch(`${url}/openapi.json`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    doc = (await res.json()) as OpenApiDocument
  })
  afterAll(async () => {
    await new Promise<void>((r) => app.close(() => r()))
  })

  const param = (path: string, name: string): OpenApiParameter | undefined => doc.paths[path]?.get?.parameters?.find((p) => p.name === name)
  const enumOf = (p: OpenApiParameter | undefined) => (p?.schema.enum ?? (p?.schema.items as { enum?: unknown[] } | undefined)?.enum) as unknown[] | undefined

  it('is OpenAPI 3.1 with a bearer scheme declared globally and the common error body', () => {
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info.title).toBeTruthy()
    expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+/)
    expect(doc.components.securitySchemes.bearerAuth).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }))
    expect(doc.security).toEqual([{ bearerAuth: [] }])
    expect(doc.components.schemas.ErrorBody).toMatchObject({ type: 'object', required: ['success', 'error', 'details'] })
    expect(doc.paths['/health']?.get?.security).toEqual([])
    // every $ref points at something that exists
    const refs = JSON.stringify(doc).match(/"#\/components\/[^"]+"/g) ?? []
    for (const r of refs) {
      const [, kind, name] = JSON.parse(r).split('/').slice(1) as string[]
      expect((doc.components as Record<string, Record<string, unknown>>)[kind!]?.[name!], r).toBeDefined()
    }
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId))
    expect(new Set(ids).size).toBe(ids.length)
  })

  it('documents a body schema for every answer, and the common error body for every error', () => {
    const errorRef = '#/components/schemas/ErrorBody'
    const sharedErrors = ['#/components/responses/Unauthorized', '#/components/responses/Forbidden', '#/components/responses/TooManyRequests']
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, r] of Object.entries(op.responses) as [string, { $ref?: string; content?: Record<string, { schema: Record<string, unknown> }> }][]) {
          const where = `${method} ${path} ${status}`
          if (r.$ref) {
            expect(sharedErrors, where).toContain(r.$ref)
            continue
          }
          if (status === '204') {
            expect(r.content, where).toBeUndefined()
            continue
          }
          const schema = r.content?.['application/json']?.schema
          if (Number(status) < 400 || (path === '/ready' && status === '503')) {
            expect(Object.values(r.content ?? {}).length, where).toBeGreaterThan(0)
            for (const c of Object.values(r.content!)) expect(c.schema, where).toBeDefined()
            continue
          }
          // one shared component: the error body, or (where the spec says so) a union that includes it
          const refs = [schema?.$ref, ...((schema?.anyOf as { $ref?: string }[] | undefined) ?? []).map((a) => a.$ref)]
          expect(refs, where).toContain(errorRef)
        }
      }
    }
  })

  it('request examples are bodies the operations accept, shown with their schema', () => {
    const withExamples = ROUTE_GROUPS.flatMap((g) => g.operations).filter((op) => op.request?.body?.example !== undefined)
    expect(withExamples.length).toBeGreaterThanOrEqual(6)
    for (const op of withExamples) {
      const body = op.request!.body!
      expect(body.schema.safeParse(body.example).error, op.operationId).toBeUndefined()
      const path = Object.keys(doc.paths).find((p) => p === op.path.replace(/:(\w+)/g, '{$1}'))!
      expect((doc.paths[path]![op.method]!.requestBody!.content['application/json'] as { example?: unknown }).example, op.operationId).toEqual(body.example)
    }
  })

  it('has every analytics endpoint with tenant_id required and the query options', () => {
    for (const ep of ANALYTICS_ENDPOINTS) {
      const op = doc.paths[ep.path]?.get
      expect(op, ep.path).toBeDefined()
      expect(op!.summary).toBeTruthy()
      expect(param(ep.path, 'tenant_id'), ep.path).toMatchObject({ in: 'query', required: true, schema: { type: 'integer' } })
      if (ep.ignores?.length) expect(op!.description).toContain(`Options that do not apply here: ${ep.ignores.join(', ')}`)
      // format on every endpoint (the spec lists it on all), documented with what it downloads
      expect(enumOf(param(ep.path, 'format')), ep.path).toEqual(['csv', 'excel', 'json'])
      expect(op!.description).toContain('`format=csv|excel|json` downloads')
      const segments = param(ep.path, 'segments')
      if (segments) {
        expect(segments.schema.type).toBe('array')
        expect(segments).toMatchObject({ style: 'form', explode: true })
        expect(enumOf(segments)).toContain('Champions')
      }
      const ids = param(ep.path, 'customer_ids')
      if (ids) expect((ids.schema.items as { type?: string }).type).toBe('integer')
      for (const p of op!.parameters ?? []) expect(p.schema.anyOf, `${ep.path} ${p.name}`).toBeUndefined()
    }
  })

  it('documents each export: the three media types of the 200, the file name and the JSON export\'s shape', () => {
    const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'
    const shapes: Record<string, unknown> = {}
    for (const ep of ANALYTICS_ENDPOINTS) {
      const ok = doc.paths[ep.path]!.get!.responses['200'] as { content: Record<string, { schema: { anyOf?: Record<string, unknown>[] } }>; headers: Record<string, { description: string }> }
      expect(Object.keys(ok.content), ep.path).toEqual(['application/json', 'text/csv', XLSX])
      expect(ok.headers['Content-Disposition']!.description, ep.path).toMatch(/filename="[a-z-]+-<tenant_id>\.<csv\|xlsx\|json>"/)
      const [body, file] = ok.content['application/json']!.schema.anyOf!
      expect(body!.$ref, ep.path).toMatch(/^#\/components\/schemas\//)
      // a list of rows (one table), or an object holding each table's rows under its name
      shapes[ep.path.split('/analytics/').at(-1)!] = file!.type === 'array' ? ((file!.items as { $ref?: string }).$ref ?? 'rows') : Object.keys(file!.properties as object)
      if (file!.type === 'object') expect(file!.required, ep.path).toEqual(Object.keys(file!.properties as object))
      if (isBodyExport(ep.export) && ep.export.tableColumn) expect(ep.export.tableColumn, ep.path).toMatch(/^[a-z_]+$/)
    }
    expect(shapes).toEqual({
      rfm: '#/components/schemas/RfmCustomer',
      clv: '#/components/schemas/ClvCustomer',
      churn: '#/components/schemas/AtRiskCustomer',
      cohorts: 'rows',
      'segments/performance': 'rows',
      dashboard: ['daily', 'kpis'],
      demographics: ['summary', 'age_analysis', 'gender_analysis', 'geographic_analysis', 'cross_demographic', 'marketing_segments'],
      '/api/cdp/v2/customers': '#/components/schemas/CustomerItem',
    })
    // the cohort rows name their retention columns after the grain: one shape per grain
    const cohorts = (doc.paths['/api/v2/cdp/analytics/cohorts']!.get!.responses['200'] as { content: Record<string, { schema: { anyOf: { items: { anyOf: { required: string[] }[] } }[] } }> }).content['application/json']!.schema.anyOf[1]!
    expect(cohorts.items.anyOf.map((s) => s.required.filter((k) => /_3$/.test(k)))).toEqual([['day_3'], ['week_3'], ['month_3']])
  })

  it('lists the enum values of tier, sort_by and period', () => {
    const clv = '/api/v2/cdp/analytics/clv'
    expect(enumOf(param(clv, 'tier'))).toEqual(expect.arrayContaining(['high', 'medium', 'low']))
    expect(enumOf(param(clv, 'sort_by'))).toEqual(['clv', 'orders', 'recency'])
    expect(param(clv, 'sort_by')!.schema.default).toBe('clv')
    expect(param(clv, 'sort_by')!.required).toBe(false)
    expect(enumOf(param('/api/v2/cdp/analytics/cohorts', 'period'))).toEqual(['daily', 'weekly', 'monthly'])
  })

  it('has processing, ingest and operations endpoints with their bodies', () => {
    const process = doc.paths['/api/v2/cdp/process/{tenantId}']?.post
    expect(process?.parameters?.[0]).toMatchObject({ name: 'tenantId', in: 'path', required: true })
    const body = process?.requestBody?.content['application/json']?.schema as { properties: Record<string, { default?: unknown; items?: { enum?: string[] } }> }
    expect(body.properties.analyses?.items?.enum).toEqual(['rfm', 'clv', 'churn'])
    expect(body.properties.batch_size?.default).toBe(1000)
    expect(doc.paths['/api/v2/cdp/process/{tenantId}/schedule']?.post?.requestBody).toBeDefined()
    expect(doc.paths['/api/v2/cdp/process/{tenantId}/schedule']?.delete).toBeDefined()
    expect(doc.paths['/api/v2/cdp/process/status/{tenantId}']?.get).toBeDefined()
    expect(doc.paths['/api/v2/cdp/process/{tenantId}/cancel']?.delete).toBeDefined()
    const ingest = doc.paths['/api/v2/cdp/ingest/orders']?.post?.requestBody?.content['application/json']?.schema as { properties: { events: { maxItems: number } } }
    expect(ingest.properties.events.maxItems).toBe(10_000)
    expect(doc.paths['/api/v2/cdp/ingest/customers']?.post).toBeDefined()
    for (const p of ['/health', '/ready', '/metrics']) expect(doc.paths[p]?.get).toBeDefined()
  })

  const schemaAt = (s: unknown): Record<string, unknown> => {
    const r = (s as { $ref?: string }).$ref
    return (r ? doc.components.schemas[r.split('/').at(-1)!] : s) as Record<string, unknown>
  }
  const methodsOf = (path: string) => Object.keys(doc.paths[path] ?? {}).sort()

  it('has the nine tenant-integration endpoints and the sync history with their bodies, parameters and statuses', () => {
    const base = '/api/v2/tenant-integrations'
    expect(methodsOf(base)).toEqual(['post'])
    expect(methodsOf(`${base}/{id}`)).toEqual(['delete', 'get', 'put'])
    for (const p of [`${base}/integration/{integrationId}`, `${base}/integration/{integrationId}/syncs`, `${base}/health`]) expect(methodsOf(p), p).toEqual(['get'])
    for (const p of [`${base}/validate/{integrationType}`, `${base}/{integrationId}/test`, `${base}/{integrationId}/sync`]) expect(methodsOf(p), p).toEqual(['post'])
    const ops = Object.entries(doc.paths).filter(([p]) => p.startsWith(base)).flatMap(([, item]) => Object.values(item))
    expect(ops).toHaveLength(10)
    for (const op of ops) {
      expect(op.tags, op.operationId).toEqual(['Integrations'])
      expect(op.description, op.operationId).toBeTruthy()
      expect(op.security, op.operationId).toBeUndefined() // the global bearer requirement
      expect(op.responses['401'], op.operationId).toBeDefined()
    }

    // create: the discriminated union on integration_type, each shape with its spec credentials
    const create = doc.paths[base]!.post!
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', '409', '502']))
    expect(create.responses['400']).toMatchObject({ description: expect.stringContaining('INVALID_APP_KEY') })
    expect(create.responses['400']).toMatchObject({ description: expect.stringContaining('Invalid credentials') })
    const body = schemaAt(create.requestBody!.content['application/json']!.schema)
    expect(create.requestBody!.required).toBe(true)
    expect((body.properties as Record<string, { enum?: string[] }>).integration_type?.enum).toEqual(['commerce_platform', 'marketplace', 'search_ads', 'social_ads'])
    const discriminator = body.discriminator as { propertyName: string; mapping: Record<string, string> }
    expect(discriminator.propertyName).toBe('integration_type')
    expect(Object.keys(discriminator.mapping)).toEqual(['commerce_platform', 'marketplace', 'search_ads', 'social_ads'])
    const variant = (type: string) => schemaAt({ $ref: discriminator.mapping[type] })
    const commerce = variant('commerce_platform')
    expect(commerce.required).toEqual(['tenant_id', 'integration_type', 'account_name', 'environment', 'app_key', 'app_token'])
    expect(commerce.additionalProperties).toBe(false)
    expect((commerce.properties as Record<string, unknown>).integration_type).toMatchObject({ const: 'commerce_platform' })
    // account names are matched case-insensitively: the pattern says so without a flag
    expect(new RegExp((commerce.properties as Record<string, { pattern: string }>).account_name!.pattern).test('MyStore-1')).toBe(true)
    expect(variant('marketplace').required).toEqual(expect.arrayContaining(['client_id', 'client_secret', 'redirect_uri']))
    expect(variant('search_ads').required).toEqual(expect.arrayContaining(['customer_id', 'developer_token', 'refresh_token']))
    expect(variant('social_ads').required).toEqual(expect.arrayContaining(['app_id', 'app_secret', 'access_token']))
    const configuration = schemaAt((commerce.properties as Record<string, unknown>).configuration)
    expect((configuration.properties as Record<string, { enum?: string[] }>).sync_interval?.enum).toContain('manual')

    const list = doc.paths[`${base}/{id}`]!
    expect(list.get!.parameters).toEqual([expect.objectContaining({ name: 'id', in: 'path', required: true })])
    expect(list.put!.requestBody!.content['application/json']!.schema).toMatchObject({ additionalProperties: false, properties: { is_active: { type: 'boolean' } } })
    expect(list.put!.description).toContain('changes')
    expect(Object.keys(list.put!.responses)).toEqual(expect.arrayContaining(['200', '400', '404', '502']))
    expect(Object.keys(list.delete!.responses)).toEqual(expect.arrayContaining(['200', '404']))
    const validate = doc.paths[`${base}/validate/{integrationType}`]!.post!
    expect(validate.parameters?.[0]).toMatchObject({ name: 'integrationType', in: 'path', schema: { enum: expect.arrayContaining(['commerce_platform']) } })
    const validateBody = validate.requestBody!.content['application/json']!.schema as { oneOf: { title: string; required: string[] }[] }
    expect(validateBody.oneOf[0]).toMatchObject({ title: 'commerce_platform', required: ['account_name', 'environment', 'app_key', 'app_token'] })
    expect(Object.keys(validate.responses)).toEqual(['200', '400', '401', '413', '429', '502']) // 413: a body over the JSON parser's limit
    expect(Object.keys(doc.paths[`${base}/{integrationId}/test`]!.post!.responses)).toEqual(expect.arrayContaining(['200', '400', '404', '502']))
    const sync = doc.paths[`${base}/{integrationId}/sync`]!.post!
    expect(Object.keys(sync.responses)).toEqual(expect.arrayContaining(['202', '400', '404', '409']))
    expect(sync.responses['200']).toBeUndefined()
    expect((sync.requestBody!.content['application/json']!.schema.properties as Record<string, { enum?: string[] }>).sync_type?.enum).toEqual(['full', 'incremental'])
  })

  it('has the audience-sync endpoints with tenant_id in the query', () => {
    const base = '/api/v2/cdp/audience-syncs'
    expect(methodsOf(base)).toEqual(['get', 'post'])
    expect(methodsOf(`${base}/{id}`)).toEqual(['delete', 'get', 'put'])
    for (const method of ['get', 'put', 'delete'] as const) {
      const op = doc.paths[`${base}/{id}`]![method]!
      expect(op.parameters?.map((p) => [p.name, p.in, p.required])).toEqual([['id', 'path', true], ['tenant_id', 'query', true]])
      expect(op.responses['404']).toBeDefined()
    }
    expect(param(base, 'tenant_id')).toMatchObject({ required: true, schema: { type: 'integer' } })
    const create = doc.paths[base]!.post!
    expect(create.responses['201']).toBeDefined()
    expect(create.requestBody!.content['application/json']!.schema).toMatchObject({ required: ['tenant_id', 'segment', 'ad_account_id', 'access_token'] })
    expect(((create.requestBody!.content['application/json']!.schema.properties as Record<string, { enum: string[] }>).segment!.enum)).toHaveLength(11)
    expect((doc.paths[`${base}/{id}`]!.put!.requestBody!.content['application/json']!.schema.properties as Record<string, { enum?: string[] }>).status?.enum).toEqual(['active', 'paused'])
  })

  it('processing, integration and audience-sync operations document their 429 and their budget; ingest and webhooks have none', () => {
    const limited = Object.entries(doc.paths).filter(([p]) => /^\/api\/v2\/(cdp\/process|tenant-integrations|cdp\/audience-syncs)/.test(p))
    expect(limited.length).toBeGreaterThanOrEqual(10)
    for (const [p, ops] of limited) {
      for (const [m, op] of Object.entries(ops)) {
        expect(op.responses['429'], `${m} ${p}`).toEqual({ $ref: '#/components/responses/TooManyRequests' })
        expect(op.description, `${m} ${p}`).toMatch(/Rate limit: an? (job|operation)/)
      }
    }
    const withBudget = (re: RegExp) => limited.flatMap(([p, ops]) => Object.entries(ops).filter(([, op]) => re.test(op.description ?? '')).map(([m]) => `${m} ${p}`)).sort()
    expect(withBudget(/Rate limit: a job/)).toEqual([
      'post /api/v2/cdp/audience-syncs',
      'post /api/v2/cdp/process/{tenantId}',
      'post /api/v2/cdp/process/{tenantId}/schedule',
      'post /api/v2/tenant-integrations',
      'post /api/v2/tenant-integrations/validate/{integrationType}',
      'post /api/v2/tenant-integrations/{integrationId}/sync',
      'post /api/v2/tenant-integrations/{integrationId}/test',
    ])
    expect(withBudget(/with new credentials, a job/)).toEqual(['put /api/v2/cdp/audience-syncs/{id}', 'put /api/v2/tenant-integrations/{id}'])
    expect(doc.paths['/api/v2/cdp/ingest/orders']!.post!.responses['429']).toBeUndefined()
    expect(doc.paths['/webhooks/social-ads']!.post!.responses['429']).toBeUndefined()
  })

  it('has the social-ads webhook as a public route with its handshake and signature', () => {
    const hook = doc.paths['/webhooks/social-ads']!
    expect(methodsOf('/webhooks/social-ads')).toEqual(['get', 'post'])
    for (const op of [hook.get!, hook.post!]) expect(op.security, op.operationId).toEqual([]) // no bearer, like /health
    expect(hook.get!.parameters?.map((p) => [p.name, p.in, p.required])).toEqual([
      ['hub.mode', 'query', true],
      ['hub.verify_token', 'query', true],
      ['hub.challenge', 'query', true],
    ])
    expect(Object.keys(hook.get!.responses)).toEqual(['200', '400', '403'])
    expect(hook.post!.parameters).toEqual([expect.objectContaining({ name: 'X-Hub-Signature-256', in: 'header', required: true })])
    expect(Object.keys(hook.post!.responses)).toEqual(expect.arrayContaining(['200', '400', '401']))
    expect(hook.post!.requestBody!.content['application/json']!.schema).toMatchObject({ required: ['entry'] })
  })
})
