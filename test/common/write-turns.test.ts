import { describe, expect, it } from 'vitest'
import { WriteTurns } from '../../common/runtime/write-turns.ts'
import { waitFor } from '../helpers.ts'

/** A write that holds until released, recording what it was given. */
function gatedWriter() {
  const writes: number[][] = []
  const gates: { open: () => void; fail: (err: Error) => void }[] = []
  const write = (items: number[]) =>
    new Promise<void>((resolve, reject) => {
      writes.push(items)
      gates.push({ open: resolve, fail: reject })
    })
  return { writes, gates, write }
}

const settled = (p: Promise<unknown>) => p.then(() => 'ok', (e: Error) => `failed: ${e.message}`)
const tick = () => new Promise((r) => setTimeout(r, 0))

describe('WriteTurns', () => {
  it('writes the batches that waited during a write together, in arrival order, and settles each with its write', async () => {
    const w = gatedWriter()
    const turns = new WriteTurns<number>(w.write)
    const first = turns.submit([1, 2])
    await tick()
    const later = [turns.submit([3]), turns.submit([4, 5]), turns.submit([6])]
    await tick()
    expect(w.writes).toEqual([[1, 2]]) // the others wait for the write in flight
    let firstDone = false
    void first.then(() => (firstDone = true))
    w.gates[0]!.open()
    await first
    expect(firstDone).toBe(true)
    await tick()
    expect(w.writes).toEqual([[1, 2], [3, 4, 5, 6]])
    const states = later.map(settled)
    await tick()
    w.gates[1]!.open()
    expect(await Promise.all(states)).toEqual(['ok', 'ok', 'ok'])
  })

  it('fails every batch of a failed write, and only those: the next batch is written on its own', async () => {
    const w = gatedWriter()
    const turns = new WriteTurns<number>(w.write)
    const first = settled(turns.submit([1]))
    await tick()
    const grouped = [settled(turns.submit([2])), settled(turns.submit([3]))]
    w.gates[0]!.open()
    await first
    await tick()
    w.gates[1]!.fail(new Error('insert refused'))
    expect(await Promise.all(grouped)).toEqual(['failed: insert refused', 'failed: insert refused'])
    const after = settled(turns.submit([4]))
    await tick()
    expect(w.writes.at(-1)).toEqual([4])
    w.gates[2]!.open()
    expect(await after).toBe('ok')
  })

  it('takes its turns from the exclusive runner it is given, so other work never overlaps a write', async () => {
    const log: string[] = []
    let chain: Promise<unknown> = Promise.resolve()
    const exclusive = (fn: () => Promise<void>) => {
      const run = chain.then(fn, fn)
      chain = run.catch(() => {})
      return run
    }
    const turns = new WriteTurns<string>(async (items) => {
      log.push(`write ${items.join(',')} start`)
      await tick()
      log.push(`write ${items.join(',')} end`)
    }, exclusive)
    const a = turns.submit(['a'])
    await Promise.resolve() // a's write has begun
    const other = exclusive(async () => {
      log.push('tick start')
      await tick()
      log.push('tick end')
    })
    const b = turns.submit(['b'])
    await Promise.all([a, other, b])
    expect(log).toEqual(['write a start', 'write a end', 'tick start', 'tick end', 'write b start', 'write b end'])
  })
  it('lets the next turn start when a write returns its storing, and settles the write\'s batches with it', async () => {
    const stores: { open: () => void; fail: (err: Error) => void }[] = []
    const writes: number[][] = []
    const turns = new WriteTurns<number>(async (items) => {
      writes.push(items)
      const stored = new Promise<void>((resolve, reject) => stores.push({ open: resolve, fail: reject }))
      return { stored }
    })
    const a = settled(turns.submit([1]))
    await tick()
    const b = settled(turns.submit([2]))
    await tick()
    // The first write's rows are not stored yet, and the second write has already had its turn.
    expect(writes).toEqual([[1], [2]])
    let aDone = false
    void a.then(() => (aDone = true))
    await tick()
    expect(aDone).toBe(false)
    stores[1]!.open()
    expect(await b).toBe('ok')
    expect(aDone).toBe(false) // each batch settles with its own write's storing
    stores[0]!.fail(new Error('insert refused'))
    expect(await a).toBe('failed: insert refused')
  })

  it('gathers: a turn with fewer items than asked waits for more, up to its wait; enough items write at once', async () => {
    // Enough: the second submit brings the waiting items to 4, and the write goes without waiting a minute.
    const a = gatedWriter()
    const gathering = new WriteTurns<number>(a.write, undefined, { items: 4, waitMs: 60_000 })
    const p1 = gathering.submit([1, 2])
    await tick()
    expect(a.writes).toEqual([]) // two of four: still gathering
    const p2 = gathering.submit([3, 4])
    await tick()
    expect(a.writes).toEqual([[1, 2, 3, 4]])
    a.gates[0]!.open()
    expect(await Promise.all([settled(p1), settled(p2)])).toEqual(['ok', 'ok'])

    // Not enough: written after the wait, with whatever arrived meanwhile, and failures still reach each batch.
    const b = gatedWriter()
    const short = new WriteTurns<number>(b.write, undefined, { items: 100, waitMs: 30 })
    const q1 = settled(short.submit([1]))
    const q2 = settled(short.submit([2]))
    await new Promise((r) => setTimeout(r, 200))
    expect(b.writes).toEqual([[1, 2]])
    b.gates[0]!.fail(new Error('insert failed'))
    expect(await Promise.all([q1, q2])).toEqual(['failed: insert failed', 'failed: insert failed'])
  })

  it('pairs: a batch whose pair is still coming is held back while the others are written, then written with its pair', async () => {
    const w = gatedWriter()
    // Batch [n] pairs with [n + 1] while n + 1 is "being processed".
    const coming = new Set([2])
    const turns = new WriteTurns<number>(w.write, undefined, null, { waits: (items) => coming.has(items[0]! + 1), waitMs: 60_000 })
    const one = settled(turns.submit([1]))
    await tick()
    expect(w.writes).toEqual([]) // its pair is coming, and nothing else waits: the turn waits
    const ten = settled(turns.submit([10]))
    await tick()
    await tick()
    expect(w.writes).toEqual([[10]]) // written without waiting; [1] is held back
    coming.delete(2)
    const two = settled(turns.submit([2]))
    w.gates[0]!.open()
    await new Promise((r) => setTimeout(r, 20))
    expect(w.writes).toEqual([[10], [1, 2]])
    w.gates[1]!.open()
    expect(await Promise.all([one, ten, two])).toEqual(['ok', 'ok', 'ok'])
  })

  it('pairs: waits is asked with the batches waiting, its own among them, and can hold one for another that waits', async () => {
    const w = gatedWriter()
    const asked: number[][][] = []
    // [20] is held while [21] waits and [22] is coming: all three written together once [22] comes.
    const coming = new Set([22])
    const turns = new WriteTurns<number>(w.write, undefined, null, {
      waits: (items, waiting) => {
        asked.push(waiting.map((g) => [...g]))
        return coming.size > 0 && (items[0] === 21 || (items[0] === 20 && waiting.some((g) => g[0] === 21)))
      },
      waitMs: 60_000,
    })
    const b20 = settled(turns.submit([20]))
    const b21 = settled(turns.submit([21]))
    await new Promise((r) => setTimeout(r, 20))
    expect(w.writes).toEqual([])
    expect(asked.at(-1)).toEqual([[20], [21]])
    coming.delete(22)
    const b22 = settled(turns.submit([22]))
    await waitFor(async () => w.writes.length > 0, { what: 'a write', timeoutMs: 10_000, intervalMs: 5 })
    expect(w.writes).toEqual([[20, 21, 22]])
    w.gates[0]!.open()
    expect(await Promise.all([b20, b21, b22])).toEqual(['ok', 'ok', 'ok'])
  })

  it('pairs: a batch held to go with one that waits goes with it when that one\'s waitMs ends', async () => {
    const w = gatedWriter()
    // [30] waits for [32] (coming); [31] waits only to go with [30].
    const turns = new WriteTurns<number>(w.write, undefined, null, {
      waits: (items, waiting) => items[0] === 30 || (items[0] === 31 && waiting.some((g) => g[0] === 30)),
      waitMs: 1_000,
    })
    const b30 = settled(turns.submit([30]))
    await new Promise((r) => setTimeout(r, 50))
    const b31 = settled(turns.submit([31]))
    // [30]'s second ends before [31]'s: both go then, together, not [30] alone.
    await waitFor(async () => w.writes.length > 0, { what: 'a write', timeoutMs: 10_000, intervalMs: 5 })
    expect(w.writes).toEqual([[30, 31]])
    w.gates[0]!.open()
    expect(await Promise.all([b30, b31])).toEqual(['ok', 'ok'])
  })

  it('pairs: a held batch is written alone once its pair is no longer coming (wake), or after waitMs at the latest', async () => {
    const w = gatedWriter()
    const coming = new Set([4])
    const turns = new WriteTurns<number>(w.write, undefined, null, { waits: (items) => coming.has(items[0]! + 1), waitMs: 60_000 })
    const three = settled(turns.submit([3]))
    await new Promise((r) => setTimeout(r, 20))
    expect(w.writes).toEqual([])
    // Its pair ended with nothing to write (every record dead-lettered): no submit, only a wake.
    coming.delete(4)
    turns.wake()
    await new Promise((r) => setTimeout(r, 20))
    expect(w.writes).toEqual([[3]])
    w.gates[0]!.fail(new Error('insert refused'))
    expect(await three).toBe('failed: insert refused')

    const b = gatedWriter()
    const never = new WriteTurns<number>(b.write, undefined, null, { waits: () => true, waitMs: 30 })
    const p = settled(never.submit([5]))
    await new Promise((r) => setTimeout(r, 200))
    expect(b.writes).toEqual([[5]])
    b.gates[0]!.open()
    expect(await p).toBe('ok')
  })
})
