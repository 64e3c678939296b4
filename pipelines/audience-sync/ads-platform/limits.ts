/**
 * Client-side hourly limits per token and operation (spec "Limits"): the client refuses a call
 * that would exceed them instead of earning an 80004. A sliding window over call timestamps
 * (common/rate-limit.ts's `slidingWindow` and `RateLimiter`); the timestamps live in a pluggable
 * LimitStore so a restart remembers them and cannot burst past the limit.
 *
 * A call is counted when it is taken, before the request goes out: a crash after the request
 * cannot forget it.
 */
import fs from 'node:fs/promises'
import path from 'node:path'
import { sha256Hex } from './hashing.ts'
import { RateLimiter, callsInWindow, decideSliding, slidingWindow, type RateDecision, type RateLimitStore } from '../../../common/rate-limit.ts'

export const LIMITED_OPERATIONS = ['create_audience', 'upload_users', 'read_audience'] as const
/** create_audience = endpoint 4; upload_users = endpoint 6 (and the removal DELETE); read_audience = endpoint 5. */
export type LimitedOperation = (typeof LIMITED_OPERATIONS)[number]

export const HOURLY_LIMITS: Readonly<Record<LimitedOperation, number>> = Object.freeze({
  create_audience: 25,
  upload_users: 200,
  read_audience: 200,
})

export const LIMIT_WINDOW_MS = 3_600_000

/** Where the call timestamps (epoch ms) of each budget key are kept (none: an empty list). */
export interface LimitStore extends RateLimitStore<number[]> {
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
  return callsInWindow(timestamps, now, windowMs)
}

/** Whether one more call fits, given the window's timestamps (ascending, already pruned). */
export function decide(inWindow: readonly number[], limit: number, windowMs: number = LIMIT_WINDOW_MS): BudgetDecision {
  return budgetDecision(decideSliding(inWindow, { limit, windowMs }))
}

const budgetDecision = ({ allowed, used, limit, remaining, retryAt }: RateDecision): BudgetDecision => ({ allowed, used, limit, remaining, retryAt })

export interface HourlyBudgetOptions {
  store: LimitStore
  /** Overrides of HOURLY_LIMITS. */
  limits?: Partial<Record<LimitedOperation, number>>
  windowMs?: number
  now?: () => number
}

export class HourlyBudget {
  private readonly limits: Record<LimitedOperation, number>
  private readonly windowMs: number
  private readonly limiter: RateLimiter<number[]>

  constructor(opts: HourlyBudgetOptions) {
    this.limits = { ...HOURLY_LIMITS, ...opts.limits }
    this.windowMs = opts.windowMs ?? LIMIT_WINDOW_MS
    this.limiter = new RateLimiter({ algorithm: slidingWindow, store: opts.store, now: opts.now })
  }

  /** The store key: operation and a digest of the token, so no token is ever persisted. */
  static keyFor(token: string, operation: LimitedOperation): string {
    return `${operation}:${sha256Hex(token).slice(0, 32)}`
  }

  limitOf(operation: LimitedOperation): number {
    return this.limits[operation]
  }

  /** Whether a call would be allowed now, without counting one. */
  async peek(token: string, operation: LimitedOperation): Promise<BudgetDecision> {
    return budgetDecision(await this.limiter.peek(HourlyBudget.keyFor(token, operation), this.ruleOf(operation)))
  }

  /** Counts one call when it fits (and persists it before returning); refuses otherwise. */
  async take(token: string, operation: LimitedOperation): Promise<BudgetDecision> {
    return budgetDecision(await this.limiter.take(HourlyBudget.keyFor(token, operation), this.ruleOf(operation)))
  }

  private ruleOf(operation: LimitedOperation) {
    return { limit: this.limits[operation], windowMs: this.windowMs }
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
