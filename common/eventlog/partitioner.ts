/**
 * Kafka's default (Java) partitioner: murmur2 of the key bytes, made positive, modulo the
 * partition count. Both log adapters use it, so a key lands on the same partition number in
 * either runtime and in Java or librdkafka producers configured with murmur2.
 */
export function murmur2(data: Uint8Array, length = data.length): number {
  if (length > data.length) throw new RangeError(`murmur2 of ${length} bytes from ${data.length}`)
  const m = 0x5bd1e995
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
  return (keyHash(key) & 0x7fffffff) % partitions
}

/** Where an ASCII string key's bytes are copied to be hashed; a longer key takes a Buffer of its own. */
const scratch = new Uint8Array(256)

/**
 * murmur2 of a key's UTF-8 bytes. An ASCII string's bytes are its character codes, copied into
 * `scratch` rather than a Buffer of their own: the feature rows of a million customers each compute
 * their partition, and a `Buffer.from` per key took a tenth of the rows' encoding.
 */
function keyHash(key: Buffer | string): number {
  if (typeof key !== 'string') return murmur2(key)
  const n = key.length
  if (n > scratch.length) return murmur2(Buffer.from(key))
  for (let i = 0; i < n; i++) {
    const c = key.charCodeAt(i)
    if (c >= 0x80) return murmur2(Buffer.from(key))
    scratch[i] = c
  }
  return murmur2(scratch, n)
}
