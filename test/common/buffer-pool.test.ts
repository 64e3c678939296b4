import { describe, expect, it } from 'vitest'
import { BufferPool } from '../../common/buffer-pool.ts'
import { ByteWriter } from '../../common/store/row-binary.ts'

describe('BufferPool', () => {
  it('hands out powers of two of at least minBytes, each its own ArrayBuffer, and takes back only those', () => {
    const pool = new BufferPool(1 << 20, 1024)
    expect([1, 1024, 1025, 5000].map((n) => pool.take(n).length)).toEqual([1024, 1024, 2048, 8192])
    const b = pool.take(3000)
    expect([b.byteOffset, b.buffer.byteLength]).toEqual([0, 4096])
    pool.give(b)
    expect(pool.held).toBe(4096)
    expect(pool.take(4000)).toBe(b)
    expect(pool.held).toBe(0)
    // Not one of its own: a slice, a buffer of another size, one sharing its ArrayBuffer.
    pool.give(Buffer.alloc(3000))
    pool.give(Buffer.allocUnsafeSlow(8192).subarray(0, 4096))
    pool.give(Buffer.from(new ArrayBuffer(8192), 4096, 4096))
    expect(pool.held).toBe(0)
    expect(() => new BufferPool(1 << 20, 1000)).toThrow(RangeError)
  })

  it('keeps no buffer larger than maxKeptBytes, hands out such a one at its exact size, and keeps one given back twice once', () => {
    const pool = new BufferPool(1 << 20, 1024, 4096)
    const big = pool.take(5000)
    expect(big.length).toBe(5000)
    const twice = pool.take(2048)
    pool.give(twice)
    pool.give(twice)
    expect(pool.held).toBe(2048)
    expect(pool.take(2048)).toBe(twice)
    expect(pool.take(2048)).not.toBe(twice)
    const small = pool.take(4096)
    pool.give(big)
    pool.give(small)
    expect(pool.held).toBe(4096)
    expect(pool.take(5000)).not.toBe(big)
  })

  it('keeps no more than maxFreeBytes free', () => {
    const pool = new BufferPool(3 * 1024, 1024)
    const taken = Array.from({ length: 5 }, () => pool.take(1024))
    for (const b of taken) pool.give(b)
    expect(pool.held).toBe(3 * 1024)
    // The three kept come back; then new ones.
    const again = Array.from({ length: 4 }, () => pool.take(1024))
    expect(again.filter((b) => taken.includes(b))).toHaveLength(3)
  })
})

describe('ByteWriter on a pool', () => {
  it('grows through the pool, giving back each buffer it outgrows, and writes afresh after release', () => {
    const pool = new BufferPool(1 << 20, 64)
    const w = new ByteWriter(64, pool)
    const first = w.buf
    for (let i = 0; i < 100; i++) w.string(`row ${i};`)
    const text = Array.from({ length: 100 }, (_, i) => `row ${i};`)
    // Each string behind its length byte.
    expect(w.bytes().length).toBe(text.join('').length + 100)
    expect(w.bytes().subarray(w.pos - 7).toString()).toBe('row 99;')
    // 64 → 128 → 256 → 512 → 1024: the four outgrown are free, the one in use is not.
    expect(pool.held).toBe(64 + 128 + 256 + 512)
    const used = w.buf
    w.release()
    expect(pool.held).toBe(64 + 128 + 256 + 512 + 1024)
    expect(w.pos).toBe(0)
    w.string('again')
    expect(w.bytes().toString('latin1')).toBe('\x05again')
    // Its buffers are the pool's, taken again: the smallest first.
    expect(w.buf).toBe(first)
    expect(pool.take(1000)).toBe(used)
  })
})
