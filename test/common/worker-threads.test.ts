/**
 * How worker threads start: a worker entry's bundle (common/runtime/worker-bundle.ts) is used only
 * while built from the sources as they are, and a thread runs from it; a decode thread says when it
 * has loaded (DecodeThread.whenReady), gives up on one that cannot load or is slow, and does not
 * start another for a while after one failed to load.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { afterAll, describe, expect, it } from 'vitest'
import { hash53 } from '../../common/hash53.ts'
import { DecodeThread } from '../../common/runtime/decode-thread.ts'
import { takeNext, type DecodeJob } from '../../common/runtime/decode-thread-worker.ts'
import type { LogRecord } from '../../common/eventlog/port.ts'
import type { SchemaRegistryPort } from '../../common/eventlog/schema-registry.ts'
import { buildWorkerBundle, workerBundle } from '../../common/runtime/worker-bundle.ts'
import { InputsThread } from '../../pipelines/features/input-thread.ts'

const entry = new URL('./fixtures/bundled-worker.ts', import.meta.url)
const dirs: string[] = []
const cacheDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'cdp-bundles-'))
  dirs.push(d)
  return d
}
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
})

async function answerOf(url: URL): Promise<unknown> {
  const w = new Worker(url)
  try {
    return await new Promise((resolve, reject) => w.once('message', resolve).once('error', reject))
  } finally {
    await w.terminate()
  }
}

describe('worker bundles', () => {
  it('are built once asked for, used while their sources are unchanged, and built again after a change', async () => {
    const dir = cacheDir()
    expect(workerBundle(entry, dir)).toBeNull() // none yet: a build starts
    const built = await buildWorkerBundle(entry, dir)
    expect(built).not.toBeNull()
    expect(workerBundle(entry, dir)?.href).toBe(built!.href)
    // The bundle holds the project module it imports, and runs as the entry does.
    expect(await answerOf(built!)).toEqual({ hash: hash53('a') })
    const manifest = JSON.parse(fs.readFileSync(fs.readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => path.join(dir, f))[0]!, 'utf8')) as { sources: [string, number, number][] }
    expect(manifest.sources.map(([f]) => path.relative(process.cwd(), f)).sort()).toEqual(['common/hash53.ts', 'test/common/fixtures/bundled-worker.ts'])

    // A source touched since: not used (the tsx entry is), and built again.
    const src = manifest.sources.find(([f]) => f.endsWith('hash53.ts'))![0]
    const { atime, mtime } = fs.statSync(src)
    try {
      fs.utimesSync(src, atime, new Date(mtime.getTime() - 10_000))
      expect(workerBundle(entry, dir)).toBeNull()
      await buildWorkerBundle(entry, dir)
      expect(workerBundle(entry, dir)).not.toBeNull()
    } finally {
      fs.utimesSync(src, atime, mtime)
    }
  })

  it('are not used with CDP_WORKER_BUNDLES=0, and an entry that cannot be built gives none', async () => {
    const dir = cacheDir()
    await buildWorkerBundle(entry, dir)
    const before = process.env.CDP_WORKER_BUNDLES
    process.env.CDP_WORKER_BUNDLES = '0'
    try {
      expect(workerBundle(entry, dir)).toBeNull()
    } finally {
      if (before === undefined) delete process.env.CDP_WORKER_BUNDLES
      else process.env.CDP_WORKER_BUNDLES = before
    }
    const broken = path.join(cacheDir(), 'broken.ts')
    fs.writeFileSync(broken, 'export const x = (\n')
    expect(await buildWorkerBundle(new URL(`file://${broken}`), dir)).toBeNull()
  })
})

class FixtureThread<Setup = unknown, Reply extends { id: number } = { id: number }> extends DecodeThread<Setup, Reply> {
  constructor(name: string) {
    super(new URL(`./fixtures/${name}`, import.meta.url), name)
  }
}

describe('DecodeThread.whenReady', () => {
  it('is true once a decode thread has loaded, also after it was closed', async () => {
    const thread = new InputsThread()
    try {
      expect(thread.ready).toBe(false)
      expect(await thread.whenReady(30_000)).toBe(true)
      expect(thread.ready).toBe(true)
      await thread.close()
      expect(thread.ready).toBe(false)
      expect(await thread.whenReady(30_000)).toBe(true)
    } finally {
      await thread.close()
    }
  })

  it('is false for a thread that does not say it is ready in time', async () => {
    const thread = new FixtureThread('slow-worker.mjs')
    try {
      expect(await thread.whenReady(300)).toBe(false)
      expect(thread.ready).toBe(false)
      // The same thread keeps no second caller waiting.
      const at = performance.now()
      expect(await thread.whenReady(30_000)).toBe(false)
      expect(performance.now() - at).toBeLessThan(10_000)
    } finally {
      await thread.close()
    }
  })

  it('is false for a thread that cannot load, and no other is started for a while after it', async () => {
    const thread = new FixtureThread('failing-worker.mjs')
    try {
      expect(await thread.whenReady(30_000)).toBe(false)
      // The failed thread's exit is seen; within RESPAWN_AFTER_MS none is started again.
      await new Promise((r) => setTimeout(r, 100))
      expect(await thread.whenReady(30_000)).toBe(false)
      expect((thread as unknown as { worker: unknown }).worker).toBeNull()
    } finally {
      await thread.close()
    }
  })
})

describe('the order a decode thread takes its jobs in', () => {
  const record = (schemaId?: number): LogRecord[] => [
    { topic: 't', partition: 0, offset: '0', key: null, value: schemaId === undefined ? Buffer.from('x') : Buffer.from([0, 0, 0, 0, schemaId, 1]), headers: {}, timestamp: 0 },
  ]
  const registry = { knownSchema: (id: number) => `schema ${id}` } as unknown as SchemaRegistryPort

  it('is the order jobs are sent in, but a job of a group comes right behind the jobs of its group still waiting, with the schemas sent before it', async () => {
    const thread = new FixtureThread<string, { id: number; setup: string | null; schemas: number[] }>('ordered-worker.mjs')
    try {
      expect(await thread.whenReady(30_000)).toBe(true)
      const done: string[] = []
      const job = (name: string, records: LogRecord[], group?: number) =>
        thread.run(records, registry, 'the setup', 0, group).then((r) => {
          done.push(name)
          return r
        })
      const jobs = [job('a, group 0', record(), 0), job('b', record(7)), job('c', record()), job('d, group 0', record(), 0), job('e, group 1', record(), 1), job('f, group 1', record(), 1)]
      const replies = await Promise.all(jobs)
      expect(done).toEqual(['a, group 0', 'd, group 0', 'b', 'c', 'e, group 1', 'f, group 1'])
      // d is decoded before b, with b's schema and the first job's setup.
      expect(replies[3]).toMatchObject({ setup: 'the setup', schemas: [7] })
      expect(replies.map((r) => r.setup)).toEqual(Array(6).fill('the setup'))

      // Once a group's jobs are answered, its next job waits its turn like any other.
      done.length = 0
      await Promise.all([job('g', record()), job('h, group 0', record(), 0)])
      expect(done).toEqual(['g', 'h, group 0'])

      // A group that always has a job pending moves up only behind its oldest pending job: l, sent
      // once i is answered (and k, behind i, is being decoded), comes after j, sent before k.
      done.length = 0
      const i = job('i, group 2', record(), 2)
      const rest = [job('j', record()), job('k, group 2', record(), 2)]
      await i
      await Promise.all([...rest, job('l, group 2', record(), 2)])
      expect(done).toEqual(['i, group 2', 'k, group 2', 'j', 'l, group 2'])
    } finally {
      await thread.close()
    }
  })

  it('takeNext: the lowest (after, id), carrying the setup and schemas of the jobs that came before it', () => {
    const job = (id: number, after?: number, extra: Partial<DecodeJob<string>> = {}): DecodeJob<string> => ({ id, after, topic: 't', values: new Uint8Array(0), ends: new Int32Array(0), schemas: [], setup: null, now: 0, ...extra })
    const waiting = [job(3, undefined, { setup: 'S', schemas: [[1, 'one']] }), job(4, 4, { schemas: [[2, 'two']] }), job(5, 2), job(6, 2)]
    const first = takeNext(waiting)!
    expect(first).toMatchObject({ id: 5, setup: 'S', schemas: [[1, 'one'], [2, 'two']] })
    expect(waiting.map((j) => [j.id, j.setup, j.schemas.length])).toEqual([[3, null, 0], [4, null, 0], [6, null, 0]])
    expect([takeNext(waiting)!.id, takeNext(waiting)!.id, takeNext(waiting)!.id, takeNext(waiting)]).toEqual([6, 3, 4, undefined])
  })
})
