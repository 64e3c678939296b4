import type { EventCodec } from './codec.ts'
import type { OutRecord } from './port.ts'
import { FramedValues } from './wire-format.ts'
import type { BufferPool } from '../buffer-pool.ts'

/**
 * The records a producer sends to one topic, each value encoded as it is added into one shared
 * buffer (`FramedValues`): a write of thirty thousand events made thirty thousand buffers, which
 * lived until the send and were copied by every young-generation collection on the way. A value
 * its schema refuses throws at `add`, as `frame` does, and is not added. A value whose schema must
 * be fetched first is encoded apart (its promise holds the value until then): `records()` waits
 * for it, and rejects if that encoding fails.
 */
export class EncodedRecords {
  private readonly values: FramedValues
  private readonly keys: string[] = []
  private late: Map<number, Promise<Buffer>> | null = null

  /**
   * @param initialBytes the values' buffer at the first add (64 KB by default; it doubles as needed).
   * @param pool where the values' buffers come from, given back by release() once they are sent.
   */
  constructor(
    private readonly codec: EventCodec,
    readonly topic: string,
    initialBytes?: number,
    pool?: BufferPool,
  ) {
    this.values = new FramedValues(initialBytes, pool ?? null)
  }

  get length(): number {
    return this.keys.length
  }

  add(key: string, value: unknown): void {
    if (!this.codec.encodeInto(this.topic, value, this.values)) {
      const encoded = this.codec.encode(this.topic, value)
      encoded.catch(() => {}) // rejected at records(), which awaits it
      ;(this.late ??= new Map()).set(this.keys.length, encoded)
      this.values.skip()
    }
    this.keys.push(key)
  }

  /** The records are dropped, their values' buffer back to the pool: the send that took them has settled, and nothing reads them again. */
  release(): void {
    this.values.release()
    this.keys.length = 0
    this.late = null
  }

  /** The records in the order they were added: at once, unless a value is still being encoded. */
  records(): OutRecord[] | Promise<OutRecord[]> {
    const late = this.late
    if (!late) return this.keys.map((key, i) => ({ key, value: this.values.value(i) }))
    return (async () => {
      const encoded = new Map<number, Buffer>()
      for (const [i, value] of late) encoded.set(i, await value)
      return this.keys.map((key, i) => ({ key, value: encoded.get(i) ?? this.values.value(i) }))
    })()
  }
}
