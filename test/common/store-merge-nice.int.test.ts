import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../common/config.ts'
import { storeOptions } from '../../common/runtime/context.ts'
import { MERGE_THREADS_NICE, openStore, type Store } from '../../common/store/clickhouse.ts'
import { tmpDir } from '../helpers.ts'

/** The nice value chdb's engine runs its merge threads at (a server setting: fixed when the engine starts). */
async function mergeNice(store: Store): Promise<number> {
  const rs = await store.query({ query: `SELECT value FROM system.server_settings WHERE name = 'os_threads_nice_value_merge_mutate'`, format: 'JSONEachRow' })
  const rows = await rs.json<{ value: string }>()
  return Number(rows[0]!.value)
}

describe('chdb merge threads niced (CDP_CHDB_MERGE_NICE)', () => {
  it('start at MERGE_THREADS_NICE by default, at the configured value otherwise, and again after a reopen', async () => {
    expect(MERGE_THREADS_NICE).toBe(10)
    const dir = tmpDir()
    // One engine per process at a time: each store is closed before the next opens.
    const first = await openStore({ database: 'cdp', chdbPath: dir })
    try {
      expect(await mergeNice(first)).toBe(10)
      // The store works as before: a MergeTree table takes rows and merges them.
      await first.command({ query: 'CREATE TABLE t (k UInt32) ENGINE = MergeTree ORDER BY k' })
      for (let i = 0; i < 3; i++) await first.command({ query: `INSERT INTO t SELECT number FROM numbers(${i * 10}, 10)` })
      await first.command({ query: 'OPTIMIZE TABLE t FINAL' })
      const rs = await first.query({ query: `SELECT count() AS n, uniqExact(_part) AS parts FROM t`, format: 'JSONEachRow' })
      expect(await rs.json()).toEqual([{ n: 30, parts: 1 }])
    } finally {
      await first.close()
    }
    const configured = await openStore({ ...storeOptions(loadConfig({ CDP_DATA_DIR: dir, CDP_CHDB_MERGE_NICE: '3' })), chdbPath: dir })
    try {
      expect(await mergeNice(configured)).toBe(3)
    } finally {
      await configured.close()
    }
    const off = await openStore({ database: 'cdp', chdbPath: dir, mergeNice: 0 })
    try {
      expect(await mergeNice(off)).toBe(0)
    } finally {
      await off.close()
    }
  })

  it('refuses a nice value outside 0–19 in the configuration', () => {
    expect(loadConfig({}).chdbMergeNice).toBeUndefined()
    expect(loadConfig({ CDP_CHDB_MERGE_NICE: '19' }).chdbMergeNice).toBe(19)
    expect(() => loadConfig({ CDP_CHDB_MERGE_NICE: '20' })).toThrow(/CDP_CHDB_MERGE_NICE|chdbMergeNice/)
    expect(() => loadConfig({ CDP_CHDB_MERGE_NICE: '-1' })).toThrow(/CDP_CHDB_MERGE_NICE|chdbMergeNice/)
    expect(() => loadConfig({ CDP_CHDB_MERGE_NICE: 'low' })).toThrow(/CDP_CHDB_MERGE_NICE|chdbMergeNice/)
  })
})
