/**
 * Client-side hourly limits per token and operation (spec "Limits"): the client refuses a call
 * that would exceed them instead of earning an 80004. A sliding window over call timestamps; the
 * timestamps live in a pluggable LimitStore so a restart remembers them and cannot burst past the
 * limit. The decision functions are pure; HourlyBudget only adds the store and the clock.
 *
 * A call is counted when it is taken, before the request goes out: a crash after the request
 * cannot forget it.
 */
import fs from 'node:fs/promises'
import path from 'node:path'
import { sha256Hex } from './hashing.ts'

export const LIMITED_OPERATIONS = ['create_audience', 'upload_users', 'read_audience'] as const
/** create_audience = endpoint 4; upload_users = endpoint 6 (and the removal DELETE); read_audience = endpoint 5. */
export type LimitedOperation = (typeof LIMITED_OPERATIONS)[number]

export const HOURLY_LIMITS: Readonly<Record<LimitedOperation, number>> = Object.freeze({
  create_audience: 25,
  upload_users: 200,
  read_audience: 200,
})

export const LIMIT_WINDOW_MS = 3_600_000

/** Where the call timestamps (epoch ms) of each budget key are kept. */
export interface LimitStore {
  load(key: string): Promise<number[]>
  save(key: string, timestamps: number[]): Promise<void>
}

export interface BudgetDecision {
  allowed: boolean
  /** Calls counted in the window (after this one, when it was taken). */
  used: number
  limit: number
  remaining: number
  /** When refused: the epoch ms at which a call fits again. Null when allowed. */
  retryAt: number | null
}

/** The timestamps still inside the window ending at `now` (ascending). */
export function pruneWindow(timestamps: readonly number[], now: number, windowMs: number = LIMIT_WINDOW_MS): number[] {
  return timestamps.filter((t) => t > now - windowMs).sort((a, b) => a - b)
}

/** Whether one more call fits, given the window's timestamps (ascending, already pruned). */
export function decide(inWindow: readonly number[], limit: number, windowMs: number = LIMIT_WINDOW_MS): BudgetDecision {
  const used = inWindow.length
  if (used < limit) return { allowed: true, used, limit, remaining: limit - used, retryAt: null }
  // The call fits once all but limit−1 of the counted calls have left the window.
  const retryAt = limit <= 0 ? Number.POSITIVE_INFINITY : inWindow[used - limit]! + windowMs
  return { allowed: false, used, limit, remaining: 0, retryAt }
}

export interface HourlyBudgetOptions {
  store: LimitStore
  /** Overrides of HOURLY_LIMITS. */
  limits?: Partial<Record<LimitedOperation, number>>
  windowMs?: number
  now?: () => number
}

export class HourlyBudget {
  private readonly store: LimitStore
  private readonly limits: Record<LimitedOperation, number>
  private readonly windowMs: number
  private readonly now: () => number
  /** Per key, the tail of the in-process queue: load-decide-save runs one at a time per key. */
  private readonly queues = new Map<string, Promise<unknown>>()

  constructor(opts: HourlyBudgetOptions) {
    this.store = opts.store
    this.limits = { ...HOURLY_LIMITS, ...opts.limits }
    this.windowMs = opts.windowMs ?? LIMIT_WINDOW_MS
    this.now = opts.now ?? Date.now
  }

  /** The store key: operation and a digest of the token, so no token is ever persisted. */
  static keyFor(token: string, operation: LimitedOperation): string {
    return `${operation}:${sha256Hex(token).slice(0, 32)}`
  }

  limitOf(operation: LimitedOperation): number {
    return this.limits[operation]
  }

  /** Whether a call would be allowed now, without counting one. */
  peek(token: string, operation: LimitedOperation): Promise<BudgetDecision> {
    const key = HourlyBudget.keyFor(token, operation)
    return this.serial(key, async () => decide(pruneWindow(await this.store.load(key), this.now(), this.windowMs), this.limits[operation], this.windowMs))
  }

  /** Counts one call when it fits (and persists it before returning); refuses otherwise. */
  take(token: string, operation: LimitedOperation): Promise<BudgetDecision> {
    const key = HourlyBudget.keyFor(token, operation)
    return this.serial(key, async () => {
      const now = this.now()
      const inWindow = pruneWindow(await this.store.load(key), now, this.windowMs)
      const decision = decide(inWindow, this.limits[operation], this.windowMs)
      if (!decision.allowed) return decision
      inWindow.push(now)
      await this.store.save(key, inWindow)
      return { ...decision, used: decision.used + 1, remaining: decision.remaining - 1 }
    })
  }

  private serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.queues.get(key) ?? Promise.resolve()).then(fn, fn)
    const tail = run.catch(() => undefined)
    this.queues.set(key, tail)
    void tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key)
    })
    return run
  }
}

/** For tests: timestamps in a Map (copied in and out, like a real store). */
export class MemoryLimitStore implements LimitStore {
  private readonly data = new Map<string, number[]>()

  async load(key: string): Promise<number[]> {
    return [...(this.data.get(key) ?? [])]
  }

  async save(key: string, timestamps: number[]): Promise<void> {
    if (timestamps.length) this.data.set(key, [...timestamps])
    else this.data.delete(key)
  }
}

/**
 * For development: one JSON file `{ key: [timestamps] }`, rewritten whole through a temporary
 * file and a rename, so a crash leaves the old or the new version. One writing process per file.
 */
export class FileLimitStore implements LimitStore {
  private chain: Promise<unknown> = Promise.resolve()

  constructor(readonly file: string) {}

  async load(key: string): Promise<number[]> {
    const all = await this.readAll()
    return [...(all[key] ?? [])]
  }

  save(key: string, timestamps: number[]): Promise<void> {
    const write = async () => {
      const all = await this.readAll()
      if (timestamps.length) all[key] = [...timestamps]
      else delete all[key]
      await fs.mkdir(path.dirname(this.file), { recursive: true })
      const tmp = `${this.file}.${process.pid}.tmp`
      await fs.writeFile(tmp, JSON.stringify(all))
      await fs.rename(tmp, this.file)
    }
    const run = this.chain.then(write, write)
    this.chain = run.catch(() => undefined)
    return run
  }

  private async readAll(): Promise<Record<string, number[]>> {
    let text: string
    try {
      text = await fs.readFile(this.file, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {}
      throw err
    }
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`${this.file}: not a limit store (expected a JSON object)`)
    const out: Record<string, number[]> = {}
    for (const [k, v] of Object.entries(parsed)) if (Array.isArray(v)) out[k] = v.filter((t): t is number => typeof t === 'number')
    return out
  }
}
