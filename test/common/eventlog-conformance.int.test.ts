import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Batch, EventLog, LogRecord } from '../../common/eventlog/port.ts'
import { partitionFor } from '../../common/eventlog/partitioner.ts'
import { newEmbeddedLog, newKafkaLog, uniqueName, waitFor } from '../helpers.ts'

/**
 * One conformance suite, both adapters: the embedded log must keep Kafka's semantics.
 * Kafka runs for real (test/infra/global-setup.ts).
 */
const ADAPTERS: [string, () => Promise<EventLog>][] = [
  ['kafka', async () => newKafkaLog()],
  ['embedded', async () => newEmbeddedLog()],
]

/** Collects what a group receives until `n` distinct records arrived (every delivery is kept). */
async function collect(log: EventLog, groupId: string, topic: string, n: number, opts: { maxBatch?: number; inFlight?: number; onBatch?: (b: Batch) => Promise<void> } = {}) {
  const got: LogRecord[] = []
  const batches: Batch[] = []
  const handle = await log.consume({
    groupId,
    topics: [topic],
    fromBeginning: true,
    maxBatch: opts.maxBatch,
    inFlight: opts.inFlight,
    onBatch: async (b) => {
      await opts.onBatch?.(b)
      batches.push(b)
      got.push(...b.records)
    },
  })
  // Distinct records: a batch redelivered after a failure comes twice.
  await waitFor(async () => new Set(got.map((r) => `${r.partition}@${r.offset}`)).size >= n, { what: `${n} records on ${topic}`, timeoutMs: 45_000 })
  await handle.stop()
  return { got, batches }
}

describe.each(ADAPTERS)('event log conformance: %s', (_name, open) => {
  let log: EventLog
  beforeAll(async () => {
    log = await open()
  })
  afterAll(async () => {
    await log.close()
  })

  async function topicWith(n: number, partitions = 3): Promise<string> {
    const topic = uniqueName('conf')
    await log.createTopics([{ name: topic, partitions, compacted: false }])
    const records = Array.from({ length: n }, (_, i) => ({
      key: `7:${i % 10}`,
      value: Buffer.from(JSON.stringify({ i })),
      headers: { seq: String(i) },
    }))
    await log.send(topic, records)
    return topic
  }

  it('delivers every record once, in order per key, on the murmur2 partition of its key', async () => {
    const topic = await topicWith(200)
    const { got } = await collect(log, uniqueName('g'), topic, 200)
    expect(got).toHaveLength(200)
    const byKey = new Map<string, number[]>()
    for (const r of got) {
      const key = r.key!.toString()
      expect(r.partition).toBe(partitionFor(key, 3, () => 0))
      const i = JSON.parse(r.value!.toString()).i as number
      expect(r.headers.seq).toBe(String(i))
      byKey.set(key, [...(byKey.get(key) ?? []), i])
    }
    for (const seq of byKey.values()) expect(seq).toEqual([...seq].sort((a, b) => a - b))
    expect(new Set(got.map((r) => r.value!.toString())).size).toBe(200)
  })

  it('keeps a send larger than one produce request whole and in order per key (the Kafka adapter splits it)', async () => {
    const n = 6_000 // more than two of the Kafka adapter's requests
    const topic = await topicWith(n)
    const { got } = await collect(log, uniqueName('g'), topic, n, { maxBatch: 5_000 })
    expect(got).toHaveLength(n)
    const last = new Map<string, number>()
    for (const r of got) {
      const key = r.key!.toString()
      const i = JSON.parse(r.value!.toString()).i as number
      expect(i, `key ${key}`).toBeGreaterThan(last.get(key) ?? -1)
      last.set(key, i)
    }
    expect(new Set(got.map((r) => r.value!.toString())).size).toBe(n)
  })

  it('assigns offsets 0..n-1 per partition and reports end offsets', async () => {
    const topic = await topicWith(30)
    const ends = await log.endOffsets(topic)
    expect(ends.map((e) => e.partition)).toEqual([0, 1, 2])
    expect(ends.reduce((s, e) => s + Number(e.offset), 0)).toBe(30)
    const { got } = await collect(log, uniqueName('g'), topic, 30)
    for (const e of ends) {
      const offs = got.filter((r) => r.partition === e.partition).map((r) => Number(r.offset))
      expect(offs).toEqual(Array.from({ length: Number(e.offset) }, (_, i) => i))
    }
  })

  it('redelivers a batch whose handler threw, and commits only after success', async () => {
    const topic = await topicWith(20, 1)
    const group = uniqueName('g')
    let failures = 0
    const { got } = await collect(log, group, topic, 20, {
      onBatch: async () => {
        if (failures++ === 0) throw new Error('sink down')
      },
    })
    expect(failures).toBeGreaterThanOrEqual(2)
    // Nothing lost; the failed delivery was not counted as received.
    expect(new Set(got.map((r) => r.offset)).size).toBe(20)
    expect((await log.committedOffsets(group, topic))[0]!.offset).toBe('20')
  })

  it('resumes a group after its committed offset, and replays from the beginning after a reset', async () => {
    const topic = await topicWith(10, 1)
    const group = uniqueName('g')
    await collect(log, group, topic, 10)
    await log.send(topic, [{ key: 'k', value: Buffer.from('"late"') }])
    const second = await collect(log, group, topic, 1)
    expect(second.got.map((r) => r.value!.toString())).toEqual(['"late"'])
    await log.resetGroup(group, [topic])
    const replay = await collect(log, group, topic, 11)
    expect(replay.got).toHaveLength(11)
    expect(replay.got[0]!.offset).toBe('0')
  })

  it('a new group reads from the beginning; committed offsets are -1 before any commit', async () => {
    const topic = await topicWith(5, 1)
    const group = uniqueName('g')
    const before = await log.committedOffsets(group, topic)
    expect(before).toEqual([{ partition: 0, offset: '-1' }])
    const { got } = await collect(log, group, topic, 5)
    expect(got[0]!.offset).toBe('0')
  })

  it('tells a sole member its assignment: every partition of every subscribed topic', async () => {
    const a = await topicWith(3, 3)
    const b = await topicWith(3, 2)
    const assignments: { topic: string; partition: number }[][] = []
    const handle = await log.consume({ groupId: uniqueName('g'), topics: [a, b], onBatch: async () => {}, onAssign: (x) => assignments.push(x) })
    try {
      await waitFor(async () => assignments.length > 0, { what: 'an assignment' })
      const last = assignments.at(-1)!.map((x) => `${x.topic}/${x.partition}`).sort()
      expect(last).toEqual([`${a}/0`, `${a}/1`, `${a}/2`, `${b}/0`, `${b}/1`].sort())
    } finally {
      await handle.stop()
    }
  })

  it('handles batches of different partitions at the same time (a slow sink does not hold the other partitions)', async () => {
    const topic = await topicWith(60, 3)
    // Every batch waits until batches of at least two partitions are in hand at once; handled one
    // at a time, none would ever see that, and each gives up after 10 s.
    const inHand = new Set<number>()
    let overlapped = false
    const { got } = await collect(log, uniqueName('g'), topic, 60, {
      onBatch: async (b) => {
        inHand.add(b.partition)
        const until = Date.now() + 10_000
        while (inHand.size < 2 && !overlapped && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
        if (inHand.size >= 2) overlapped = true
        inHand.delete(b.partition)
      },
    })
    expect(new Set(got.map((r) => r.offset + '@' + r.partition)).size).toBe(60)
    expect(overlapped).toBe(true)
  })

  it('with inFlight, hands the next batches of a partition while one is handled, at most inFlight at once, and commits in order', async () => {
    const topic = await topicWith(40, 1)
    const group = uniqueName('g')
    let inHand = 0
    let most = 0
    let committedWhileFirstHeld: string | null = null
    const laterDone: number[] = []
    const { got } = await collect(log, group, topic, 40, {
      maxBatch: 5,
      inFlight: 3,
      onBatch: async (b) => {
        inHand++
        most = Math.max(most, inHand)
        try {
          const first = Number(b.records[0]!.offset)
          if (first === 0) {
            // The first batch is held until two later batches were handled; handled one at a time, they never are.
            await waitFor(async () => laterDone.length >= 2, { what: 'two later batches handled', timeoutMs: 15_000 })
            // Their handlers resolved, but nothing may be committed past a batch still in hand.
            await new Promise((r) => setTimeout(r, 300))
            committedWhileFirstHeld = (await log.committedOffsets(group, topic))[0]!.offset
          } else laterDone.push(first)
        } finally {
          inHand--
        }
      },
    })
    expect(new Set(got.map((r) => r.offset)).size).toBe(40)
    expect(got).toHaveLength(40)
    expect(most).toBeGreaterThanOrEqual(2)
    expect(most).toBeLessThanOrEqual(3)
    expect(committedWhileFirstHeld).toBe('-1')
    expect((await log.committedOffsets(group, topic))[0]!.offset).toBe('40')
  })

  it('with inFlight, a batch that throws has its partition delivered again from its first record, the batches handed after it too', async () => {
    const topic = await topicWith(30, 1)
    const group = uniqueName('g')
    // Every delivery, in the order handlers started: [first offset, record offsets].
    const deliveries: number[][] = []
    let failed = false
    const { got } = await collect(log, group, topic, 30, {
      maxBatch: 5,
      inFlight: 3,
      onBatch: async (b) => {
        const offsets = b.records.map((r) => Number(r.offset))
        deliveries.push(offsets)
        if (offsets[0] === 10 && !failed) {
          // Fails once a later batch is in hand, which must then not count either.
          await waitFor(async () => deliveries.some((d) => d[0]! > 10), { what: 'a batch after offset 10 handed', timeoutMs: 15_000 })
          failed = true
          throw new Error('sink down')
        }
      },
    })
    expect(failed).toBe(true)
    // Nothing lost, and the committed offset is past every record.
    expect(new Set(got.map((r) => r.offset)).size).toBe(30)
    expect((await log.committedOffsets(group, topic))[0]!.offset).toBe('30')
    // The failed batch came again, and after it every later record: the partition was rewound.
    const again = deliveries.findIndex((d, i) => d[0] === 10 && deliveries.findIndex((e) => e[0] === 10) < i)
    expect(again).toBeGreaterThan(0)
    const after = new Set(deliveries.slice(again).flat())
    for (let o = 10; o < 30; o++) expect(after.has(o)).toBe(true)
  })

  it('caps batches at maxBatch and keeps bytes, null keys and headers intact', async () => {
    const topic = uniqueName('conf')
    await log.createTopics([{ name: topic, partitions: 1, compacted: false }])
    const bin = Buffer.from([0, 1, 2, 255, 254])
    await log.send(topic, [{ key: null, value: bin, headers: { 'x-a': 'ü' } }, ...Array.from({ length: 24 }, () => ({ key: 'k', value: bin }))])
    const { got, batches } = await collect(log, uniqueName('g'), topic, 25, { maxBatch: 10 })
    expect(Math.max(...batches.map((b) => b.records.length))).toBeLessThanOrEqual(10)
    expect(got[0]!.key).toBeNull()
    expect(got[0]!.value!.equals(bin)).toBe(true)
    expect(got[0]!.headers['x-a']).toBe('ü')
  })
})
