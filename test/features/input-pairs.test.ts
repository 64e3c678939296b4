import { describe, expect, it } from 'vitest'
import { heldForPair, inputKey } from '../../pipelines/features/input-pairs.ts'
import { TOPICS } from '../../common/topics.ts'
import type { LogRecord } from '../../common/eventlog/port.ts'

const at = (topic: string, partition: number) => ({ topic, partition }) as LogRecord

describe('order and customer batches as pairs', () => {
  it('keys a partition\'s order batches 2p and its customer batches 2p + 1, other topics none', () => {
    expect([inputKey(at(TOPICS.orders.name, 3)), inputKey(at(TOPICS.customers.name, 3)), inputKey(at(TOPICS.profileChanges.name, 3))]).toEqual([6, 7, null])
  })

  // Partition 1: orders 2, customers 3; partition 2: orders 4, customers 5.
  const comingOf = (...keys: number[]) => (k: number) => keys.includes(k)

  it('holds a batch while the other topic\'s batch of its partition is coming, whatever waits', () => {
    expect(heldForPair(2, comingOf(3), [])).toBe(true)
    expect(heldForPair(3, comingOf(2), [3])).toBe(true)
    // Another partition's batches coming or waiting hold nothing.
    expect(heldForPair(2, comingOf(5, 4), [5, 4])).toBe(false)
  })

  it("holds it for its own topic's next batch only when the other topic's batch waits to be written with them", () => {
    // The case that scored customers twice: orders 2 waiting, customers 3 waiting, customers' next coming.
    expect(heldForPair(3, comingOf(3), [2, 3])).toBe(true)
    expect(heldForPair(2, comingOf(3), [2, 3])).toBe(true)
    // Nothing of the other topic waits: its own next batch is not waited for (a trickle of orders).
    expect(heldForPair(2, comingOf(2), [2])).toBe(false)
    expect(heldForPair(2, comingOf(2), [2, 5, null])).toBe(false)
    // Nothing coming: written at once, together.
    expect(heldForPair(2, comingOf(), [2, 3])).toBe(false)
    expect(heldForPair(3, comingOf(), [2, 3])).toBe(false)
  })
})
