import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { CsvError, CsvParser, parseCsv, type CsvRow } from '../../pipelines/ingest/csv.ts'
import { countLines, estimateLineCount, importFormat, readColumns, readRecords, type ReadItem } from '../../pipelines/ingest/file-reader.ts'

const fields = (rows: CsvRow[]) => rows.map((r) => r.fields)

/** Feeds `text` in pieces of `size` characters, to exercise state kept across chunks. */
function parseChunked(text: string, size: number): CsvRow[] {
  const p = new CsvParser()
  const rows: CsvRow[] = []
  for (let i = 0; i < text.length; i += size) rows.push(...p.push(text.slice(i, i + size)))
  return [...rows, ...p.end()]
}

function errorOf(fn: () => unknown): { message: string; line: number } | undefined {
  try {
    fn()
  } catch (err) {
    if (err instanceof CsvError) return { message: err.message, line: err.line }
    throw err
  }
  return undefined
}

describe('CsvParser', () => {
  it('parses plain rows with and without a final line break', () => {
    expect(fields(parseCsv('a,b,c\n1,2,3\n'))).toEqual([['a', 'b', 'c'], ['1', '2', '3']])
    expect(fields(parseCsv('a,b,c\n1,2,3'))).toEqual([['a', 'b', 'c'], ['1', '2', '3']])
  })

  it('keeps empty fields, including leading and trailing ones', () => {
    expect(fields(parseCsv(',a,,b,\n'))).toEqual([['', 'a', '', 'b', '']])
    expect(fields(parseCsv('a,'))).toEqual([['a', '']])
  })

  it('handles quoted fields with delimiters, doubled quotes and line breaks', () => {
    const text = 'id,name,note\n1,"Pérez, Juan","He said ""hi""\nand left"\n2,"",x\n'
    expect(parseCsv(text)).toEqual([
      { line: 1, fields: ['id', 'name', 'note'], raw: 'id,name,note' },
      { line: 2, fields: ['1', 'Pérez, Juan', 'He said "hi"\nand left'], raw: '1,"Pérez, Juan","He said ""hi""\nand left"' },
      { line: 4, fields: ['2', '', 'x'], raw: '2,"",x' },
    ])
  })

  it('handles CRLF, lone CR and CRLF inside quotes', () => {
    expect(parseCsv('a,b\r\n1,"x\r\ny"\r\n2,z\r\n')).toEqual([
      { line: 1, fields: ['a', 'b'], raw: 'a,b' },
      { line: 2, fields: ['1', 'x\r\ny'], raw: '1,"x\r\ny"' },
      { line: 4, fields: ['2', 'z'], raw: '2,z' },
    ])
    expect(fields(parseCsv('a\rb\rc'))).toEqual([['a'], ['b'], ['c']])
  })

  it('skips blank lines but keeps a row holding one quoted empty field', () => {
    expect(parseCsv('a\n\n\r\nb\n""\n')).toEqual([
      { line: 1, fields: ['a'], raw: 'a' },
      { line: 4, fields: ['b'], raw: 'b' },
      { line: 5, fields: [''], raw: '""' },
    ])
  })

  it('strips a UTF-8 BOM', () => {
    expect(fields(parseCsv('\uFEFFid,email\n1,a@b.co\n'))).toEqual([['id', 'email'], ['1', 'a@b.co']])
  })

  it('keeps a quote inside an unquoted field literally', () => {
    expect(fields(parseCsv('5" screen,x\n'))).toEqual([['5" screen', 'x']])
  })

  it('supports another delimiter', () => {
    expect(fields(parseCsv('a;"b;c"\n', { delimiter: ';' }))).toEqual([['a', 'b;c']])
    expect(() => new CsvParser({ delimiter: '"' })).toThrow('invalid CSV delimiter')
  })

  it('gives the same rows whatever the chunk boundaries', () => {
    const text = '\uFEFFid,name,items\r\n1,"A ""quoted"", name","[{""sku"":""X""}]"\r\n\r\n2,"multi\nline",\r\n3,plain,"a,b"'
    const whole = parseCsv(text)
    expect(whole).toEqual([
      { line: 1, fields: ['id', 'name', 'items'], raw: 'id,name,items' },
      { line: 2, fields: ['1', 'A "quoted", name', '[{"sku":"X"}]'], raw: '1,"A ""quoted"", name","[{""sku"":""X""}]"' },
      { line: 4, fields: ['2', 'multi\nline', ''], raw: '2,"multi\nline",' },
      { line: 6, fields: ['3', 'plain', 'a,b'], raw: '3,plain,"a,b"' },
    ])
    for (const size of [1, 2, 3, 5, 7, 13]) expect(parseChunked(text, size)).toEqual(whole)
  })

  it("keeps each row's source text, whatever the chunk boundaries and line ends", () => {
    const text = 'a,"b\r\nc"\r\n\r\nd,e\rf,"g,""h"""\n"i"'
    const want = [
      { line: 1, fields: ['a', 'b\r\nc'], raw: 'a,"b\r\nc"' },
      { line: 4, fields: ['d', 'e'], raw: 'd,e' },
      { line: 5, fields: ['f', 'g,"h"'], raw: 'f,"g,""h"""' },
      { line: 6, fields: ['i'], raw: '"i"' },
    ]
    expect(parseCsv(text)).toEqual(want)
    for (const size of [1, 2, 3, 4, 5, 8]) expect(parseChunked(text, size)).toEqual(want)
  })

  it('bounds a row of delimiters only', () => {
    expect(errorOf(() => parseCsv(','.repeat(20), { maxRowLength: 10 }))).toEqual({ message: 'line 1: row longer than 10 characters (unbalanced quote?)', line: 1 })
  })

  it('rejects text after a closing quote', () => {
    expect(errorOf(() => parseCsv('a\n"ab"c,d\n'))).toEqual({ message: 'line 2: unexpected "c" after the closing quote of a field', line: 2 })
  })

  it('rejects a quote that is never closed, pointing at where it opened', () => {
    expect(errorOf(() => parseCsv('a,b\n1,"open\n2,3\n4,5\n'))).toEqual({ message: 'line 2: quoted field is never closed', line: 2 })
  })

  it('bounds memory: an over-long row fails instead of buffering the rest of the file', () => {
    const p = new CsvParser({ maxRowLength: 10 })
    expect(p.push('ok\n"')).toEqual([{ line: 1, fields: ['ok'], raw: 'ok' }])
    expect(errorOf(() => p.push('x'.repeat(11)))).toEqual({ message: 'line 2: row longer than 10 characters (unbalanced quote?)', line: 2 })
  })
})

describe('readRecords', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cdp-reader-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const file = (name: string, content: string | Buffer) => {
    const path = join(dir, name)
    writeFileSync(path, content)
    return path
  }
  const collect = async (path: string, opts?: Parameters<typeof readRecords>[1]) => {
    const items: ReadItem[] = []
    for await (const item of readRecords(path, opts)) items.push(item)
    return items
  }

  it('reads JSONL, skipping blank lines and reporting invalid lines with their number', async () => {
    const path = file('orders.jsonl', '{"order_id":"A","total":10}\n\n{"order_id":"B",\r\n[1,2]\n  \n{"order_id":"C","items":[{"sku":"X"}]}')
    expect(await collect(path)).toEqual([
      { line: 1, raw: '{"order_id":"A","total":10}', record: { order_id: 'A', total: 10 } },
      { line: 3, raw: '{"order_id":"B",', error: { path: '', code: 'invalid_json', message: expect.stringMatching(/^invalid JSON: /) } },
      { line: 4, raw: '[1,2]', error: { path: '', code: 'not_an_object', message: 'expected a JSON object, got an array' } },
      { line: 6, raw: '{"order_id":"C","items":[{"sku":"X"}]}', record: { order_id: 'C', items: [{ sku: 'X' }] } },
    ])
  })

  it('reads .ndjson with a BOM and multi-byte characters split across stream chunks', async () => {
    const name = 'ñ'.repeat(70_000) // 140 KB of 2-byte characters: spans several 64 KiB reads
    const path = file('c.NDJSON', `\uFEFF{"first_name":"${name}"}\n{"first_name":"José"}\n`)
    const items = await collect(path)
    expect(items).toEqual([
      { line: 1, raw: `{"first_name":"${name}"}`, record: { first_name: name } },
      { line: 2, raw: '{"first_name":"José"}', record: { first_name: 'José' } },
    ])
  })

  it('reports an over-long JSONL line and carries on with the next one', async () => {
    const path = file('long.jsonl', `{"a":"${'x'.repeat(100)}"}\n{"b":1}\n`)
    expect(await collect(path, { maxLineLength: 50 })).toEqual([
      { line: 1, raw: null, error: { path: '', code: 'line_too_long', message: 'line longer than 50 bytes' } },
      { line: 2, raw: '{"b":1}', record: { b: 1 } },
    ])
  })

  it('reads CSV into records: empty fields absent, JSON columns parsed, bad rows reported with their raw text', async () => {
    const csv = [
      'order_id,customer_id,total,items,note',
      'A-1,7,"1,5",,',
      'A-2,8,25.00,"[{""sku"":""X"",""quantity"":2,""unit_price"":""12.50""}]","multi',
      'line"',
      'A-3,9,1,[oops,',
      'A-4,9,1,,,extra',
      'A-5,9,1,,,',
      'A-6,9,1',
      'A-7,9,1,,"a, b"',
      '',
    ].join('\r\n')
    expect(await collect(file('orders.csv', csv))).toEqual([
      { line: 2, raw: 'A-1,7,"1,5",,', record: { order_id: 'A-1', customer_id: '7', total: '1,5' } },
      {
        line: 3,
        raw: 'A-2,8,25.00,"[{""sku"":""X"",""quantity"":2,""unit_price"":""12.50""}]","multi\r\nline"',
        record: { order_id: 'A-2', customer_id: '8', total: '25.00', items: [{ sku: 'X', quantity: 2, unit_price: '12.50' }], note: 'multi\r\nline' },
      },
      { line: 5, raw: 'A-3,9,1,[oops,', error: { path: 'items', code: 'invalid_json', message: expect.stringMatching(/^column "items": invalid JSON: /) } },
      { line: 6, raw: 'A-4,9,1,,,extra', error: { path: '', code: 'wrong_field_count', message: 'row has 6 fields, header has 5' } },
      // A stray trailing delimiter is an extra field too: it is how a value slides into the wrong column.
      { line: 7, raw: 'A-5,9,1,,,', error: { path: '', code: 'wrong_field_count', message: 'row has 6 fields, header has 5' } },
      { line: 8, raw: 'A-6,9,1', error: { path: '', code: 'wrong_field_count', message: 'row has 3 fields, header has 5' } },
      // Delimiters and line breaks inside quotes are data, not field separators.
      { line: 9, raw: 'A-7,9,1,,"a, b"', record: { order_id: 'A-7', customer_id: '9', total: '1', note: 'a, b' } },
    ])
  })

  it('counts the fields of quoted rows that span lines and stream chunks as one row each', async () => {
    // Rows longer than a stream chunk (64 KiB) with commas and line breaks inside quotes.
    const long = `"${'x,\n'.repeat(30_000)}"`
    const csv = `a,b,c\n1,${long},3\n2,${long}\n`
    const items = await collect(file('long.csv', csv))
    expect(items.map((i) => ('record' in i ? { line: i.line, keys: Object.keys(i.record) } : { line: i.line, error: i.error.message }))).toEqual([
      { line: 2, keys: ['a', 'b', 'c'] },
      { line: 30_003, error: 'row has 2 fields, header has 3' },
    ])
    expect(items[0]!.raw).toBe(`1,${long},3`)
    expect(items[1]!.raw).toBe(`2,${long}`)
  })

  it('reads the columns of a CSV header and the keys of the first JSONL records', async () => {
    expect(await readColumns(file('cols.csv', '\uFEFFInvoiceNo, InvoiceDate ,,TotalPrice\r\n1,2,3,4\n'))).toEqual(['InvoiceNo', 'InvoiceDate', 'TotalPrice'])
    expect(await readColumns(file('empty.csv', ''))).toEqual([])
    const jsonl = file('cols.jsonl', '{"a":1}\nnot json\n{"b":2,"a":3}\n{"c":4}\n')
    expect(await readColumns(jsonl)).toEqual(['a', 'b', 'c'])
    expect(await readColumns(jsonl, { sample: 2 })).toEqual(['a', 'b'])
  })

  it('fails on a CSV quote that never closes, naming file and line', async () => {
    const path = file('broken.csv', 'a,b\n1,"x\n2,3\n')
    await expect(collect(path)).rejects.toThrow(`${path}: line 2: quoted field is never closed`)
  })

  it('fails on duplicate CSV column names', async () => {
    const path = file('dup.csv', 'a,b,a\n1,2,3\n')
    await expect(collect(path)).rejects.toThrow(`${path}: line 1: duplicate column "a" in the header`)
  })

  it('rejects unsupported extensions before reading', () => {
    expect(() => readRecords('/nowhere/data.xlsx')).toThrow(
      'unsupported import file "/nowhere/data.xlsx": expected a .jsonl, .ndjson or .csv file, got ".xlsx"',
    )
    expect(() => importFormat('/nowhere/data')).toThrow('got "(no extension)"')
    expect(importFormat('x.JSONL')).toBe('jsonl')
  })

  it('counts and estimates lines', async () => {
    expect(await countLines(file('n1.txt', 'a\nb\nc\n'))).toBe(3)
    expect(await countLines(file('n2.txt', 'a\nb\nc'))).toBe(3)
    expect(await countLines(file('n3.txt', ''))).toBe(0)
    const big = file('n4.txt', ('y'.repeat(99) + '\n').repeat(10_000))
    expect(await countLines(big)).toBe(10_000)
    expect(await estimateLineCount(big, 10_000)).toBe(10_000)
    expect(await estimateLineCount(file('n5.txt', 'a\nb\n'))).toBe(2)
  })
})
