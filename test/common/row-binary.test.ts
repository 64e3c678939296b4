import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { encodingInsertFor, InsertRows, insertValueRows, migrate, openStore, type Store } from '../../common/store/clickhouse.ts'
import { ByteWriter, encodeRows, encoderFor, isoMs, RowBinaryUnsupported, RowEncoder, splitArgs } from '../../common/store/row-binary.ts'
import { scaledUnits } from '../../common/decimal.ts'

const bytes = (type: string, v: unknown): number[] => [...encodeRows([encoderFor(type)], [[v]])]
const le64 = (n: bigint): number[] => {
  const b = Buffer.alloc(8)
  b.writeBigInt64LE(n)
  return [...b]
}

describe('RowBinary encoders', () => {
  it('write each type as ClickHouse documents it', () => {
    expect(bytes('String', 'ab')).toEqual([2, 0x61, 0x62])
    expect(bytes('String', 'ü')).toEqual([2, 0xc3, 0xbc])
    const long = 'x'.repeat(300)
    expect(bytes('String', long).slice(0, 3)).toEqual([0xac, 0x02, 0x78]) // LEB128 300
    expect(bytes('UInt8', 200)).toEqual([200])
    expect(bytes('Bool', true)).toEqual([1])
    expect(bytes('UInt16', 0x1234)).toEqual([0x34, 0x12])
    expect(bytes('Int32', -2)).toEqual([0xfe, 0xff, 0xff, 0xff])
    expect(bytes('UInt32', 4294967295)).toEqual([0xff, 0xff, 0xff, 0xff])
    expect(bytes('Int64', -1)).toEqual(le64(-1n))
    expect(bytes('Int64', -(2 ** 40) - 3)).toEqual(le64(-(2n ** 40n) - 3n))
    expect(bytes('UInt64', '18446744073709551615')).toEqual(Array(8).fill(0xff))
    expect(bytes('Float64', 0.1)).toEqual([...Buffer.from(new Float64Array([0.1]).buffer)])
    expect(bytes('Decimal(15, 2)', '-12.05')).toEqual(le64(-1205n))
    expect(bytes('Decimal(9, 3)', '1.5')).toEqual([0xdc, 0x05, 0, 0]) // 1500, 4 bytes
    expect(bytes("DateTime64(3, 'UTC')", '1970-01-01T00:00:01.5Z')).toEqual(le64(1500n))
    expect(bytes("DateTime64(6, 'UTC')", '1970-01-01T00:00:01.5Z')).toEqual(le64(1_500_000n))
    expect(bytes("DateTime64(6, 'UTC')", 1500)).toEqual(le64(1500n)) // a number is ticks, as in JSON
    expect(bytes('Date', '1970-01-11')).toEqual([10, 0])
    expect(bytes('Date', '2024-02-29')).toEqual([0x46, 0x4d]) // 19,782 days
    for (const bad of ['2023-02-29', '2024-13-01', '1970-1-01', '1970-01-01T00:00:00Z', '19700101', 20240229]) {
      expect(() => bytes('Date', bad), String(bad)).toThrow(RowBinaryUnsupported)
    }
    expect(bytes('Nullable(String)', null)).toEqual([1])
    expect(bytes('Nullable(String)', 'a')).toEqual([0, 1, 0x61])
    expect(bytes('LowCardinality(String)', 'a')).toEqual([1, 0x61])
    expect(bytes('Array(UInt8)', [1, 2])).toEqual([2, 1, 2])
    expect(bytes('Tuple(sku String, quantity UInt8)', { quantity: 3, sku: 'a' })).toEqual([1, 0x61, 3])
    expect(bytes('Tuple(String, UInt8)', ['a', 3])).toEqual([1, 0x61, 3])
  })

  it('refuse what they cannot write exactly as ClickHouse would read its JSON', () => {
    const refused: [string, unknown][] = [
      ['UUID', 'x'],
      ['Float32', 0.1], // JSON's text is rounded to Float32 once, a double twice
      ['Map(String, UInt8)', {}],
      ["Enum8('a' = 1)", 'a'],
      ['DateTime64(3)', '2025-01-01T00:00:00Z'], // no zone: JSON would read it in the server's
      ['DateTime64(9, \'UTC\')', 1],
      ["DateTime64(3, 'UTC')", -1],
      ["DateTime64(3, 'UTC')", 1.5],
      ['Decimal(38, 2)', '1'],
      ['Decimal(15, 2)', '1.005'], // more decimals than the scale: JSON rounds
      ['Decimal(15, 2)', 1.5], // a fraction's binary value
      ["DateTime64(3, 'UTC')", '2025-01-01T00:00:00+03:00'],
      ["DateTime64(3, 'UTC')", '2023-02-29T00:00:00Z'],
      ["DateTime64(3, 'UTC')", '2025-01-01T00:00:00.1234Z'],
      ["DateTime64(3, 'UTC')", '1800-01-01T00:00:00Z'],
      ['String', 5],
      ['UInt8', 256],
      ['UInt32', -1],
      ['Int32', 1.5],
      ['Float64', Number.NaN],
      ['Float64', '1.5'],
      ['Array(UInt8)', 'x'],
      ['Tuple(String, UInt8)', ['a']],
    ]
    for (const [type, v] of refused) expect(() => bytes(type, v), `${type} ${String(v)}`).toThrow(RowBinaryUnsupported)
  })

  it('read ISO times as Date.parse does, and nothing it would not', () => {
    let seed = 7
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    for (let i = 0; i < 2000; i++) {
      const d = new Date(Date.UTC(1900, 0, 1) + Math.floor(rnd() * 400 * 365.25 * 86_400_000))
      const iso = d.toISOString()
      expect(isoMs(iso)).toBe(d.getTime())
      expect(isoMs(iso.replace('T', ' ').replace('Z', ''))).toBe(d.getTime())
      expect(isoMs(iso.slice(0, 19) + 'Z')).toBe(Math.floor(d.getTime() / 1000) * 1000)
      expect(isoMs(iso.slice(0, 21) + 'Z')).toBe(Math.floor(d.getTime() / 100) * 100)
    }
    for (const bad of ['2025-13-01T00:00:00Z', '2025-04-31T00:00:00Z', '2024-02-30T00:00:00Z', '2025-01-01T24:00:00Z', '2025-01-01', '2025-01-01T00:00:00.Z', '2025-01-01T00:00:00ZZ', '2025/01/01T00:00:00Z']) expect(isoMs(bad), bad).toBeNaN()
    expect(isoMs('2024-02-29T00:00:00Z')).toBe(Date.parse('2024-02-29T00:00:00Z'))
  })

  it('scale decimals exactly and split type arguments at the top level', () => {
    expect(scaledUnits('0.1', 2)).toBe(10)
    expect(scaledUnits('-0.05', 2)).toBe(-5)
    expect(scaledUnits('123', 2)).toBe(12300)
    expect(scaledUnits(7, 2)).toBe(700)
    expect(scaledUnits('1e3', 2)).toBeNull()
    for (const bad of ['', '-', '.5', '1.', '1.2.3', '+1', ' 1', '1.234', '0x10']) expect(scaledUnits(bad, 2), bad).toBeNull()
    expect(scaledUnits('-0', 2)).toBe(-0)
    expect(scaledUnits('900719925474099.1', 1)).toBe(9007199254740991)
    expect(scaledUnits('900719925474099.2', 1)).toBeNull()
    expect(scaledUnits('99999999999999999.99', 2)).toBeNull() // past 2^53
    expect(splitArgs("a String, b Tuple(x UInt8, y Decimal(15, 2)), c DateTime64(3, 'UTC')")).toEqual(['a String', 'b Tuple(x UInt8, y Decimal(15, 2))', "c DateTime64(3, 'UTC')"])
  })

  it('encode rows one at a time as encodeRows encodes them together, each row keeping its bytes', () => {
    const encoders = ['UInt32', 'String', 'Array(Tuple(sku String, quantity UInt32))', 'Decimal(15, 2)'].map(encoderFor)
    const rows = Array.from({ length: 40 }, (_, k) => [k, 'x'.repeat(k * 7), Array.from({ length: k % 4 }, (_, i) => ({ sku: `s${i}`, quantity: i })), `${k}.05`])
    // Slabs of 256 bytes: rows begin new slabs, and the longer rows outgrow one as they are written.
    const enc = new RowEncoder(encoders, 256)
    const refused = [3, 17, 18]
    const views: Uint8Array[] = []
    for (let k = 0; k < rows.length; k++) {
      if (refused.includes(k)) {
        // A quantity past UInt32, after the row's first values were written: none of them stay.
        expect(() => enc.encode([k, 'y'.repeat(300), [{ sku: 'a', quantity: 2 ** 32 }], '1'])).toThrow(RowBinaryUnsupported)
        continue
      }
      views.push(enc.encode(rows[k]!))
    }
    expect(() => enc.encode([1, 'a'])).toThrow(RowBinaryUnsupported)
    const kept = rows.filter((_, k) => !refused.includes(k))
    // Read after every row was written: no later row overwrote an earlier one's bytes.
    expect(views.map((v) => [...encodeRows(encoders, [kept[views.indexOf(v)]!])])).toEqual(views.map((v) => [...v]))
    expect([...Buffer.concat(views)]).toEqual([...encodeRows(encoders, kept)])
  })

  it('grow the buffer past its first size', () => {
    const w = new ByteWriter(4)
    for (let i = 0; i < 100; i++) w.string('abcdefgh')
    expect(w.bytes().length).toBe(900)
    expect(w.bytes().subarray(892).toString()).toBe('abcdefgh')
  })
})

describe('insertValueRows on chdb: RowBinary stores what JSON stores', () => {
  let store: Store
  let dir: string
  const columns = 'k UInt32, s String, lc LowCardinality(String), n Nullable(Float64), b Bool, i8 Int8, i64 Int64, u64 UInt64, m Decimal(15, 2), m4 Decimal(9, 3), at DateTime64(3, \'UTC\'), at6 DateTime64(6, \'UTC\'), day Date, xs Array(Int64), items Array(Tuple(sku String, name Nullable(String), quantity UInt32, price Decimal(15, 2))), pair Tuple(String, Nullable(UInt16))'
  const names = splitArgs(columns).map((c) => c.split(' ')[0]!)

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'row-binary-'))
    store = await openStore({ database: 'cdp', chdbPath: dir })
    for (const t of ['via_values', 'via_json']) await store.command({ query: `CREATE TABLE ${t} (${columns}) ENGINE = MergeTree ORDER BY k` })
  })
  afterAll(async () => {
    await store?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const row = (k: number, over: Record<string, unknown> = {}): unknown[] => {
    const base: Record<string, unknown> = {
      k,
      s: k % 3 ? `tab\there "q" \\ ü ${k} ${'long '.repeat(k % 2 ? 40 : 0)}` : '',
      lc: ['EUR', 'ARS', 'USD'][k % 3],
      n: k % 2 ? null : k / 3,
      b: k % 2 === 0,
      i8: -k,
      i64: -(2 ** 50) + k,
      u64: String(2n ** 63n + BigInt(k)),
      m: k % 4 ? '-12.05' : String(k * 1000),
      m4: '1.5',
      at: '2025-07-01T10:11:12.345Z',
      at6: k % 2 ? '2025-07-01 10:11:12.3' : 1_751_364_672_345,
      day: '2025-02-28',
      xs: [k, -k],
      items: [{ sku: `s${k}`, name: k % 2 ? null : 'Mate', quantity: k, price: '10.50' }, { sku: 'x', name: 'ñandú', quantity: 1, price: '0.05' }],
      pair: ['a', k % 2 ? null : k],
    }
    return names.map((c) => (c in over ? over[c] : base[c]))
  }

  async function differ(rows: unknown[][]): Promise<void> {
    await insertValueRows(store, 'via_values', names, rows)
    await store.insert({ table: 'via_json', values: rows, columns: names as [string, ...string[]], format: 'JSONCompactEachRow', clickhouse_settings: { date_time_input_format: 'best_effort' } })
    const read = async (t: string) => (await store.query({ query: `SELECT ${names.map((c) => `toString(${c})`).join(', ')} FROM ${t} ORDER BY k`, format: 'JSONCompactEachRow' })).json<string[]>()
    const got = await read('via_values')
    expect(got.length).toBeGreaterThan(0)
    expect(got).toEqual(await read('via_json'))
  }

  it('for values it encodes itself', async () => {
    const rows = Array.from({ length: 50 }, (_, i) => row(i + 1))
    const encoders = (await store.query({ query: `SELECT type FROM system.columns WHERE database = 'cdp' AND table = 'via_values' ORDER BY position`, format: 'JSONCompactEachRow' }).then((r) => r.json<[string]>())).map(([t]) => encoderFor(t))
    expect(() => encodeRows(encoders, rows)).not.toThrow() // these go as RowBinary
    await differ(rows)
  })

  it('for values it leaves to JSON (a rounded decimal, a zoned time, a number for a string)', async () => {
    await differ([row(101, { m: '3.14159' }), row(102)])
    await differ([row(103, { at: '2025-07-01T10:11:12+03:00' }), row(104)])
    await differ([row(105, { s: 42 }), row(106)])
    const got = await store.query({ query: `SELECT toString(m), toString(at), s FROM via_values WHERE k IN (101, 103, 105) ORDER BY k`, format: 'JSONCompactEachRow' }).then((r) => r.json<string[]>())
    expect(got).toEqual([['3.14', '2025-07-01 10:11:12.345', expect.any(String)], ['-12.05', '2025-07-01 07:11:12.000', expect.any(String)], ['-12.05', '2025-07-01 10:11:12.345', '42']])
  })
})

describe('encodingInsertFor on chdb', () => {
  it('inserts rows encoded one by one as insertValueRows inserts their values', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'row-binary-encoding-'))
    const store = await openStore({ database: 'cdp', chdbPath: dir })
    try {
      const columns = "k UInt32, s String, m Nullable(Decimal(15, 2)), at DateTime64(3, 'UTC'), items Array(Tuple(sku String, quantity UInt32))"
      for (const t of ['encoded', 'values']) await store.command({ query: `CREATE TABLE ${t} (${columns}) ENGINE = MergeTree ORDER BY k` })
      const names = ['k', 's', 'm', 'at', 'items']
      const rows = Array.from({ length: 30 }, (_, k) => [k, `ü ${k}`, k % 3 ? `${k}.5` : null, 1_751_364_672_345 + k, [{ sku: `s${k}`, quantity: k }]])
      const encoding = await encodingInsertFor(store, 'encoded', names)
      expect(encoding).not.toBeNull()
      // In parts, one of them empty: written part after part (writev), in order.
      await encoding!.insert([new Uint8Array(0), ...rows.slice(0, 10).map((r) => encoding!.rows.encode(r))])
      await encoding!.insert(rows.slice(10).map((r) => encoding!.rows.encode(r)))
      await insertValueRows(store, 'values', names, rows)
      const read = async (t: string) => (await store.query({ query: `SELECT ${names.map((c) => `toString(${c})`).join(', ')} FROM ${t} ORDER BY k`, format: 'JSONCompactEachRow' })).json<string[]>()
      const got = await read('encoded')
      expect(got).toHaveLength(30)
      expect(got[1]).toEqual(['1', 'ü 1', '1.5', '2025-07-01 10:11:12.346', "[('s1',1)]"])
      expect(got).toEqual(await read('values'))
      expect(await encodingInsertFor(store, 'encoded', ['k', 'nope'])).toBeNull()

      // InsertRows: encoded as added, a row RowBinary refuses (a rounded decimal) kept as values;
      // without an encoding (a server) every row goes as values. Both store what insertValueRows does.
      for (const t of ['gathered', 'plain']) await store.command({ query: `CREATE TABLE ${t} (${columns}) ENGINE = MergeTree ORDER BY k` })
      const odd = [100, 'odd', '2.345', 1_751_364_672_345, []]
      const gathered = new InsertRows(store, 'gathered', names, await encodingInsertFor(store, 'gathered', names))
      const plain = new InsertRows(store, 'plain', names, null)
      for (const r of [...rows, odd]) {
        gathered.add(r)
        plain.add(r)
      }
      expect([gathered.length, plain.length]).toEqual([31, 31])
      await Promise.all([gathered.insert(), plain.insert()])
      await insertValueRows(store, 'values', names, [odd])
      expect(await read('gathered')).toEqual(await read('values'))
      expect(await read('plain')).toEqual(await read('values'))
      expect((await read('gathered')).at(-1)).toEqual(['100', 'odd', '2.34', '2025-07-01 10:11:12.345', '[]']) // as ClickHouse reads the JSON: cut, not rounded
    } finally {
      await store.close()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('insertValueRows after a migration', () => {
  it('encodes with the columns the migration left, not the ones read before it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'row-binary-migrate-'))
    const migrations = path.join(dir, 'migrations')
    fs.mkdirSync(migrations)
    const store = await openStore({ database: 'cdp', chdbPath: path.join(dir, 'store') })
    try {
      fs.writeFileSync(path.join(migrations, '001_t.sql'), 'CREATE TABLE t (k UInt32, v UInt32) ENGINE = MergeTree ORDER BY k;')
      await migrate(store, undefined, migrations)
      await insertValueRows(store, 't', ['k', 'v'], [[1, 7]]) // reads and keeps t's column types
      // Four bytes a value before, eight after: an encoder kept from before would misplace every byte.
      fs.writeFileSync(path.join(migrations, '002_wider.sql'), 'ALTER TABLE t MODIFY COLUMN v UInt64;')
      await migrate(store, undefined, migrations)
      await insertValueRows(store, 't', ['k', 'v'], [[2, 5], [3, 6]])
      await insertValueRows(store, 't', ['k', 'v'], [[4, 2 ** 40]])
      const rows = await store.query({ query: 'SELECT k, toString(v) FROM t ORDER BY k', format: 'JSONCompactEachRow' }).then((r) => r.json<[number, string]>())
      expect(rows).toEqual([[1, '7'], [2, '5'], [3, '6'], [4, String(2 ** 40)]])
    } finally {
      await store.close()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
