/**
 * What a write returns when its turn ends before its rows are stored: the promise of their storing.
 * The next turn starts at once (it may prepare its rows while these are inserted); the batches the
 * write holds settle with `stored`, so their offsets are committed only once it has.
 */
export interface Storing {
  stored: Promise<void>
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
  private waiting: { items: T[]; resolve: () => void; reject: (err: unknown) => void }[] = []
  private waitingItems = 0
  private chain: Promise<unknown> = Promise.resolve()
  /** Wakes a turn that waits to gather more items (gather). */
  private enough: (() => void) | null = null

  /**
   * @param write writes the items of one or more batches, in the order the batches arrived; it may
   *   end its turn before they are stored (Storing).
   * @param exclusive runs `fn` in turn with whatever else must not overlap a write (default: only
   *   the writes themselves).
   * @param gather a turn that finds fewer than `items` waiting waits up to `waitMs` for more
   *   before it writes (ClickHouse: fewer, larger inserts leave fewer parts to merge). `weigh`
   *   counts what an item stands for (one by default).
   */
  constructor(
    private readonly write: (items: T[]) => Promise<void | Storing>,
    private readonly exclusive: (fn: () => Promise<void>) => Promise<void> = (fn) => this.inTurn(fn),
    private readonly gather: { items: number; waitMs: number; weigh?: (item: T) => number } | null = null,
  ) {}

  /** Resolves once a write holding `items` has succeeded. */
  submit(items: T[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ items, resolve, reject })
      const weigh = this.gather?.weigh
      if (weigh) for (const item of items) this.waitingItems += weigh(item)
      else this.waitingItems += items.length
      if (this.enough && this.gather && this.waitingItems >= this.gather.items) this.enough()
      void this.exclusive(async () => {
        if (this.gather && this.waiting.length && this.waitingItems < this.gather.items) await this.gathered(this.gather.waitMs)
        const group = this.waiting.splice(0)
        this.waitingItems = 0
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
      })
    })
  }

  /** Resolves once enough items wait, or after `ms`. */
  private gathered(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.enough = null
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.enough = done
    })
  }

  private inTurn(fn: () => Promise<void>): Promise<void> {
    const run = this.chain.then(fn, fn)
    this.chain = run.catch(() => {})
    return run
  }
}
