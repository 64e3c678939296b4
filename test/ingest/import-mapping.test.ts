/**
 * `cdp import` without anything running, in process: column mapping, the unknown-column warning,
 * field-count checks and the raw record in rejects. The import loop runs against an in-memory sink
 * (the EventSink port). The command itself as a child process (help text, a shop export, usage
 * errors): test/ingest/import-mapping-cli.int.test.ts.
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { readRecords } from '../../pipelines/ingest/file-reader.ts'
import { checkColumns, ColumnMapError, mapColumns, parseColumnMap, similarColumn } from '../../pipelines/ingest/column-map.ts'
import { CUSTOMER_INPUT_FIELDS, ORDER_INPUT_FIELDS, ORDER_ITEM_FIELDS } from '../../pipelines/ingest/validation.ts'
import { ORDER_EVENT_TYPES, type CustomerUpserted, type OrderEvent } from '../../common/events.ts'
import { DEFAULT_RETRY_POLICY } from '../../common/retry.ts'
import type { IngestKind } from '../../pipelines/ingest/publisher.ts'
import { importRecords, type ImportOptions } from '../../pipelines/ingest/importer.ts'
import { tmpDir } from '../helpers.ts'

/** The EventSink port in memory. */
class MemorySink {
  readonly batches: { kind: IngestKind; events: (OrderEvent | CustomerUpserted)[] }[] = []
  async publish(kind: IngestKind, events: (OrderEvent | CustomerUpserted)[]): Promise<void> {
    this.batches.push({ kind, events: [...events] })
  }
  events(kind: IngestKind) {
    return this.batches.filter((b) => b.kind === kind).flatMap((b) => b.events)
  }
}

const UCI_MAP = 'order_id=InvoiceNo,occurred_at=InvoiceDate,customer_id=CustomerID,total=TotalPrice'

function options(over: Partial<ImportOptions> = {}): ImportOptions {
  return {
    tenant: 7,
    columns: new Map(),
    skip: 0,
    batchSize: 100,
    retry: DEFAULT_RETRY_POLICY,
    now: Date.UTC(2030, 0, 1),
    knownKeys: new Set(),
    ...over,
  }
}

describe('column mapping (pure)', () => {
  it('parses ours=theirs lists, repeated flags and one column feeding two fields', () => {
    const map = parseColumnMap([UCI_MAP, ' placed_at = InvoiceDate ,'], ORDER_INPUT_FIELDS)
    expect([...map]).toEqual([
      ['order_id', 'InvoiceNo'],
      ['occurred_at', 'InvoiceDate'],
      ['customer_id', 'CustomerID'],
      ['total', 'TotalPrice'],
      ['placed_at', 'InvoiceDate'],
    ])
  })

  it('rejects an unknown field of ours, listing the accepted ones; a malformed entry; a field mapped twice', () => {
    expect(() => parseColumnMap(['order=InvoiceNo'], ORDER_INPUT_FIELDS, 'accepted for --kind orders')).toThrow(
      new ColumnMapError(`--columns: "order" is not one of our fields; accepted for --kind orders: ${ORDER_INPUT_FIELDS.join(', ')}`),
    )
    expect(() => parseColumnMap(['email=Mail'], ORDER_INPUT_FIELDS)).toThrow('"email" is not one of our fields')
    expect(() => parseColumnMap(['order_id'], ORDER_INPUT_FIELDS)).toThrow('"order_id" is not ours=theirs')
    expect(() => parseColumnMap(['order_id='], ORDER_INPUT_FIELDS)).toThrow('is not ours=theirs')
    expect(() => parseColumnMap(['total=A,total=B'], ORDER_INPUT_FIELDS)).toThrow('"total" is mapped twice (to "A" and "B")')
  })

  it('finds mapped columns the file lacks, columns nobody takes, and our-named columns the mapping replaces', () => {
    const map = parseColumnMap([UCI_MAP, 'currency=Moneda'], ORDER_INPUT_FIELDS)
    const check = checkColumns(map, ['InvoiceNo', 'InvoiceDate', 'CustomerID', 'TotalPrice', 'Country', 'total', 'status'], ORDER_INPUT_FIELDS)
    expect(check).toEqual({ missing: ['Moneda'], unknown: ['Country'], shadowed: ['total'] })
    expect(similarColumn('invoice_no', ['InvoiceNo', 'x'])).toBe('InvoiceNo')
    expect(similarColumn('Total Price', ['TotalPrice'])).toBe('TotalPrice')
    expect(similarColumn('nothing', ['InvoiceNo'])).toBeUndefined()
  })

  it('renames a record: mapped fields take their column, replaced our-named columns go, the rest stays', () => {
    const map = parseColumnMap(['order_id=InvoiceNo,total=TotalPrice,placed_at=occurred_at'], ORDER_INPUT_FIELDS)
    const rec = mapColumns({ InvoiceNo: '536365', TotalPrice: '1.50', total: '99', occurred_at: '2010-12-01', Country: 'UK' }, map)
    // The file's own columns stay too (validation ignores keys it does not know).
    expect(rec).toEqual({ InvoiceNo: '536365', TotalPrice: '1.50', occurred_at: '2010-12-01', Country: 'UK', order_id: '536365', total: '1.50', placed_at: '2010-12-01' })
    // An absent (CSV: empty) column leaves the field absent.
    expect(mapColumns({ InvoiceNo: 'A' }, map)).toEqual({ InvoiceNo: 'A', order_id: 'A' })
    const same = { a: 1 }
    expect(mapColumns(same, new Map())).toBe(same)
    // Swapping two of our fields works.
    expect(mapColumns({ occurred_at: 1, placed_at: 2 }, new Map([['occurred_at', 'placed_at'], ['placed_at', 'occurred_at']]))).toEqual({ occurred_at: 2, placed_at: 1 })
  })
})

describe('import loop with an in-memory sink', () => {
  it('maps columns, fills the currency, and writes rejects with their raw record', async () => {
    const dir = tmpDir()
    const file = path.join(dir, 'uci.csv')
    fs.writeFileSync(
      file,
      [
        'InvoiceNo,InvoiceDate,CustomerID,TotalPrice,Country',
        '536365,2010-12-01,17850,139.12,United Kingdom',
        '536366,2010-12-01,,22.20,United Kingdom', // no customer
        '536367,2010-12-01,13047,278.73',
        '536368,2010-12-01,13047,70.05,"Channel Islands, UK"',
        '536369,2010-12-01,13047,-1,France,extra',
        '',
      ].join('\n'),
    )
    const sink = new MemorySink()
    const rejects: string[] = []
    const result = await importRecords(readRecords(file), options({ kind: 'orders', columns: parseColumnMap([UCI_MAP], ORDER_INPUT_FIELDS), currency: 'GBP' }), {
      sink,
      writeRejects: async (lines) => void rejects.push(lines),
    })
    expect(result).toMatchObject({ read: 5, skipped: 0, accepted: 2, rejected: 3, acknowledged: 2, orders: 2, customers: 0, handled: 5 })
    expect(result.failure).toBeUndefined()
    expect(sink.events('orders').map((e) => [(e as OrderEvent).order_id, (e as OrderEvent).total, (e as OrderEvent).currency, e.tenant_id, e.source])).toEqual([
      ['536365', '139.12', 'GBP', 7, 'import'],
      ['536368', '70.05', 'GBP', 7, 'import'],
    ])
    expect(rejects.join('').trim().split('\n').map((l) => JSON.parse(l))).toEqual([
      { line: 3, raw: '536366,2010-12-01,,22.20,United Kingdom', errors: [{ path: 'customer_id', code: 'required', message: 'is required' }] },
      { line: 4, raw: '536367,2010-12-01,13047,278.73', errors: [{ path: '', code: 'wrong_field_count', message: 'row has 4 fields, header has 5' }] },
      { line: 6, raw: '536369,2010-12-01,13047,-1,France,extra', errors: [{ path: '', code: 'wrong_field_count', message: 'row has 6 fields, header has 5' }] },
    ])
  })

  it('keeps a currency the record has; JSONL rejects carry the line as written', async () => {
    const dir = tmpDir()
    const file = path.join(dir, 'o.jsonl')
    fs.writeFileSync(file, '{"id":"A","cust":1,"at":"2024-01-01","sum":"5","currency":"usd"}\n{"id":"B","cust":2,"at":"2024-01-01","sum":"5"}\n{"id":"C", oops}\n')
    const sink = new MemorySink()
    const rejects: string[] = []
    const columns = parseColumnMap(['order_id=id,customer_id=cust,occurred_at=at,total=sum'], ORDER_INPUT_FIELDS)
    const result = await importRecords(readRecords(file), options({ columns, currency: 'EUR' }), { sink, writeRejects: async (l) => void rejects.push(l) })
    expect(result).toMatchObject({ accepted: 2, rejected: 1, orders: 2 })
    expect(sink.events('orders').map((e) => (e as OrderEvent).currency)).toEqual(['USD', 'EUR'])
    expect(JSON.parse(rejects.join(''))).toEqual({ line: 3, raw: '{"id":"C", oops}', errors: [{ path: '', code: 'invalid_json', message: expect.stringMatching(/^invalid JSON/) }] })
  })

  it("holds orders to the tenant's currency when known, and counts orders without any", async () => {
    const dir = tmpDir()
    const file = path.join(dir, 'cur.csv')
    fs.writeFileSync(file, 'order_id,customer_id,occurred_at,total,currency\nA,1,2024-01-01,1,GBP\nB,1,2024-01-01,1,\nC,1,2024-01-01,1,EUR\n')
    const orders = async (over: Partial<ImportOptions>) => {
      const sink = new MemorySink()
      const rejects: string[] = []
      const result = await importRecords(readRecords(file), options(over), { sink, writeRejects: async (l) => void rejects.push(l) })
      const codes = rejects.join('').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l).errors.map((e: { code: string }) => e.code).join())
      return { result, ids: sink.events('orders').map((e) => `${(e as OrderEvent).order_id}:${(e as OrderEvent).currency}`), codes }
    }
    // Known tenant currency: a blank one takes it, another one is refused.
    expect(await orders({ tenantCurrency: 'GBP' })).toMatchObject({ ids: ['A:GBP', 'B:GBP'], codes: ['currency_mismatch'] })
    // Unknown: a blank currency is refused, unless --currency fills it.
    const none = await orders({})
    expect(none).toMatchObject({ ids: ['A:GBP', 'C:EUR'], codes: ['required'] })
    expect(none.result.missingCurrency).toBe(1)
    expect(await orders({ currency: 'GBP' })).toMatchObject({ ids: ['A:GBP', 'B:GBP', 'C:EUR'], codes: [] })
  })

  it('names keys no field or mapping takes once, not per record', async () => {
    const dir = tmpDir()
    const file = path.join(dir, 'c.jsonl')
    const line = (id: number, extra: string) => `{"customer_id":${id},"occurred_at":"2024-01-01","${extra}":1,"vip":true}`
    fs.writeFileSync(file, [line(1, 'loyalty'), line(2, 'loyalty'), line(3, 'segment')].join('\n'))
    const result = await importRecords(readRecords(file), options({ kind: 'customers', knownKeys: new Set(CUSTOMER_INPUT_FIELDS) }), {
      sink: new MemorySink(),
      writeRejects: async () => {},
    })
    expect(result.unknownKeys).toEqual(['loyalty', 'vip', 'segment'])
    expect(result.customers).toBe(3)
  })

  it('publishes customers before orders in each window, in batches of at most --batch-size', async () => {
    const dir = tmpDir()
    const file = path.join(dir, 'mixed.jsonl')
    const lines: string[] = []
    for (let i = 1; i <= 25; i++) {
      lines.push(JSON.stringify({ customer_id: i, occurred_at: '2024-01-01' }))
      lines.push(JSON.stringify({ order_id: `O${i}`, customer_id: i, occurred_at: '2024-01-02', total: '1.00', currency: 'ARS' }))
    }
    fs.writeFileSync(file, lines.join('\n'))
    const sink = new MemorySink()
    const result = await importRecords(readRecords(file), options({ batchSize: 10 }), { sink, writeRejects: async () => {} })
    expect(result).toMatchObject({ read: 50, accepted: 50, acknowledged: 50, customers: 25, orders: 25, handled: 50 })
    expect(sink.batches.every((b) => b.events.length <= 10)).toBe(true)
    // Every order's customer was published in an earlier or the same window, before the order.
    const seen = new Set<number>()
    for (const b of sink.batches) {
      for (const e of b.events) {
        if (b.kind === 'customers') seen.add(e.customer_id)
        else expect(seen.has(e.customer_id), `order of customer ${e.customer_id}`).toBe(true)
      }
    }
  })

  it('--skip N skips the first N records, rejects included', async () => {
    const dir = tmpDir()
    const file = path.join(dir, 's.csv')
    fs.writeFileSync(file, 'order_id,customer_id,occurred_at,total\nA,1,2024-01-01,1\nB,1,2024-01-01\nC,1,2024-01-01,1\nD,1,2024-01-01,1\n')
    const sink = new MemorySink()
    const result = await importRecords(readRecords(file), options({ skip: 2, currency: 'ARS' }), { sink, writeRejects: async () => {} })
    expect(result).toMatchObject({ read: 4, skipped: 2, accepted: 2, rejected: 0, acknowledged: 2, handled: 4 })
    expect(sink.events('orders').map((e) => (e as OrderEvent).order_id)).toEqual(['C', 'D'])
  })
})
