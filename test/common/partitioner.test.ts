import { describe, expect, it } from 'vitest'
import { murmur2, partitionFor } from '../../common/eventlog/partitioner.ts'

// Kafka's own murmur2 (org.apache.kafka.common.utils.Utils): the values its tests and
// Akka's Murmur2Spec check against.
const KAFKA = {
  '1': -1993445489,
  '12': 126087238,
  '123': -267702483,
  '1234': -1614185708,
  '12345': -1188365604,
  '21': -973932308,
  foobar: -790332482,
  'a-little-bit-long-string': -985981536,
  'a-little-bit-longer-string': -1486304829,
  lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8: -58897971,
  abc: 479470107,
}

describe('partitioner', () => {
  it('murmur2 is Kafka’s', () => {
    for (const [key, hash] of Object.entries(KAFKA)) expect(murmur2(Buffer.from(key)), key).toBe(hash)
  })

  it('a string key lands where its UTF-8 bytes do: ASCII, not ASCII, and longer than the scratch buffer', () => {
    // A lone surrogate is encoded as U+FFFD, as Buffer.from does; 300 characters do not fit the scratch buffer.
    const keys = [...Object.keys(KAFKA), '77:1000001', 'ñandú:7', '€', '\uD800a', 'x'.repeat(256), 'x'.repeat(300), `${'y'.repeat(100)}ñ`, '']
    // Near 2³¹ partitions the partition is all but the hash itself.
    const P = 2147483647
    for (const key of keys) expect(partitionFor(key, P, () => 0), key).toBe((murmur2(Buffer.from(key)) & 0x7fffffff) % P)
    for (const [key, hash] of Object.entries(KAFKA)) expect(partitionFor(key, 12, () => 0)).toBe((hash & 0x7fffffff) % 12)
    // A short key after a long one reads only its own bytes.
    expect(partitionFor('21', P, () => 0)).toBe((KAFKA['21'] & 0x7fffffff) % P)
  })

  it('murmur2 of more bytes than there are is refused', () => {
    expect(() => murmur2(new Uint8Array(2), 3)).toThrow(RangeError)
    expect(murmur2(Buffer.from('21x'), 2)).toBe(KAFKA['21'])
  })

  it('a null key takes the fallback', () => {
    expect(partitionFor(null, 4, () => 6)).toBe(2)
  })
})
