/**
 * The job queue module (common/jobs/) that processing and connector syncs share: the versioned
 * job table against chdb, the group lock's verdicts, the single-row claim, leases and the
 * heartbeat, the in-process cancel registry and schedule occurrences.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openStore, type Store } from '../../common/store/clickhouse.ts'
import { JobTable, type JobTableSpec } from '../../common/jobs/table.ts'
import { afterClaim, afterStart, blockerOf, claimRow, type LockClaim } from '../../common/jobs/lock.ts'
import { checkHeartbeat, Heartbeat, leaseHeld } from '../../common/jobs/lease.ts'
import { LocalJobs } from '../../common/jobs/cancel.ts'
import { sleep } from '../../common/retry.ts'
import { latestDueOccurrence, nextOccurrenceAfter } from '../../common/jobs/schedule.ts'
import { tmpDir, waitFor } from '../helpers.ts'

interface Row {
  group_id: number
  job_id: string
  status: 'queued' | 'running' | 'cancelling' | 'done'
  owner: string
  heartbeat_at: number | null
  urgent: boolean
  payload: { cursor: string; n: number } | null
  note: string
}

const SPEC: JobTableSpec<Row> = {
  table: 'scratch_jobs',
  columns: ['group_id', 'job_id', 'status', 'owner', 'heartbeat_at', 'urgent', 'payload', 'note'],
  timeColumns: ['heartbeat_at'],
  jsonColumns: ['payload'],
  flagColumns: ['urgent'],
  numberColumns: ['group_id'],
  rank: (r) => (r.status === 'done' ? 3 : r.status === 'cancelling' ? 2 : 1),
  derived: (r) => ({ note_length: r.note.length }),
}

let store: Store
let table: JobTable<Row>
const row = (over: Partial<Row> = {}): Row => ({ group_id: 7, job_id: 'a', status: 'queued', owner: '', heartbeat_at: null, urgent: false, payload: null, note: '', ...over })

beforeAll(async () => {
  store = await openStore({ database: 'cdp', chdbPath: tmpDir() })
  await store.command({
    query: `CREATE TABLE scratch_jobs (group_id UInt64, job_id String, status String, owner String, heartbeat_at Nullable(DateTime64(3, 'UTC')),
            urgent UInt8, payload String, note String, note_length UInt32, version UInt64) ENGINE = ReplacingMergeTree(version) ORDER BY (group_id, job_id)`,
  })
  table = new JobTable(store, SPEC)
})

afterAll(async () => {
  await store?.close()
})

describe('JobTable', () => {
  it('round-trips times, JSON, flags and 64-bit integers, and writes derived columns', async () => {
    const hb = Date.UTC(2026, 10, 26, 6, 30, 15, 123)
    await table.write(row({ group_id: 1, job_id: 'rt', heartbeat_at: hb, urgent: true, payload: { cursor: 'p2', n: 3 }, note: 'hello' }))
    const [got] = await table.select({ key: 'group_id = {g:UInt64}', params: { g: 1 } })
    expect(got).toEqual({ group_id: 1, job_id: 'rt', status: 'queued', owner: '', heartbeat_at: hb, urgent: true, payload: { cursor: 'p2', n: 3 }, note: 'hello' })
    const rs = await store.query({ query: 'SELECT note_length FROM scratch_jobs FINAL WHERE group_id = 1', format: 'JSONEachRow' })
    expect(await rs.json()).toEqual([{ note_length: 5 }])
  })

  it('a later lifecycle stage wins over a later write of an earlier one; the newest write of a stage wins', async () => {
    await table.write(row({ group_id: 2, job_id: 'x', status: 'running', owner: 'r1' }))
    await table.write(row({ group_id: 2, job_id: 'x', status: 'done', owner: 'r1' }))
    // A late heartbeat of the live stage, written after the final state, must not undo it.
    await table.write(row({ group_id: 2, job_id: 'x', status: 'running', owner: 'r1', heartbeat_at: Date.now() }))
    await table.write(row({ group_id: 2, job_id: 'y', status: 'running', owner: 'r1' }))
    await table.write(row({ group_id: 2, job_id: 'y', status: 'running', owner: 'r2' }))
    const rows = await table.select({ key: 'group_id = {g:UInt64}', tail: 'ORDER BY job_id', params: { g: 2 } })
    expect(rows.map((r) => [r.job_id, r.status, r.owner])).toEqual([
      ['x', 'done', 'r1'],
      ['y', 'running', 'r2'],
    ])
  })

  it('filters on non-key columns after FINAL (a superseded state never matches) and reads skipped columns as empty', async () => {
    await table.write(row({ group_id: 3, job_id: 'q', status: 'queued', payload: { cursor: 'c', n: 1 } }))
    await table.write(row({ group_id: 3, job_id: 'q', status: 'done', payload: { cursor: 'c', n: 1 } }))
    expect(await table.select({ key: 'group_id = {g:UInt64}', where: `status = 'queued'`, params: { g: 3 } })).toEqual([])
    const [done] = await table.select({ key: 'group_id = {g:UInt64}', where: `status = 'done'`, params: { g: 3 }, skip: ['payload'] })
    expect(done?.payload).toBeNull()
  })
})

describe('the group lock', () => {
  const c = (id: string, racing: boolean, started: boolean): LockClaim => ({ id, racing, started })

  it('takes the lock alone, waits behind a racing claim, is blocked by a started or waiting one', () => {
    expect(afterClaim([c('a', true, false)], 'a')).toBe('take')
    expect(afterClaim([c('b', true, false), c('a', true, false)], 'a')).toBe('wait')
    expect(afterClaim([c('b', true, true), c('a', true, false)], 'a')).toBe('blocked')
    // A started claim behind us still blocks: it read before our insert.
    expect(afterClaim([c('a', true, false), c('b', true, true)], 'a')).toBe('blocked')
    expect(afterClaim([c('q', false, false), c('a', true, false)], 'a')).toBe('blocked')
    expect(afterClaim([c('b', true, false)], 'a')).toBe('blocked')
  })

  it('keeps the lock with nothing ahead, gives it back to a started or waiting claim ahead', () => {
    expect(afterStart([c('a', true, true), c('b', true, true)], 'a')).toBe('keep')
    expect(afterStart([c('b', true, false), c('a', true, true)], 'a')).toBe('wait')
    expect(afterStart([c('b', true, true), c('a', true, true)], 'a')).toBe('lost')
    expect(afterStart([c('q', false, false), c('a', true, true)], 'a')).toBe('lost')
    expect(afterStart([], 'a')).toBe('lost')
  })

  it('names the started claim as the blocker, else the first in line', () => {
    expect(blockerOf([c('q', false, false), c('s', true, true), c('a', true, false)], 'a')?.id).toBe('s')
    expect(blockerOf([c('q', false, false), c('a', true, false)], 'a')?.id).toBe('q')
    expect(blockerOf([c('a', true, false)], 'a')).toBeUndefined()
  })

  it('at most one of many claimants keeps the lock, in every interleaving of their two reads', () => {
    // Three claimants a, b, c; each inserts its claim, does read 1, W2 (start) and read 2 at some
    // point of a shared timeline. Enumerate every order of the nine steps that keeps each
    // claimant's own steps in order, and check the verdicts.
    const ids = ['a', 'b', 'c']
    type Step = { id: string; kind: 'insert' | 'read1' | 'start' | 'read2' }
    const orders: Step[][] = []
    const next = (done: Record<string, number>, acc: Step[]) => {
      if (acc.length === ids.length * 4) return void orders.push(acc)
      for (const id of ids) {
        const k = done[id]!
        if (k < 4) next({ ...done, [id]: k + 1 }, [...acc, { id, kind: (['insert', 'read1', 'start', 'read2'] as const)[k]! }])
      }
    }
    next({ a: 0, b: 0, c: 0 }, [])
    expect(orders.length).toBe(34650)
    for (const order of orders) {
      const inserted: string[] = []
      const started = new Set<string>()
      const gaveUp = new Set<string>()
      const kept: string[] = []
      for (const s of order) {
        if (gaveUp.has(s.id)) continue
        // Lock order (claim time, id) is a, b, c whatever the order of the inserts: replicas' clocks differ.
        const live = ids.filter((i) => inserted.includes(i) && !gaveUp.has(i)).map((i) => c(i, true, started.has(i)))
        if (s.kind === 'insert') inserted.push(s.id)
        else if (s.kind === 'read1') {
          // A 'wait' re-reads later; treat it as giving up (a 409), the safe outcome the lock allows.
          if (afterClaim(live, s.id) !== 'take') gaveUp.add(s.id)
        } else if (s.kind === 'start') started.add(s.id)
        else if (afterStart(live, s.id) === 'keep') kept.push(s.id)
        else gaveUp.add(s.id)
      }
      expect(kept.length).toBeLessThanOrEqual(1)
    }
  })
})

describe('the single-row claim', () => {
  it('is ours when the row read back is ours, null when another claimant wrote after us', async () => {
    await table.write(row({ group_id: 4, job_id: 'j' }))
    const io = (me: string) => ({
      write: (r: Row) => table.write(r),
      read: async () => (await table.select({ key: 'group_id = 4 AND job_id = {j:String}', params: { j: 'j' } }))[0] ?? null,
      ours: (r: Row) => r.owner === me,
    })
    expect(await claimRow(row({ group_id: 4, job_id: 'j', status: 'running', owner: 'r1' }), io('r1'))).toMatchObject({ owner: 'r1' })
    // r2 claims after r1: r2 reads its own row back; r1 re-reading would see r2's.
    expect(await claimRow(row({ group_id: 4, job_id: 'j', status: 'running', owner: 'r2' }), io('r2'))).toMatchObject({ owner: 'r2' })
    expect(await claimRow(row({ group_id: 4, job_id: 'j', status: 'running', owner: 'r3' }), { ...io('r3'), write: async () => undefined })).toBeNull()
  })
})

describe('leases and the heartbeat', () => {
  it('a heartbeat holds the lease for exactly leaseMs; never beating holds nothing', () => {
    expect(leaseHeld(1_000, 31_000, 30_000)).toBe(true)
    expect(leaseHeld(999, 31_000, 30_000)).toBe(false)
    expect(leaseHeld(null, 0, 30_000)).toBe(false)
    expect(() => checkHeartbeat(10_001, 30_000)).toThrow(/at most a third/)
    expect(() => checkHeartbeat(10_000, 30_000)).not.toThrow()
  })

  it('beats one at a time (a slow beat skips the next ones), survives a failing beat, and stop() waits for the beat in flight', async () => {
    let running = 0
    let maxRunning = 0
    let beats = 0
    const errors: unknown[] = []
    const hb = new Heartbeat(
      5,
      async () => {
        running++
        maxRunning = Math.max(maxRunning, running)
        beats++
        await sleep(beats === 1 ? 60 : 1)
        if (beats === 2) {
          running--
          throw new Error('store unavailable')
        }
        running--
      },
      (e) => errors.push(e),
    )
    await waitFor(async () => beats >= 4, { timeoutMs: 10_000, intervalMs: 5, what: 'four beats' })
    await hb.stop()
    const after = beats
    await sleep(30)
    expect(maxRunning).toBe(1)
    expect(errors.map((e) => (e as Error).message)).toEqual(['store unavailable'])
    expect(beats).toBe(after)
    expect(running).toBe(0)
  })
})

describe('the in-process cancel registry', () => {
  it('aborts a job of this replica with its reason, not one of another replica, and abortAll waits for an owner\'s jobs', async () => {
    const jobs = new LocalJobs()
    const ownerA = {}
    const ownerB = {}
    const body = (c: AbortController) =>
      new Promise<string>((resolve) => c.signal.addEventListener('abort', () => setTimeout(() => resolve(String((c.signal.reason as Error).message)), 20), { once: true }))
    const one = jobs.track('1', 'replica-a', ownerA, body)
    const two = jobs.track('2', 'replica-a', ownerA, body)
    const three = jobs.track('3', 'replica-b', ownerB, body)
    expect(await jobs.abort('3', 'replica-a', new Error('cancel'), 50)).toBe(false)
    expect(await jobs.abort('1', 'replica-a', new Error('cancel'), 5_000)).toBe(true)
    expect(await one).toBe('cancel')
    await jobs.abortAll(ownerA, new Error('shutdown'))
    expect(await two).toBe('shutdown')
    expect(await jobs.abort('2', 'replica-a', new Error('cancel'), 50)).toBe(false) // ended: no longer tracked
    await jobs.abortAll(ownerB, new Error('shutdown'))
    expect(await three).toBe('shutdown')
  })

  it('sleep ends early when its signal aborts', async () => {
    const c = new AbortController()
    const t0 = performance.now()
    const s = sleep(60_000, c.signal)
    c.abort()
    await s
    expect(performance.now() - t0).toBeLessThan(30_000)
  })
})

describe('schedule occurrences', () => {
  const H = 3_600_000
  const T0 = Date.UTC(2026, 0, 31, 3)

  it('the due occurrence is the latest one after the last run and at or before now: missed ones are skipped', () => {
    expect(latestDueOccurrence(T0, 'hourly', T0, T0 + H - 1)).toBeNull()
    expect(latestDueOccurrence(T0, 'hourly', T0, T0 + H)).toBe(T0 + H)
    expect(latestDueOccurrence(T0, 'hourly', T0, T0 + 5 * H + 10)).toBe(T0 + 5 * H)
    expect(latestDueOccurrence(T0, 'daily', T0 - 1, T0)).toBe(T0)
    // Monthly from the 31st clamps to the month's last day and comes back to the 31st.
    expect(new Date(latestDueOccurrence(T0, 'monthly', T0, Date.UTC(2026, 2, 1))!).toISOString()).toBe('2026-02-28T03:00:00.000Z')
    expect(new Date(latestDueOccurrence(T0, 'monthly', Date.UTC(2026, 1, 28, 3), Date.UTC(2026, 3, 15))!).toISOString()).toBe('2026-03-31T03:00:00.000Z')
    expect(nextOccurrenceAfter(T0, 'weekly', T0)).toBe(T0 + 7 * 24 * H)
  })
})
