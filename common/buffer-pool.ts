/**
 * Byte buffers kept for reuse, in power-of-two sizes. A buffer V8 allocates outside its heap (any
 * Buffer of 4 KB or more) is counted as external memory, and every 64 MB of external memory
 * allocated since the last full collection makes V8 start another one (its "external memory
 * pressure"), however small the heap's own growth: a consumer holding a million customers' state
 * re-marked its whole heap, 300 to 900 MB, 38 times while it read a backlog of 4.9 million events,
 * a fifth of the process's CPU (docs/analytics-performance.md, "Streaming"). A buffer taken from
 * here again is no new allocation, so it counts once.
 *
 * Pure bookkeeping: whoever gives a buffer back promises that nothing reads or writes it, nor any
 * view of it, any more.
 */
export class BufferPool {
  /** Free buffers by size. */
  private readonly free = new Map<number, Buffer[]>()
  private freeBytes = 0

  /**
   * @param maxFreeBytes free buffers kept at most (a buffer given back beyond it is left to the collector)
   * @param minBytes the smallest size handed out
   * @param maxKeptBytes the largest buffer kept: a rare larger one (a tick's chunk) is left to the collector rather than held for good
   */
  constructor(
    readonly maxFreeBytes: number,
    readonly minBytes = 1 << 16,
    readonly maxKeptBytes = maxFreeBytes,
  ) {
    if (!(Number.isInteger(Math.log2(minBytes)) && minBytes > 0)) throw new RangeError(`minBytes must be a power of two, got ${minBytes}`)
  }

  /** The size take(n) hands out: the smallest power of two at least n and minBytes. */
  sizeFor(n: number): number {
    let size = this.minBytes
    while (size < n) size *= 2
    return size
  }

  /**
   * A buffer of sizeFor(n) bytes, whose contents are garbage: a free one when there is one. One
   * larger than maxKeptBytes, which would not be kept, is of n bytes exactly.
   */
  take(n: number): Buffer {
    const size = this.sizeFor(n)
    if (size > this.maxKeptBytes) return Buffer.allocUnsafeSlow(n)
    const b = this.free.get(size)?.pop()
    if (b) {
      this.freeBytes -= size
      return b
    }
    // Its own ArrayBuffer, whole: never a slice of Node's shared pool, which others write.
    return Buffer.allocUnsafeSlow(size)
  }

  /** Gives back a buffer `take` handed out (another is ignored). Nothing may use it, or a view of it, after this. */
  give(b: Buffer): void {
    const size = b.length
    if (b.byteOffset !== 0 || b.buffer.byteLength !== size || size !== this.sizeFor(size) || size > this.maxKeptBytes || this.freeBytes + size > this.maxFreeBytes) return
    let list = this.free.get(size)
    if (!list) this.free.set(size, (list = []))
    // Given back twice, it would be handed to two takers.
    if (list.includes(b)) return
    list.push(b)
    this.freeBytes += size
  }

  /** Bytes held free. */
  get held(): number {
    return this.freeBytes
  }
}

/**
 * The process's pool for the bodies its writers build and drop at once (a write's inserts, a
 * send's frames, published events): 32 MB free at most, about what a stream's two writes in flight
 * hold; buffers of up to 8 MB (a tick's chunk of 30,000 feature rows makes 16 MB ones, which kept
 * for good would count against the consumer's memory, bench (d)).
 */
export const WRITE_BUFFERS = new BufferPool(32 << 20, 1 << 16, 8 << 20)
