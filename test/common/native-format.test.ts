import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { queryNativeColumns, type Store } from '../../common/store/clickhouse.ts'
import { NativeUnsupported, parseNative } from '../../common/store/native-format.ts'
import { migratedStore } from '../helpers.ts'

/** chdb's Native output read by native-format.ts gives the columns JSON gives, value for value. */
describe('Native columns', () => {
  let store: Store
  beforeAll(async () => {
    store = await migratedStore()
  })
  afterAll(async () => {
    await store?.close()
  })

  async function jsonColumns(sql: string): Promise<unknown[][]> {
    const rs = await store.query({ query: sql, format: 'JSONColumnsWithMetadata', clickhouse_settings: { output_format_json_quote_64bit_integers: 0 } })
    const { meta, data } = (await rs.json()) as unknown as { meta: { name: string }[]; data: Record<string, unknown[]> }
    return meta.map((m) => data[m.name] ?? [])
  }

  it('reads every integer width, floats and arrays over several blocks as JSON has them', async () => {
    // 150,000 rows in blocks of 65,536; 64-bit values around and beyond 2^53, negatives, empty arrays.
    const sql = `SELECT toUInt8(number % 256) AS u8, toUInt16(number * 7 % 65536) AS u16, toUInt32(number * 2654435761 % 4294967296) AS u32,
                        toUInt64(number * 123456789012345) AS u64, toInt8(number % 256 - 128) AS i8, toInt16(number % 65536 - 32768) AS i16,
                        toInt32(number * 7919 % 4294967296 - 2147483648) AS i32, toInt64(number * 98765432109 - 7000000000000000) AS i64,
                        toUInt64(9007199254740993 + number) AS big, toInt64(-9007199254740993 - number) AS small,
                        toFloat64(number / 7) AS f64,
                        arrayMap(x -> toInt64(x * 1000000007 - 5), range(number % 4)) AS arr, arrayMap(x -> toUInt32(x), range(number % 3)) AS arr32
                 FROM numbers(150000) ORDER BY number SETTINGS max_block_size = 65536`
    const native = await queryNativeColumns(store, sql)
    expect(native).not.toBeNull()
    const json = await jsonColumns(sql)
    expect(native!.length).toBe(13)
    for (let c = 0; c < json.length; c++) expect(native![c], `column ${c}`).toEqual(json[c])
  })

  it('answers no columns for no rows, and null for a type it does not read', async () => {
    const none = await queryNativeColumns(store, 'SELECT toUInt64(number) AS n FROM numbers(10) WHERE number > 100')
    expect(none === null || none.every((c) => c.length === 0)).toBe(true)
    expect(await queryNativeColumns(store, "SELECT 'a' AS s")).toBeNull()
    expect(await queryNativeColumns(store, 'SELECT toFloat32(1 / 3) AS f')).toBeNull()
  })

  it('refuses bytes cut short', () => {
    expect(() => parseNative(Uint8Array.from([1, 5, 1, 0x61, 6, 0x55, 0x49, 0x6e, 0x74, 0x33, 0x32, 1, 2]))).toThrow(NativeUnsupported)
  })
})
