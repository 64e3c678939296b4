import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventCodec } from '../../common/eventlog/codec.ts'
import type { ConsumeOptions, EventLog, LogRecord } from '../../common/eventlog/port.ts'
import { drop, ok, runPipeline } from '../../common/runtime/pipeline.ts'
import { newEmbeddedLog, newEmbeddedRegistry, silentLogger, uniqueName, waitFor } from '../helpers.ts'

/**
 * `sinkEvery`: the runner hands the sink a batch in parts while it processes the rest, and the
 * batch is committed only once every part is written (the projection's overlap of decode and insert).
 */
describe('pipeline runner: a batch handed to the sink in parts', () => {
  let log: EventLog
  let codec: EventCodec
  beforeAll(async () => {
    log = await newEmbeddedLog()
    codec = await EventCodec.create(newEmbeddedRegistry(), [])
  })
  afterAll(async () => {
    await log.close()
  })

  /** The `process` of a definition whose records all go through processMany. */
  const processManyOnly = (): never => {
    throw new Error('processMany is used instead')
  }

  async function topicWith(n: number): Promise<string> {
    const topic = uniqueName('parts')
    await log.createTopics([{ name: topic, partitions: 1, compacted: false }])
    await log.send(topic, Array.from({ length: n }, (_, i) => ({ key: `7:${i}`, value: Buffer.from(String(i)) })))
    return topic
  }

  it('writes each part while the next is processed, every record once, in order', async () => {
    const topic = await topicWith(95)
    const group = uniqueName('g')
    const trace: string[] = []
    const written: number[] = []
    const running = await runPipeline(
      {
        name: group,
        topics: [topic],
        process: (record: LogRecord) => {
          trace.push(`process ${record.offset}`)
          return ok(Number(record.value!.toString()))
        },
        sink: async (items) => {
          trace.push(`sink ${items[0]!.value}..${items.at(-1)!.value}`)
          // The write proper is sent a few promise reactions later (as the projection's insert is,
          // behind its turn of writes); it must be sent before the next part is processed.
          for (let i = 0; i < 5; i++) await Promise.resolve()
          trace.push(`write ${items[0]!.value}`)
          await new Promise((r) => setTimeout(r, 20))
          written.push(...items.map((i) => i.value))
        },
        sinkEvery: 30,
      },
      { log, codec, logger: silentLogger, maxBatch: 100, fromBeginning: true },
    )
    await waitFor(async () => (await log.committedOffsets(group, topic))[0]!.offset === '95', { what: 'offset 95 committed', timeoutMs: 20_000 })
    await running.stop()
    expect(written).toEqual(Array.from({ length: 95 }, (_, i) => i))
    expect(trace.filter((t) => t.startsWith('sink'))).toEqual(['sink 0..29', 'sink 30..59', 'sink 60..89', 'sink 90..94'])
    // Part 0's write had begun before record 30 was processed.
    expect(trace.indexOf('write 0')).toBeLessThan(trace.indexOf('process 30'))
  })

  it('commits nothing of a batch whose later part failed, and delivers the whole batch again', async () => {
    const topic = await topicWith(50)
    const group = uniqueName('g')
    const written: number[] = []
    let failed = 0
    let failOnce = true
    const running = await runPipeline(
      {
        name: group,
        topics: [topic],
        process: (record: LogRecord) => ok(Number(record.value!.toString())),
        sink: async (items) => {
          // The second part of the first delivery fails after the first part was written.
          if (items[0]!.value === 20 && failOnce) {
            failOnce = false
            failed++
            expect(await log.committedOffsets(group, topic)).toEqual([{ partition: 0, offset: '-1' }])
            throw new Error('insert failed')
          }
          written.push(...items.map((i) => i.value))
        },
        sinkEvery: 20,
      },
      { log, codec, logger: silentLogger, maxBatch: 100, fromBeginning: true },
    )
    await waitFor(async () => (await log.committedOffsets(group, topic))[0]!.offset === '50', { what: 'offset 50 committed', timeoutMs: 20_000 })
    await running.stop()
    expect(failed).toBe(1)
    // Part 0..19 twice (written, then delivered again with its batch); nothing lost.
    expect(written.filter((v) => v < 20)).toHaveLength(40)
    expect([...new Set(written)].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i))
  })
  it('processMany: asks for every part before awaiting the first, and a part that fails fails the whole batch', async () => {
    const topic = await topicWith(60)
    const group = uniqueName('g')
    const asked: string[] = []
    const written: number[] = []
    let failOnce = true
    const running = await runPipeline(
      {
        name: group,
        topics: [topic],
        process: processManyOnly,
        processMany: async (records: readonly LogRecord[]) => {
          asked.push(`${records[0]!.offset}..${records.at(-1)!.offset}`)
          // Answered later (as a thread answers): the next part is asked for meanwhile.
          await new Promise((r) => setTimeout(r, 5))
          if (records[0]!.offset === '25' && failOnce) {
            failOnce = false
            throw new Error('the decode thread failed')
          }
          return records.map((r) => ok(Number(r.value!.toString())))
        },
        sink: async (items) => {
          written.push(...items.map((i) => i.value))
        },
        sinkEvery: 25,
      },
      { log, codec, logger: silentLogger, maxBatch: 100, fromBeginning: true },
    )
    await waitFor(async () => (await log.committedOffsets(group, topic))[0]!.offset === '60', { what: 'offset 60 committed', timeoutMs: 20_000 })
    await running.stop()
    // First delivery: three parts asked at once; the second fails, so the batch came again whole.
    expect(asked).toEqual(['0..24', '25..49', '50..59', '0..24', '25..49', '50..59'])
    // Nothing lost; the first part was written on both deliveries (at least once).
    expect([...new Set(written)].sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i))
    expect(written.filter((v) => v < 25)).toHaveLength(50)
  })

  it.each([true, false])('sinkRuns %s: records kept in a row with one value reach the sink as one item (its first record), others each as theirs', async (runs) => {
    const topic = await topicWith(10)
    const group = uniqueName('g')
    const items: { offset: string; value: string }[] = []
    const shared = { part: 'a' }
    const running = await runPipeline(
      {
        name: group,
        topics: [topic],
        process: processManyOnly,
        // Records 0-3 share a value, 4 is dropped, 5-6 share it again, 7 has its own, 8-9 share another.
        processMany: async (records: readonly LogRecord[]) => {
          const other = { part: 'b' }
          return records.map((r) => {
            const i = Number(r.offset)
            if (i === 4) return drop('not for this sink')
            return ok(i === 7 ? { part: 'own' } : i >= 8 ? other : shared)
          })
        },
        sinkRuns: runs,
        sink: async (got) => {
          items.push(...got.map((g) => ({ offset: g.record.offset, value: g.value.part })))
        },
      },
      { log, codec, logger: silentLogger, maxBatch: 100, fromBeginning: true },
    )
    await waitFor(async () => (await log.committedOffsets(group, topic))[0]!.offset === '10', { what: 'offset 10 committed', timeoutMs: 20_000 })
    await running.stop()
    // A record dropped between kept ones does not part them (4 between 0-3 and 5-6).
    if (runs) expect(items).toEqual([{ offset: '0', value: 'a' }, { offset: '7', value: 'own' }, { offset: '8', value: 'b' }])
    else expect(items.map((i) => i.offset)).toEqual(['0', '1', '2', '3', '5', '6', '7', '8', '9'])
  })

  // One slow thing at a time, so that neither wait hides the other: a part still being processed
  // (the third, released after the second failed), or a part still being written (the first).
  it.each(['processed', 'written'] as const)('fails a batch only once nothing of it runs: a part still being %s settles first', async (slow) => {
    const topic = await topicWith(60)
    const group = uniqueName('g')
    const events: string[] = []
    let failOnce = true
    let deliveries = 0
    let releaseSlowPart!: () => void
    const slowPart = new Promise<void>((r) => (releaseSlowPart = r))
    const running = await runPipeline(
      {
        name: group,
        topics: [topic],
        process: processManyOnly,
        processMany: async (records: readonly LogRecord[]) => {
          const first = records[0]!.offset
          if (first === '0') deliveries++
          if (failOnce && first === '20') {
            await new Promise((r) => setTimeout(r, 5))
            failOnce = false
            events.push('part 20 failed')
            setTimeout(releaseSlowPart, 300)
            throw new Error('the decode thread failed')
          }
          if (slow === 'processed' && first === '40' && deliveries === 1) {
            await slowPart
            events.push('part 40 processed')
          }
          return records.map((r) => ok(Number(r.value!.toString())))
        },
        sink: async (items) => {
          if (slow === 'written' && items[0]!.value === 0 && deliveries === 1) {
            await new Promise((r) => setTimeout(r, 300))
            events.push('part 0 written')
          }
        },
        sinkEvery: 20,
      },
      {
        // The log, its consumers' failed batches seen.
        log: Object.assign(Object.create(log) as EventLog, {
          consume: (opts: ConsumeOptions) =>
            log.consume({
              ...opts,
              onError: (err, where) => {
                events.push('batch failed')
                opts.onError?.(err, where)
              },
            }),
        }),
        codec,
        logger: silentLogger,
        maxBatch: 100,
        fromBeginning: true,
      },
    )
    await waitFor(async () => (await log.committedOffsets(group, topic))[0]!.offset === '60', { what: 'offset 60 committed', timeoutMs: 20_000 })
    await running.stop()
    // Without the wait, the batch failed (and came again) while that part was still at work.
    expect(events.slice(0, 3)).toEqual(['part 20 failed', slow === 'processed' ? 'part 40 processed' : 'part 0 written', 'batch failed'])
  })
})
