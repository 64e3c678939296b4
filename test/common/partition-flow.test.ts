import { describe, expect, it } from 'vitest'
import { PartitionFlow, retryPauseMs } from '../../common/eventlog/partition-flow.ts'

/** A flow whose commits, rewinds and errors are recorded; `gate()` gives a handler that resolves or rejects on demand. */
function recorded(max = 3) {
  const commits: string[] = []
  const rewinds: string[] = []
  const errors: unknown[] = []
  const commitErrors: unknown[] = []
  let failCommit = false
  const flow = new PartitionFlow(max, {
    commit: async (next) => {
      if (failCommit) throw new Error('coordinator moved')
      commits.push(next)
    },
    rewind: (offset) => rewinds.push(offset),
    onError: (err) => errors.push(err),
    onCommitError: (err) => commitErrors.push(err),
  })
  const gate = () => {
    let resolve!: () => void
    let reject!: (err: Error) => void
    const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)))
    return { handle: () => promise, resolve, reject }
  }
  return { flow, commits, rewinds, errors, commitErrors, gate, failCommits: (v: boolean) => (failCommit = v) }
}

const settle = () => new Promise((r) => setTimeout(r, 0))

describe('PartitionFlow (batches of a partition in flight)', () => {
  it('commits in hand order, each once it and every batch before it succeeded', async () => {
    const { flow, commits, gate } = recorded()
    const [a, b, c] = [gate(), gate(), gate()]
    flow.hand('0', '4', a.handle)
    flow.hand('5', '9', b.handle)
    flow.hand('10', '14', c.handle)
    c.resolve()
    b.resolve()
    await settle()
    expect(commits).toEqual([]) // the first is still in hand
    a.resolve()
    await flow.drain()
    expect(commits).toEqual(['5', '10', '15'])
  })

  it('makes room only when fewer than the limit are in flight', async () => {
    const { flow, gate } = recorded(2)
    const [a, b] = [gate(), gate()]
    flow.hand('0', '0', a.handle)
    flow.hand('1', '1', b.handle)
    let roomy = false
    const room = flow.room().then(() => (roomy = true))
    await settle()
    expect(roomy).toBe(false)
    a.resolve()
    await room
    expect(roomy).toBe(true)
    b.resolve()
    await flow.drain()
  })

  it('a failed batch rewinds to its first offset; neither it nor the batches after it are committed; the redelivery commits', async () => {
    const { flow, commits, rewinds, errors, gate } = recorded()
    const [a, b, c] = [gate(), gate(), gate()]
    flow.hand('0', '4', a.handle)
    flow.hand('5', '9', b.handle)
    flow.hand('10', '14', c.handle)
    a.resolve()
    c.resolve()
    b.reject(new Error('sink down'))
    await flow.drain()
    expect(commits).toEqual(['5'])
    expect(rewinds).toEqual(['5'])
    expect(errors.map((e) => (e as Error).message)).toEqual(['sink down'])
    flow.hand('5', '14', async () => {})
    await flow.drain()
    expect(commits).toEqual(['5', '15'])
  })

  it('a dropped batch counts as in flight until its handler ends (room and drain wait for it)', async () => {
    // A limit of one: room only once neither is in flight.
    const { flow, rewinds, gate } = recorded(1)
    const [a, b] = [gate(), gate()]
    flow.hand('0', '4', a.handle)
    flow.hand('5', '9', b.handle)
    a.reject(new Error('sink down'))
    let drained = false
    const drain = flow.drain().then(() => (drained = true))
    let roomy = false
    const room = flow.room().then(() => (roomy = true))
    await new Promise((r) => setTimeout(r, 300))
    expect(rewinds).toEqual(['0'])
    // b is dropped (handed after the failed batch) but its handler still runs.
    expect(drained).toBe(false)
    expect(roomy).toBe(false)
    b.resolve()
    await Promise.all([drain, room])
    expect(drained && roomy).toBe(true)
  })

  it('a rewind that throws (a consumer restarting) leaves the flow working', async () => {
    const commits: string[] = []
    const flow = new PartitionFlow(3, {
      commit: async (next) => void commits.push(next),
      rewind: () => {
        throw new Error('Consumer group was not initialized')
      },
      onError: () => {},
      onCommitError: () => {},
    })
    flow.hand('0', '4', async () => {
      throw new Error('down')
    })
    await flow.drain()
    flow.hand('0', '9', async () => {})
    await flow.drain()
    expect(commits).toEqual(['10'])
  })

  it('waits a growing pause before handing again after failures in a row, none after a success', async () => {
    expect([0, 1, 2, 3, 6, 7, 50].map(retryPauseMs)).toEqual([0, 200, 400, 800, 5000, 5000, 5000])
    const { flow } = recorded()
    flow.hand('0', '0', async () => {
      throw new Error('down')
    })
    await flow.drain()
    const t0 = Date.now()
    await flow.room()
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190)
    flow.hand('0', '0', async () => {})
    await flow.drain()
    // No pause after a success: room resolves within the current turn, before any timer or
    // immediate can fire (a clock bound here could flake on a busy machine).
    let roomy = false
    void flow.room().then(() => (roomy = true))
    await new Promise((r) => setImmediate(r))
    expect(roomy).toBe(true)
  })

  it('after a new assignment, batches still in flight are neither committed nor rewound', async () => {
    const { flow, commits, rewinds, gate } = recorded()
    const [a, b] = [gate(), gate()]
    flow.hand('0', '4', a.handle)
    flow.hand('5', '9', b.handle)
    flow.reassigned()
    a.resolve()
    b.reject(new Error('late failure'))
    flow.hand('0', '9', async () => {})
    await flow.drain()
    expect(rewinds).toEqual([])
    expect(commits).toEqual(['10'])
  })

  it('a failed commit is reported and does not stop later batches from committing', async () => {
    const { flow, commits, commitErrors, failCommits } = recorded()
    failCommits(true)
    flow.hand('0', '4', async () => {})
    await flow.drain()
    failCommits(false)
    flow.hand('5', '9', async () => {})
    await flow.drain()
    expect(commitErrors).toHaveLength(1)
    expect(commits).toEqual(['10'])
  })

  it('a handler that throws at once counts as a failed batch', async () => {
    const { flow, rewinds } = recorded()
    flow.hand('3', '4', () => {
      throw new Error('sync')
    })
    await flow.drain()
    expect(rewinds).toEqual(['3'])
  })

  it('refuses a limit that is not a positive integer', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => recorded(bad)).toThrow(/inFlight/)
  })
})
