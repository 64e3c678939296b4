/**
 * Kafka's default (Java) partitioner: murmur2 of the key bytes, made positive, modulo the
 * partition count. Both log adapters use it, so a key lands on the same partition number in
 * either runtime and in Java or librdkafka producers configured with murmur2.
 */
export function murmur2(data: Buffer): number {
  const m = 0x5bd1e995
  const length = data.length
  let h = (0x9747b28c ^ length) | 0
  const length4 = length & ~3
  for (let i = 0; i < length4; i += 4) {
    let k = (data[i]! & 0xff) | ((data[i + 1]! & 0xff) << 8) | ((data[i + 2]! & 0xff) << 16) | ((data[i + 3]! & 0xff) << 24)
    k = Math.imul(k, m)
    k ^= k >>> 24
    k = Math.imul(k, m)
    h = Math.imul(h, m)
    h ^= k
  }
  switch (length % 4) {
    case 3:
      h ^= (data[length4 + 2]! & 0xff) << 16
    // falls through
    case 2:
      h ^= (data[length4 + 1]! & 0xff) << 8
    // falls through
    case 1:
      h ^= data[length4]! & 0xff
      h = Math.imul(h, m)
  }
  h ^= h >>> 13
  h = Math.imul(h, m)
  h ^= h >>> 15
  return h | 0
}

export function partitionFor(key: Buffer | string | null, partitions: number, fallback: () => number): number {
  if (key === null) return fallback() % partitions
  const bytes = typeof key === 'string' ? Buffer.from(key) : key
  return (murmur2(bytes) & 0x7fffffff) % partitions
}
