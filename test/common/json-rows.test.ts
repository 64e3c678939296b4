import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { compactValues, insertJsonRows, openStore, type Store } from '../../common/store/clickhouse.ts'

describe('compactValues', () => {
  it('gives the values under the first row\'s keys', () => {
    expect(compactValues([{ a: 1, b: 'x\n"y', c: null, d: [1, 2] }, { a: 2, b: '', c: 3.5, d: [] }])).toEqual({ columns: ['a', 'b', 'c', 'd'], values: [[1, 'x\n"y', null, [1, 2]], [2, '', 3.5, []]] })
  })

  it('declines rows with other keys, another key order or an undefined value', () => {
    expect(compactValues([{ a: 1, b: 2 }, { a: 1 }])).toBeNull()
    expect(compactValues([{ a: 1, b: 2 }, { a: 1, b: 2, c: 3 }])).toBeNull()
    expect(compactValues([{ a: 1, b: 2 }, { b: 2, a: 1 }])).toBeNull()
    expect(compactValues([{ a: 1, b: 2 }, { a: 1, b: undefined }])).toBeNull()
    expect(compactValues([{ 'a-b': 1 }])).toBeNull()
  })
})

describe('insertJsonRows', () => {
  let store: Store
  let dir: string
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'json-rows-'))
    store = await openStore({ database: 'cdp', chdbPath: dir })
    await store.command({ query: `CREATE TABLE t (k UInt32, s String, n Nullable(Float64), m Decimal(15, 2), at DateTime64(3, 'UTC'), xs Array(Int64), items Array(Tuple(sku String, name Nullable(String), quantity UInt32)), d UInt8 DEFAULT 7) ENGINE = MergeTree ORDER BY k` })
  })
  afterAll(async () => {
    await store?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('stores the same rows whether they go compact (one shape) or one object each (mixed shapes)', async () => {
    // items: named tuples as objects (the order events' items), one with its Nullable name left out.
    const row = (k: number) => ({ k, s: `tab\there "q" \\ ü ${k}`, n: k % 2 ? null : k / 3, m: '-12.05', at: '2025-07-01T10:11:12.345Z', xs: [k, -k], items: [{ sku: `s${k}`, name: 'Mate', quantity: k }, { sku: 'x', quantity: 1 }] })
    await insertJsonRows(store, 't', [row(1), row(2)]) // compact
    await insertJsonRows(store, 't', [row(3), { ...row(4), d: 1 }, { ...row(5), n: undefined }]) // mixed: one object each
    const rs = await store.query({ query: `SELECT k, s, n, toString(m), toString(at), xs, items, d FROM t ORDER BY k`, format: 'JSONCompactEachRow' })
    const rows = await rs.json<unknown[]>()
    expect(rows).toEqual([1, 2, 3, 4, 5].map((k) => [k, `tab\there "q" \\ ü ${k}`, k % 2 || k === 5 ? null : k / 3, '-12.05', '2025-07-01 10:11:12.345', [k, -k], [{ sku: `s${k}`, name: 'Mate', quantity: k }, { sku: 'x', name: null, quantity: 1 }], k === 4 ? 1 : 7]))
  })
})
