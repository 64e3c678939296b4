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
  private chain: Promise<unknown> = Promise.resolve()

  /**
   * @param write writes the items of one or more batches, in the order the batches arrived.
   * @param exclusive runs `fn` in turn with whatever else must not overlap a write (default: only
   *   the writes themselves).
   */
  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly exclusive: (fn: () => Promise<void>) => Promise<void> = (fn) => this.inTurn(fn),
  ) {}

  /** Resolves once a write holding `items` has succeeded. */
  submit(items: T[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ items, resolve, reject })
      void this.exclusive(async () => {
        const group = this.waiting.splice(0)
        if (!group.length) return // an earlier turn wrote this batch with its own
        try {
          await this.write(group.length === 1 ? group[0]!.items : group.flatMap((g) => g.items))
          for (const g of group) g.resolve()
        } catch (err) {
          for (const g of group) g.reject(err)
        }
      })
    })
  }

  private inTurn(fn: () => Promise<void>): Promise<void> {
    const run = this.chain.then(fn, fn)
    this.chain = run.catch(() => {})
    return run
  }
}
