import { describe, expect, it } from 'vitest'
import type { EventLog, LogRecord } from '../../common/eventlog/port.ts'
import { Semaphore, SharedSlot } from '../../common/eventlog/embedded.ts'
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
          // ASCII keys, and UTF-8 ones short and long (a string key is framed from its characters).
          key: n % 17 === 0 ? null : n % 13 === 0 ? `ñandú:${n % 23}${n % 2 ? 'é'.repeat(40) : ''}` : n % 11 === 0 ? `k${'x'.repeat(70)}:${n % 23}` : `7:${n % 23}`,
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

describe('embedded event log: a consumer whose records\' bytes end with its batch', () => {
  it('reads every value exactly into reused buffers, while a consumer without the promise keeps intact records', async () => {
    const log = await newEmbeddedLog(tmpDir())
    const topic = uniqueName('pooled')
    try {
      await log.createTopics([{ name: topic, partitions: 3, compacted: false }])
      const sent: string[] = []
      // Sends of different sizes, values of different lengths: chunks of other lengths land in the same buffers.
      for (const [s, n] of [[0, 500], [1, 37], [2, 1200]] as const) {
        const records = Array.from({ length: n }, (_, i) => ({ key: `7:${i % 41}`, value: Buffer.from(`${s}-${i}:${'v'.repeat((i * 7) % 300)}`) }))
        sent.push(...records.map((r) => r.value.toString()))
        await log.send(topic, records)
      }
      const copied: string[] = []
      const kept: LogRecord[] = []
      const pooled = await log.consume({
        groupId: uniqueName('g'),
        topics: [topic],
        maxBatch: 60,
        recordBytesEndWithBatch: true,
        onBatch: async (b) => {
          // Read a few milliseconds later, as a handler that awaits before it decodes, while the other
          // partitions' reads go on: the batch's buffers are still its own.
          await new Promise((r) => setTimeout(r, 3))
          copied.push(...b.records.map((r) => r.value!.toString()))
        },
      })
      const plain = await log.consume({ groupId: uniqueName('g'), topics: [topic], maxBatch: 60, onBatch: async (b) => void kept.push(...b.records) })
      await waitFor(async () => copied.length >= sent.length && kept.length >= sent.length, { what: 'both groups at the end', timeoutMs: 30_000 })
      await pooled.stop()
      await plain.stop()
      expect(copied.sort()).toEqual([...sent].sort())
      // Read once every batch of both groups is done.
      expect(kept.map((r) => r.value!.toString()).sort()).toEqual([...sent].sort())
    } finally {
      await log.close()
    }
  })
})

/**
 * alignTopics: the same partition of two topics read in step by stream time. `dense` carries four
 * records for each of `sparse`'s, sent in rounds (a sparse record, then its dense ones), so a
 * sparse batch of maxBatch records would reach far past what the dense topic has been read to.
 */
describe('embedded event log: aligned topics are read in step by stream time', () => {
  const ROUNDS = 12
  async function setUp(dir: string) {
    const [dense, sparse] = [uniqueName('dense'), uniqueName('sparse')]
    const log = await newEmbeddedLog(dir)
    await log.createTopics([{ name: dense, partitions: 2, compacted: false }, { name: sparse, partitions: 2, compacted: false }])
    for (let r = 0; r < ROUNDS; r++) {
      // Both partitions each round (keys 1 and 2 hash apart or together: either is fine, each partition is checked alone).
      await log.send(sparse, [1, 2].map((k) => ({ key: `${k}`, value: Buffer.from(`s${r}`) })))
      await new Promise((res) => setTimeout(res, 3))
      await log.send(dense, [1, 2].flatMap((k) => Array.from({ length: 4 }, (_, i) => ({ key: `${k}`, value: Buffer.from(`d${r}.${i}`) }))))
      await new Promise((res) => setTimeout(res, 3))
    }
    return { log, dense, sparse }
  }

  /** Consumes both topics aligned (maxBatch 8) until every record is seen; returns the batches in the order they were handed. */
  async function consume(log: EventLog, dense: string, sparse: string, alignTopics: string[] | undefined) {
    const handed: { topic: string; partition: number; records: LogRecord[] }[] = []
    const total = (await log.endOffsets(dense)).concat(await log.endOffsets(sparse)).reduce((n, o) => n + Number(o.offset), 0)
    let seen = 0
    const handle = await log.consume({
      groupId: uniqueName('aligned'),
      topics: [dense, sparse],
      fromBeginning: true,
      maxBatch: 8,
      alignTopics,
      onBatch: async (b) => {
        handed.push({ topic: b.topic, partition: b.partition, records: b.records })
        seen += b.records.length
        // Handled for a while, as a sink writes: the other loops move meanwhile.
        await new Promise((res) => setTimeout(res, 5))
      },
    })
    await waitFor(async () => seen >= total, { what: `${total} records`, timeoutMs: 30_000 })
    await handle.stop()
    return { handed, total }
  }

  /**
   * Checks every record was handed once, in offset order within its partition; returns how many
   * sparse batches reached past what the dense partition's next batch would (its records up to
   * the one maxBatch past those handed so far): none when the two are read in step.
   */
  function beyondStep(handed: { topic: string; partition: number; records: LogRecord[] }[], total: number, dense: string): number {
    expect(handed.reduce((n, x) => n + x.records.length, 0)).toBe(total)
    const readTo = new Map<string, number>()
    for (const x of handed) {
      const key = `${x.topic}/${x.partition}`
      expect(x.records.map((r) => Number(r.offset))).toEqual(x.records.map((_, i) => (readTo.get(key) ?? 0) + i))
      readTo.set(key, (readTo.get(key) ?? 0) + x.records.length)
    }
    // Each dense partition's timestamps by offset.
    const denseTimes = new Map<number, number[]>()
    for (const x of handed) if (x.topic === dense) for (const r of x.records) (denseTimes.get(x.partition) ?? denseTimes.set(x.partition, []).get(x.partition)!)[Number(r.offset)] = r.timestamp
    const denseRead = new Map<number, number>()
    let beyond = 0
    for (const x of handed) {
      if (x.topic === dense) {
        denseRead.set(x.partition, (denseRead.get(x.partition) ?? 0) + x.records.length)
        continue
      }
      const times = denseTimes.get(x.partition) ?? []
      const read = denseRead.get(x.partition) ?? 0
      if (read >= times.length) continue
      const reach = Math.max(...times.slice(0, Math.min(times.length, read + 8)))
      if (x.records.some((r) => r.timestamp > reach)) beyond++
    }
    return beyond
  }

  it("never hands a sparse batch past what the dense partition's next batch reaches; each record once and in order", async () => {
    const { log, dense, sparse } = await setUp(tmpDir())
    try {
      const aligned = await consume(log, dense, sparse, [dense, sparse])
      expect(beyondStep(aligned.handed, aligned.total, dense)).toBe(0)
      // Unaligned, the sparse partitions' first batches reach eight rounds ahead at once.
      const free = await consume(log, dense, sparse, undefined)
      expect(beyondStep(free.handed, free.total, dense)).toBeGreaterThan(0)
    } finally {
      await log.close()
    }
  })

  it('reads by the stream times a reopened log recovers, and holds no one back once a topic is read to its end', async () => {
    const dir = tmpDir()
    const first = await setUp(dir)
    const { dense, sparse } = first
    await first.log.close()
    const log = await newEmbeddedLog(dir)
    try {
      const denseCount = new Map((await log.endOffsets(dense)).map((o) => [o.partition, Number(o.offset)]))
      const { handed, total } = await consume(log, dense, sparse, [dense, sparse])
      expect(beyondStep(handed, total, dense)).toBe(0)
      // A group that has read the dense topic to its end (committed) reads the sparse one at full batches.
      const group = uniqueName('caught-up')
      let seen = 0
      const denseOnly = await log.consume({ groupId: group, topics: [dense], fromBeginning: true, onBatch: async (bt) => void (seen += bt.records.length) })
      await waitFor(async () => seen >= [...denseCount.values()].reduce((n, c) => n + c, 0), { what: 'the dense topic read', timeoutMs: 30_000 })
      await denseOnly.stop()
      const sizes = new Map<number, number[]>()
      const sparseEnd = (await log.endOffsets(sparse)).reduce((n, o) => n + Number(o.offset), 0)
      let got = 0
      const both = await log.consume({
        groupId: group,
        topics: [dense, sparse],
        fromBeginning: true,
        maxBatch: 8,
        alignTopics: [dense, sparse],
        onBatch: async (bt) => {
          if (bt.topic !== sparse) return
          ;(sizes.get(bt.partition) ?? sizes.set(bt.partition, []).get(bt.partition)!).push(bt.records.length)
          got += bt.records.length
        },
      })
      await waitFor(async () => got >= sparseEnd, { what: 'the sparse topic read', timeoutMs: 30_000 })
      await both.stop()
      // Full batches, the last of each partition holding the rest.
      for (const [p, got] of sizes) {
        const n = (await log.endOffsets(sparse)).find((o) => o.partition === p)!.offset
        expect(got).toEqual([...Array(Math.floor(Number(n) / 8)).fill(8), ...(Number(n) % 8 ? [Number(n) % 8] : [])])
      }
    } finally {
      await log.close()
    }
  })

  it("gives a pair's slot back between batches: with more partitions than slots, and another topic, every one is read before any pair's backlog ends", async () => {
    const log = await newEmbeddedLog(tmpDir())
    const [dense, sparse, other] = [uniqueName('dense'), uniqueName('sparse'), uniqueName('other')]
    try {
      await log.createTopics([6, 6, 2].map((partitions, i) => ({ name: [dense, sparse, other][i]!, partitions, compacted: false })))
      const keys = Array.from({ length: 48 }, (_, k) => `${k}`)
      for (let r = 0; r < 6; r++) {
        await log.send(sparse, keys.map((key) => ({ key, value: Buffer.from(`s${r}`) })))
        await log.send(dense, keys.flatMap((key) => [0, 1, 2, 3].map((i) => ({ key, value: Buffer.from(`d${r}.${i}`) }))))
      }
      await log.send(other, keys.map((key) => ({ key, value: Buffer.from('o') })))
      const ends = new Map<string, number>()
      for (const t of [dense, sparse, other]) for (const o of await log.endOffsets(t)) if (Number(o.offset) > 0) ends.set(`${t}/${o.partition}`, Number(o.offset))
      expect([...ends.keys()].filter((k) => k.startsWith(dense)).length).toBe(6)
      const handed: string[] = []
      let seen = 0
      const total = [...ends.values()].reduce((n, c) => n + c, 0)
      const handle = await log.consume({
        groupId: uniqueName('fair'),
        topics: [dense, sparse, other],
        fromBeginning: true,
        maxBatch: 8,
        alignTopics: [dense, sparse],
        onBatch: async (b) => {
          handed.push(`${b.topic}/${b.partition}`)
          seen += b.records.length
          // A follower's batch handled longer than its leader's: the leader comes back while it is held.
          await new Promise((res) => setTimeout(res, b.topic === sparse ? 10 : 2))
        },
      })
      await waitFor(async () => seen >= total, { what: `${total} records`, timeoutMs: 60_000 })
      await handle.stop()
      // The first batch of every topic partition comes before the last batch of any dense one.
      const firstOf = (k: string) => handed.indexOf(k)
      const lastDense = Math.min(...[...ends.keys()].filter((k) => k.startsWith(dense)).map((k) => handed.lastIndexOf(k)))
      for (const k of ends.keys()) expect(firstOf(k), k).toBeLessThan(lastDense)
    } finally {
      await log.close()
    }
  })

  it('a shared slot is joined once per hold: a position that comes back queues behind the loops waiting for a slot', async () => {
    const slots = new Semaphore(1)
    const pair = new SharedSlot(slots)
    const [a, b] = [{}, {}]
    const order: string[] = []
    const releaseA = await pair.acquire(a)
    const releaseB = await pair.acquire(b) // joins a's hold
    const other = slots.acquire().then((release) => (order.push('other'), release))
    releaseA()
    const again = pair.acquire(a).then((release) => (order.push('a again'), release))
    await new Promise((res) => setTimeout(res, 10))
    expect(order).toEqual([]) // b still holds the slot; a waits for the hold to end
    releaseB()
    const releaseOther = await other
    await new Promise((res) => setTimeout(res, 10))
    expect(order).toEqual(['other']) // the slot went to the loop queued first
    releaseOther()
    ;(await again)()
    expect(order).toEqual(['other', 'a again'])

    // Both wait while the slot is taken elsewhere: the second does not join a hold not yet taken.
    const busy = new Semaphore(1)
    const elsewhere = await busy.acquire()
    const waiting = new SharedSlot(busy)
    let got = 0
    const both = [waiting.acquire(a), waiting.acquire(b)].map((p) => p.then((release) => (got++, release)))
    await new Promise((res) => setTimeout(res, 10))
    expect(got).toBe(0)
    elsewhere()
    for (const release of await Promise.all(both)) release()
    expect(got).toBe(2)
  })
})
