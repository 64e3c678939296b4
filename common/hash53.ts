/**
 * cyrb53 (public domain): a fast 53-bit non-cryptographic hash, returned as a safe integer. Used
 * where the feature consumer keeps a number instead of a string or an object to tell things
 * apart (order ids in an order book, a customer's last feature values). Pure.
 */
export class Hash53 {
  private h1 = 0xdeadbeef
  private h2 = 0x41c6ce57
  private static readonly bits = new Float64Array(1)
  private static readonly words = new Uint32Array(Hash53.bits.buffer)

  /** Mixes in a 32-bit word. */
  word(w: number): this {
    this.h1 = Math.imul(this.h1 ^ w, 2654435761)
    this.h2 = Math.imul(this.h2 ^ w, 1597334677)
    return this
  }

  /** Mixes in a string's UTF-16 code units (its length first, so "ab","c" differs from "a","bc"). */
  string(s: string): this {
    this.word(s.length | 0x80000000)
    for (let i = 0; i < s.length; i++) this.word(s.charCodeAt(i))
    return this
  }

  /** Mixes in a number's bits (-0 as 0, as `===` compares). */
  number(x: number): this {
    Hash53.bits[0] = x === 0 ? 0 : x
    return this.word(Hash53.words[0]!).word(Hash53.words[1]!)
  }

  digest(): number {
    let { h1, h2 } = this
    h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507)
    h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909)
    h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507)
    h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909)
    return 4294967296 * (2097151 & h2) + (h1 >>> 0)
  }
}

/** The 53-bit hash of a string's characters (cyrb53 as published: no length word). */
export function hash53(s: string): number {
  const h = new Hash53()
  for (let i = 0; i < s.length; i++) h.word(s.charCodeAt(i))
  return h.digest()
}
