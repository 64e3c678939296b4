/**
 * One partition's batches when a consumer lets several be handled at once (ConsumeOptions.inFlight
 * above 1), for both log adapters. Batches are handed in offset order, and a batch's offsets are
 * committed once it and every batch handed before it were handled: commits stay in order, so a
 * consumer that dies leaves nothing uncommitted behind a committed offset.
 *
 * A batch whose handler throws rewinds the partition to its first offset: neither it nor any batch
 * handed after it is committed, and the log delivers them again from there (after a pause that
 * grows with each failure in a row).
 */
export interface FlowIo {
  /** Commits the partition's offset: `next` is the offset of the first record not yet handled. */
  commit(next: string): Promise<void>
  /** Has the log read the partition again from `offset`. */
  rewind(offset: string): void
  /** A handler failed (before its rewind). */
  onError(err: unknown): void
  /** A commit failed: the batch stays handled, and a later commit of the partition covers it. */
  onCommitError(err: unknown): void
}

/** Pause before a partition's batches are handed again after `failures` failed batches in a row. */
export function retryPauseMs(failures: number): number {
  return failures === 0 ? 0 : Math.min(5000, 100 * 2 ** Math.min(failures, 6))
}

export class PartitionFlow {
  /** Batches handed whose handling and commit (or drop) have not ended; each settles, never rejects. */
  private readonly handling: Promise<void>[] = []
  /** The commits in hand order: each batch's waits for the one before. */
  private chain: Promise<void> = Promise.resolve()
  /** Moves on at a rewind and at a new assignment: batches handed before it are never committed. */
  private epoch = 0
  private failures = 0

  constructor(
    private readonly max: number,
    private readonly io: FlowIo,
  ) {
    if (!(Number.isSafeInteger(max) && max > 0)) throw new Error(`inFlight must be a positive integer, got ${max}`)
  }

  /** Resolves once fewer than the limit are in flight, after the pause that follows a failure. */
  async room(): Promise<void> {
    while (this.handling.length >= this.max) await this.handling[0]
    const pause = retryPauseMs(this.failures)
    if (pause) await new Promise((resolve) => setTimeout(resolve, pause))
  }

  /**
   * Hands the batch of offsets first..last: `handle` starts its handling now, and its offsets are
   * committed once it and every batch handed before it succeeded. The log must not hand a batch
   * it read before a rewind (the Kafka adapter: kafkajs' isStale; the embedded log: its position).
   */
  hand(firstOffset: string, lastOffset: string, handle: () => Promise<void>): void {
    const epoch = this.epoch
    let handled: Promise<void>
    try {
      handled = handle()
    } catch (err) {
      handled = Promise.reject(err)
    }
    handled.catch(() => {})
    const done = this.chain.then(async () => {
      // Awaited even when the batch is dropped: a batch counts as in flight (room, drain) until
      // its handler ends, so a redelivered copy never runs beside more than the limit allows.
      let failed = false
      let error: unknown
      try {
        await handled
      } catch (err) {
        failed = true
        error = err
      }
      if (epoch !== this.epoch) return // an earlier batch failed, or the partition was assigned anew
      if (failed) {
        this.epoch++
        this.failures++
        try {
          this.io.onError(error)
          this.io.rewind(firstOffset)
        } catch {
          // The log could not seek (a consumer restarting): it reads from the committed offsets
          // anyway, as after a new assignment; nothing after this batch was committed.
        }
        return
      }
      this.failures = 0
      try {
        await this.io.commit(String(BigInt(lastOffset) + 1n))
      } catch (err) {
        try {
          this.io.onCommitError(err)
        } catch {
          // A reporter that throws must not stop the partition's commits.
        }
      }
    })
    this.chain = done
    this.handling.push(done)
    const settled = () => void this.handling.splice(this.handling.indexOf(done), 1)
    done.then(settled, settled)
  }

  /**
   * The partition was (re)assigned: the log reads it again from the group's committed offset, so
   * batches still in flight are not committed.
   */
  reassigned(): void {
    this.epoch++
  }

  /** Resolves once every batch handed so far was committed or dropped. */
  drain(): Promise<void> {
    return this.chain
  }
}
