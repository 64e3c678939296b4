import { describe, expect, it } from 'vitest'
import { EventCodec, readSchema } from '../../common/eventlog/codec.ts'
import { EncodedRecords } from '../../common/eventlog/encoded-records.ts'
import { EmbeddedSchemaRegistry } from '../../common/eventlog/schema-registry.ts'
import { avroType, frame, FramedValues } from '../../common/eventlog/wire-format.ts'
import { TOPICS } from '../../common/topics.ts'
import { BufferPool } from '../../common/buffer-pool.ts'
import type { OutRecord } from '../../common/eventlog/port.ts'
import type { SegmentChanged } from '../../common/events.ts'
import { tmpDir } from '../helpers.ts'

const SEGMENTS = ['Champions', 'At Risk', 'Hibernating', null]

function change(i: number): SegmentChanged {
  return {
    event_id: `e-${i}`, tenant_id: 3, occurred_at: 1_700_000_000_000 + i, source: 'cdp.features', customer_id: i,
    previous_segment: SEGMENTS[i % 4]!, segment: SEGMENTS[(i + 1) % 4]!,
    // Now and then a long or non-ASCII text, so values vary in size and the buffer grows mid-value.
    previous_rfm_score: i % 37 === 0 ? 'ñ'.repeat(500 + i) : '111', rfm_score: i % 5 === 0 ? null : '555',
  }
}

describe('FramedValues', () => {
  const type = avroType(readSchema('segment-changed.avsc'))

  it('holds each value framed exactly as frame() makes it, while its buffer grows from 16 bytes', () => {
    const values = new FramedValues(16)
    const events = Array.from({ length: 600 }, (_, i) => change(i))
    for (const e of events) values.add(42, type, e)
    expect(values.length).toBe(events.length)
    events.forEach((e, i) => expect(values.value(i).equals(frame(42, type, e)), `value ${i}`).toBe(true))
  })

  it('on a pool: frames exactly as frame() does, gives its buffer back at release, and never one a view still reads', () => {
    const pool = new BufferPool(1 << 20, 64)
    const events = Array.from({ length: 300 }, (_, i) => change(i))
    const values = new FramedValues(64, pool)
    for (const e of events) values.add(42, type, e)
    events.forEach((e, i) => expect(values.value(i).equals(frame(42, type, e)), `value ${i}`).toBe(true))
    // Grown before any view was made: the outgrown buffers went back, and only they.
    const held = pool.held
    expect(held).toBeGreaterThan(0)
    values.release()
    expect(values.length).toBe(0)
    expect(pool.held).toBeGreaterThan(held)
    // Used again, on the pool's buffers; a view taken mid-way keeps its bytes while the values grow on.
    const again = new FramedValues(64, pool)
    again.add(9, type, events[0]!)
    const early = again.value(0)
    const copy = Buffer.from(early)
    for (const e of events.slice(1)) again.add(9, type, e)
    const other = new FramedValues(64, pool)
    for (const e of events) other.add(1, type, { ...e, segment: 'Lost' })
    expect(early.equals(copy)).toBe(true)
    events.forEach((e, i) => expect(again.value(i).equals(frame(9, type, e)), `value ${i} again`).toBe(true))
  })

  it('throws for a value its type refuses and adds nothing; the values before and after are intact', () => {
    const values = new FramedValues(64)
    values.add(7, type, change(1))
    expect(() => values.add(7, type, { ...change(2), customer_id: 'two' })).toThrow()
    values.add(7, type, change(3))
    expect(values.length).toBe(2)
    expect(values.value(0).equals(frame(7, type, change(1)))).toBe(true)
    expect(values.value(1).equals(frame(7, type, change(3)))).toBe(true)
  })
})

/** A real registry whose cache misses every other value's schema, as one that must fetch it first. */
class ForgetfulRegistry extends EmbeddedSchemaRegistry {
  private calls = 0
  override encodeKnownInto(id: number, value: unknown, into: FramedValues): boolean {
    return this.calls++ % 2 === 0 ? super.encodeKnownInto(id, value, into) : false
  }
}

describe('EncodedRecords', () => {
  const topic = TOPICS.segmentChanges.name

  /** `n` segment changes added to records of a codec on `registry`, keyed 3:<i>. */
  async function added(registry: EmbeddedSchemaRegistry, n: number) {
    const codec = await EventCodec.create(registry)
    const records = new EncodedRecords(codec, topic)
    const events = Array.from({ length: n }, (_, i) => change(i))
    events.forEach((e, i) => records.add(`3:${i}`, e))
    return { codec, records, events }
  }

  /** The records are the events, in order: keys as given, values the codec decodes back to them. */
  async function expectRecordsOf(codec: EventCodec, got: OutRecord[], events: SegmentChanged[]) {
    expect(got.map((r) => r.key)).toEqual(events.map((_, i) => `3:${i}`))
    for (let i = 0; i < events.length; i++) expect({ ...(await codec.decode<SegmentChanged>(topic, got[i]!.value)) }).toEqual(events[i])
  }

  it('gives the records in the order added, keys as given, values the codec decodes back to the events', async () => {
    const { codec, records, events } = await added(new EmbeddedSchemaRegistry(tmpDir()), 300)
    const out = records.records()
    expect(out).toBeInstanceOf(Array) // every schema known: no promise
    await expectRecordsOf(codec, out as OutRecord[], events)
    expect(() => records.add('3:x', { ...change(1), tenant_id: null })).toThrow()
    expect(records.length).toBe(events.length)
  })

  it('waits for values whose schema had to be fetched, and keeps them in their place among the others', async () => {
    const { codec, records, events } = await added(new ForgetfulRegistry(tmpDir()), 50)
    const out = records.records()
    expect(out).toBeInstanceOf(Promise)
    await expectRecordsOf(codec, await out, events)
  })

  it('rejects records() when a value encoded apart is refused, and leaves no rejection unhandled', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (err: unknown) => unhandled.push(err)
    process.on('unhandledRejection', onUnhandled)
    try {
      const { records } = await added(new ForgetfulRegistry(tmpDir()), 0)
      records.add('3:0', change(0)) // encoded here
      records.add('3:1', { ...change(1), customer_id: 'one' }) // encoded apart: refused there
      await expect(records.records()).rejects.toThrow()
      await new Promise((r) => setTimeout(r, 50))
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })

  it('keeps the records already given intact while later values grow the buffer', async () => {
    const { codec, records, events } = await added(new EmbeddedSchemaRegistry(tmpDir()), 20)
    const first = records.records() as OutRecord[]
    const copies = first.map((r) => Buffer.from(r.value!))
    // 200 KB of text: more than the buffer's first 64 KB, so it is moved to a larger one.
    records.add('3:big', { ...change(20), previous_rfm_score: 'x'.repeat(200_000) })
    first.forEach((r, i) => expect(r.value!.equals(copies[i]!), `record ${i}`).toBe(true))
    await expectRecordsOf(codec, first, events)
    const all = records.records() as OutRecord[]
    expect(all).toHaveLength(21)
    expect((await codec.decode<SegmentChanged>(topic, all[20]!.value)).previous_rfm_score).toHaveLength(200_000)
  })
})
