import { describe, expect, it } from 'vitest'
import type { EventLog, LogRecord } from '../../common/eventlog/port.ts'
import { newEmbeddedLog, tmpDir, uniqueName, waitFor } from '../helpers.ts'

/** Every record of `topic`, read by a new group from the beginning. */
async function readAll(log: EventLog, topic: string, n: number): Promise<LogRecord[]> {
  const got: LogRecord[] = []
  const handle = await log.consume({ groupId: uniqueName('g'), topics: [topic], fromBeginning: true, onBatch: async (b) => void got.push(...b.records) })
  await waitFor(async () => got.length >= n, { what: `${n} records on ${topic}`, timeoutMs: 30_000 })
  await handle.stop()
  return got
}

describe('embedded event log: what a send wrote is read back after a reopen', () => {
  it('keeps every frame of sends spread over partitions (keys, null keys, null values, headers, empty values) through the recovery that checks each frame', async () => {
    const dir = tmpDir()
    const topic = uniqueName('reopen')
    const sent: { key: string | null; value: Buffer | null; headers?: Record<string, string> }[] = []
    let log = await newEmbeddedLog(dir)
    await log.createTopics([{ name: topic, partitions: 3, compacted: false }])
    for (let s = 0; s < 3; s++) {
      const records = Array.from({ length: 200 }, (_, i) => {
        const n = s * 200 + i
        return {
          key: n % 17 === 0 ? null : `7:${n % 23}`,
          value: n % 29 === 0 ? null : n % 31 === 0 ? Buffer.alloc(0) : Buffer.from(`v${n}:${'x'.repeat(n % 50)}`),
          ...(n % 5 === 0 ? { headers: { seq: String(n), 'x-ü': 'ñ'.repeat(n % 3) } } : {}),
        }
      })
      sent.push(...records)
      await log.send(topic, records)
    }
    const before = await log.endOffsets(topic)
    await log.close()
    log = await newEmbeddedLog(dir)
    try {
      expect(await log.endOffsets(topic)).toEqual(before)
      const got = await readAll(log, topic, sent.length)
      expect(got).toHaveLength(sent.length)
      const text = (r: { key: Buffer | string | null; value: Buffer | null; headers?: Record<string, string> }) =>
        JSON.stringify([r.key === null ? null : String(r.key), r.value === null ? null : r.value.toString('hex'), r.headers ?? {}])
      expect(got.map(text).sort()).toEqual(sent.map(text).sort())
      // In order within each partition: the records of one key keep the order they were sent in.
      const seqOf = (r: LogRecord) => Number(r.value?.toString().match(/^v(\d+):/)?.[1] ?? -1)
      for (const p of [0, 1, 2]) {
        const seqs = got.filter((r) => r.partition === p).sort((a, b) => Number(a.offset) - Number(b.offset)).map(seqOf).filter((n) => n >= 0)
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b))
      }
    } finally {
      await log.close()
    }
  })
})
