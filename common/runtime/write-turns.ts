/**
 * What a write returns when its turn ends before its rows are stored: the promise of their storing.
 * The next turn starts at once (it may prepare its rows while these are inserted); the batches the
 * write holds settle with `stored`, so their offsets are committed only once it has.
 */
export interface Storing {
  stored: Promise<void>
}

interface Waiting<T> {
  items: T[]
  /** When it was submitted (performance.now()): Pairs.waitMs counts from there. */
  at: number
  resolve: () => void
  reject: (err: unknown) => void
}

/**
 * Batches better written together than apart (the feature consumer's: a customer's record and its
 * orders, on two topics, scored once instead of twice). A turn holds back a waiting batch while
 * `waits(items, waiting)` says one it should be written with is still on its way, writing the
 * others; while every waiting batch waits, it waits too (woken by WriteTurns.wake()). `waiting`:
 * the items of the batches that wait on past this turn, its own among them (not those written in
 * it, which `waits` may want to go with). No batch is held back longer than `waitMs` after it was
 * submitted. Only how batches are grouped into writes changes, never what a write does with them.
 */
export interface Pairs<T> {
  waits(items: T[], waiting: readonly T[][]): boolean
  waitMs: number
}

/**
 * Batches' writes in turn, the waiting ones together: a batch whose write must wait for the one in
 * flight joins the others waiting, and they are written as one (one insert per table, not one per
 * batch). Partitions are consumed concurrently (PARTITIONS_CONSUMED_CONCURRENTLY), so up to that
 * many small batches would otherwise each pay an insert's fixed cost, and ClickHouse would merge
 * the small parts they make later.
 *
 * Each batch's promise settles with the write that holds it, so its offsets are committed only
 * once its rows are stored; a failed write fails every batch in it (all are delivered again).
 */
export class WriteTurns<T> {
  private waiting: Waiting<T>[] = []
  private waitingItems = 0
  private chain: Promise<unknown> = Promise.resolve()
  /** Wakes a turn that waits to gather more items (gather). */
  private enough: (() => void) | null = null
  /** Wakes a turn that waits for the batches its waiting ones pair with (pairs). */
  private changed: (() => void) | null = null

  /**
   * @param write writes the items of one or more batches, in the order the batches arrived; it may
   *   end its turn before they are stored (Storing).
   * @param exclusive runs `fn` in turn with whatever else must not overlap a write (default: only
   *   the writes themselves).
   * @param gather a turn that finds fewer than `items` waiting waits up to `waitMs` for more
   *   before it writes (ClickHouse: fewer, larger inserts leave fewer parts to merge). `weigh`
   *   counts what an item stands for (one by default).
   * @param pairs batches that should be written with another still on its way: see Pairs.
   */
  constructor(
    private readonly write: (items: T[]) => Promise<void | Storing>,
    private readonly exclusive: (fn: () => Promise<void>) => Promise<void> = (fn) => this.inTurn(fn),
    private readonly gather: { items: number; waitMs: number; weigh?: (item: T) => number } | null = null,
    private readonly pairs: Pairs<T> | null = null,
  ) {}

  /** Resolves once a write holding `items` has succeeded. */
  submit(items: T[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ items, at: performance.now(), resolve, reject })
      this.waitingItems += this.weight(items)
      if (this.enough && this.gather && this.waitingItems >= this.gather.items) this.enough()
      this.wake()
      void this.exclusive(() => this.turn())
    })
  }

  /** A batch that `pairs.waits` for may have come or gone: a turn waiting on it looks again. */
  wake(): void {
    this.changed?.()
  }

  private async turn(): Promise<void> {
    if (this.gather && this.waiting.length && this.waitingItems < this.gather.items) await this.gathered(this.gather.waitMs)
    let group: Waiting<T>[]
    if (this.pairs && this.waiting.length) {
      const held = await this.paired(this.pairs)
      group = this.waiting.filter((g) => !held.has(g))
      this.waiting = this.waiting.filter((g) => held.has(g))
      // The batches held back get a turn of their own, should nothing else come to give them one.
      if (this.waiting.length) void this.exclusive(() => this.turn())
    } else group = this.waiting.splice(0)
    this.waitingItems = 0
    for (const g of this.waiting) this.waitingItems += this.weight(g.items)
    if (!group.length) return // an earlier turn wrote this batch with its own
    try {
      const storing = await this.write(group.length === 1 ? group[0]!.items : group.flatMap((g) => g.items))
      if (storing) {
        storing.stored.then(
          () => group.forEach((g) => g.resolve()),
          (err: unknown) => group.forEach((g) => g.reject(err)),
        )
        return
      }
      for (const g of group) g.resolve()
    } catch (err) {
      for (const g of group) g.reject(err)
    }
  }

  private weight(items: T[]): number {
    const weigh = this.gather?.weigh
    if (!weigh) return items.length
    let n = 0
    for (const item of items) n += weigh(item)
    return n
  }

  /**
   * The waiting batches to hold back from this turn's write: those whose pair is still on its way
   * and that have waited less than `pairs.waitMs` since they were submitted. While every waiting
   * batch is held, the turn waits (woken by wake()) until one is not. A turn of the event loop
   * first, for a batch whose handler has just finished to be submitted.
   */
  private async paired(pairs: Pairs<T>): Promise<Set<Waiting<T>>> {
    for (;;) {
      await new Promise<void>((resolve) => setImmediate(resolve))
      const now = performance.now()
      // The batches that wait on: those still within waitMs whose `waits` says so given the others
      // that wait on, until no more goes (a batch waiting with one that goes in this turn goes too).
      let held = new Set(this.waiting.filter((g) => now - g.at < pairs.waitMs))
      for (;;) {
        const staying = [...held].map((g) => g.items)
        const next = new Set([...held].filter((g) => pairs.waits(g.items, staying)))
        if (next.size === held.size) break
        held = next
      }
      if (held.size < this.waiting.length) return held
      let left = Infinity
      for (const g of held) left = Math.min(left, g.at + pairs.waitMs - now)
      await wakeableWait(Math.max(1, left), (wake) => (this.changed = wake))
    }
  }

  /** Resolves once enough items wait, or after `ms`. */
  private gathered(ms: number): Promise<void> {
    return wakeableWait(ms, (wake) => (this.enough = wake))
  }

  private inTurn(fn: () => Promise<void>): Promise<void> {
    const run = this.chain.then(fn, fn)
    this.chain = run.catch(() => {})
    return run
  }
}

/** Resolves after `ms`, or as soon as the function it hands to `keep` is called (then `keep(null)`). */
function wakeableWait(ms: number, keep: (wake: (() => void) | null) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer)
      keep(null)
      resolve()
    }
    const timer = setTimeout(done, ms)
    keep(done)
  })
}
