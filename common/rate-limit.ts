/**
 * Rate limits: at most `limit` calls per key in `windowMs`. The project's one primitive for them,
 * in three layers:
 *
 * - the algorithms, pure functions of a key's window state and the clock (`fixedWindow`,
 *   `slidingWindow`, `step`);
 * - where the states live: in this process (`MemoryRateLimiter`, synchronous: an LRU map of at
 *   most `maxKeys` windows; the least recently used key is forgotten first when it is full) or in
 *   a `RateLimitStore` (`RateLimiter`, asynchronous: a file, ClickHouse, so a restart remembers;
 *   load–decide–save runs one at a time per key within the process);
 * - Retry-After, both ways (`retryAfterSeconds`, `parseRetryAfter`).
 *
 * The algorithms:
 * - fixed window: a counter per window, which starts with its first call; one number per key, but
 *   up to twice the limit can pass across a window boundary;
 * - sliding window: the timestamps of the calls in the last `windowMs`; exact, one timestamp per
 *   call.
 *
 * A refused call is not counted. Used by the API's limits (services/api/rate-limit.ts, fixed, in
 * memory), the ads platform client's hourly budgets (pipelines/audience-sync/ads-platform/
 * limits.ts, sliding, in a store) and the simulators' per-caller limits (sliding, in memory); the
 * connectors' HTTP client reads the Retry-After of the platforms' limits with `parseRetryAfter`.
 */
import { lruCache } from './lru.ts'

export interface RateRule {
  /** Calls allowed per window. */
  limit: number
  windowMs: number
}

export interface RateDecision {
  allowed: boolean
  limit: number
  /** Calls counted in the window (this one included when it was taken). */
  used: number
  remaining: number
  /**
   * Epoch ms at which the window frees room: a fixed window's end, or when a sliding window's
   * oldest call leaves it. Null: nothing is counted.
   */
  resetAt: number | null
  /** When refused: the epoch ms from which the call fits (Infinity with a limit of 0). Null when allowed. */
  retryAt: number | null
}

/** An algorithm over `S`, a key's window state (undefined: nothing counted). Every function is pure. */
export interface WindowAlgorithm<S> {
  /** What of `state` still counts at `now`. */
  current(state: S | undefined, rule: RateRule, now: number): S | undefined
  /** Whether one more call fits at `now` (`state` current). */
  decide(state: S | undefined, rule: RateRule, now: number): RateDecision
  /** `state` (current) with one more call at `now`: a new value. */
  count(state: S | undefined, rule: RateRule, now: number): S
}

export interface FixedWindowState {
  /** Epoch ms of the window's first call. */
  start: number
  count: number
}

export const fixedWindow: WindowAlgorithm<FixedWindowState> = {
  current: (s, rule, now) => (s && now - s.start < rule.windowMs ? s : undefined),
  decide(s, rule, now) {
    const count = s?.count ?? 0
    const resetAt = (s?.start ?? now) + rule.windowMs
    const allowed = count < rule.limit
    return { allowed, limit: rule.limit, used: count, remaining: Math.max(0, rule.limit - count), resetAt, retryAt: allowed ? null : resetAt }
  },
  count: (s, _rule, now) => ({ start: s?.start ?? now, count: (s?.count ?? 0) + 1 }),
}

/** The timestamps still inside the window ending at `now`, ascending. */
export function callsInWindow(timestamps: readonly number[], now: number, windowMs: number): number[] {
  return timestamps.filter((t) => t > now - windowMs).sort((a, b) => a - b)
}

/** Whether one more call fits, given the window's timestamps (ascending, already pruned). */
export function decideSliding(inWindow: readonly number[], rule: RateRule): RateDecision {
  const { limit, windowMs } = rule
  const used = inWindow.length
  const resetAt = used ? inWindow[0]! + windowMs : null
  if (used < limit) return { allowed: true, limit, used, remaining: limit - used, resetAt, retryAt: null }
  // The call fits once all but limit−1 of the counted calls have left the window.
  const retryAt = limit <= 0 ? Number.POSITIVE_INFINITY : inWindow[used - limit]! + windowMs
  return { allowed: false, limit, used, remaining: 0, resetAt, retryAt }
}

/** The state is the ascending epoch ms of the calls in the window. */
export const slidingWindow: WindowAlgorithm<number[]> = {
  current(s, rule, now) {
    const inWindow = callsInWindow(s ?? [], now, rule.windowMs)
    return inWindow.length ? inWindow : undefined
  },
  decide: (s, rule) => decideSliding(s ?? [], rule),
  count: (s, _rule, now) => [...(s ?? []), now],
}

export interface Step<S> {
  decision: RateDecision
  /** The state to keep: `state` made current, with the call when it was counted. */
  state: S | undefined
  counted: boolean
}

/**
 * One call against a key's window: the decision and, when `take` and the call fits, the state
 * with it counted (the decision then describes the window with the call in it).
 */
export function step<S>(algorithm: WindowAlgorithm<S>, state: S | undefined, rule: RateRule, now: number, take: boolean): Step<S> {
  const current = algorithm.current(state, rule, now)
  const decision = algorithm.decide(current, rule, now)
  if (!take || !decision.allowed) return { decision, state: current, counted: false }
  const next = algorithm.count(current, rule, now)
  const after = algorithm.decide(next, rule, now)
  return { decision: { ...decision, used: decision.used + 1, remaining: decision.remaining - 1, resetAt: after.resetAt }, state: next, counted: true }
}

export interface MemoryRateLimiterOptions<S> {
  algorithm: WindowAlgorithm<S>
  /** Windows kept; past it the least recently used key's is forgotten (that key starts afresh). Default 100,000. */
  maxKeys?: number
  now?: () => number
}

/** Windows in this process, synchronously (an API replica's counters, a simulator's). */
export class MemoryRateLimiter<S extends {}> {
  private readonly windows
  private readonly algorithm: WindowAlgorithm<S>
  private readonly now: () => number

  constructor(o: MemoryRateLimiterOptions<S>) {
    this.algorithm = o.algorithm
    this.now = o.now ?? Date.now
    this.windows = lruCache<string, S>({ max: o.maxKeys ?? 100_000 })
  }

  /** Counts one call of `key` when it fits; refuses it otherwise. `now` defaults to the limiter's clock. */
  take(key: string, rule: RateRule, now: number = this.now()): RateDecision {
    return this.run(key, rule, now, true)
  }

  /** Whether a call would fit, without counting one. */
  peek(key: string, rule: RateRule, now: number = this.now()): RateDecision {
    return this.run(key, rule, now, false)
  }

  clear(): void {
    this.windows.clear()
  }

  private run(key: string, rule: RateRule, now: number, take: boolean): RateDecision {
    const r = step(this.algorithm, this.windows.get(key), rule, now, take)
    if (r.state === undefined) this.windows.delete(key)
    else this.windows.set(key, r.state)
    return r.decision
  }
}

/** Where a RateLimiter keeps each key's window state. */
export interface RateLimitStore<S> {
  load(key: string): Promise<S | undefined>
  save(key: string, state: S): Promise<void>
}

/** For tests and single processes: states in a Map, copied in and out like a real store's. */
export class MemoryRateLimitStore<S> implements RateLimitStore<S> {
  private readonly data = new Map<string, S>()

  async load(key: string): Promise<S | undefined> {
    const s = this.data.get(key)
    return s === undefined ? undefined : structuredClone(s)
  }

  async save(key: string, state: S): Promise<void> {
    this.data.set(key, structuredClone(state))
  }
}

export interface RateLimiterOptions<S> {
  algorithm: WindowAlgorithm<S>
  store: RateLimitStore<S>
  now?: () => number
}

/**
 * Windows in a store. A call is counted and saved before `take` resolves: a caller that takes
 * before it acts cannot forget a call by crashing. Across processes, give each key one writer or
 * make the store's `save` conditional.
 */
export class RateLimiter<S> {
  private readonly o: Required<RateLimiterOptions<S>>
  /** Per key, the tail of the in-process queue: load–decide–save runs one at a time per key. */
  private readonly queues = new Map<string, Promise<unknown>>()

  constructor(o: RateLimiterOptions<S>) {
    this.o = { now: Date.now, ...o }
  }

  take(key: string, rule: RateRule): Promise<RateDecision> {
    return this.serial(key, async () => {
      const r = step(this.o.algorithm, await this.o.store.load(key), rule, this.o.now(), true)
      if (r.counted) await this.o.store.save(key, r.state!)
      return r.decision
    })
  }

  peek(key: string, rule: RateRule): Promise<RateDecision> {
    return this.serial(key, async () => step(this.o.algorithm, await this.o.store.load(key), rule, this.o.now(), false).decision)
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

/** A wait as a Retry-After header's whole seconds: rounded up, at least 1. */
export const retryAfterSeconds = (waitMs: number): number => Math.max(1, Math.ceil(waitMs / 1000))

/** A Retry-After header's wait in whole seconds (delta-seconds or an HTTP date); null when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | null {
  if (!value) return null
  const n = Number(value)
  if (Number.isFinite(n) && n >= 0) return Math.ceil(n)
  const at = Date.parse(value)
  return Number.isFinite(at) ? Math.max(0, Math.ceil((at - now) / 1000)) : null
}
