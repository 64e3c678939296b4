import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { ALL_TOPICS, subjectFor, type TopicSpec } from '../topics.ts'
import { UndecodableRecordError, type SchemaRegistryPort } from './schema-registry.ts'
import { SchemaMismatchError, typeNameOf, type FramedValues } from './wire-format.ts'

export { SchemaMismatchError, typeNameOf }

export const SCHEMA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../schemas/avro')

export function readSchema(file: string): string {
  return fs.readFileSync(path.join(SCHEMA_DIR, file), 'utf8')
}

function fullName(schema: string): string {
  const s = JSON.parse(schema) as { name: string; namespace?: string }
  return s.namespace ? `${s.namespace}.${s.name}` : s.name
}


/**
 * Encodes and decodes the values of our topics. The topic schemas are registered under
 * `<topic>-value` when the codec is created (start-up), so an incompatible change fails start-up.
 */
export class EventCodec {
  private constructor(
    readonly registry: SchemaRegistryPort,
    private readonly ids: Map<string, number>,
    private readonly expected: Map<string, string>,
  ) {}

  static async create(registry: SchemaRegistryPort, topics: TopicSpec[] = ALL_TOPICS): Promise<EventCodec> {
    const ids = new Map<string, number>()
    const expected = new Map<string, string>()
    for (const t of topics) {
      const schema = readSchema(t.schema)
      ids.set(t.name, await registry.register(subjectFor(t.name), schema))
      expected.set(t.name, fullName(schema))
    }
    return new EventCodec(registry, ids, expected)
  }

  schemaId(topic: string): number {
    const id = this.ids.get(topic)
    if (id === undefined) throw new Error(`no schema registered for topic ${topic}`)
    return id
  }

  encode(topic: string, value: unknown): Promise<Buffer> {
    return this.registry.encode(this.schemaId(topic), value)
  }

  /**
   * Encodes `value` into `into` when the topic's schema is known here (the rule once the codec is
   * created) and answers true; false, with nothing added, when it must be fetched first (`encode`).
   */
  encodeInto(topic: string, value: unknown, into: FramedValues): boolean {
    return this.registry.encodeKnownInto(this.schemaId(topic), value, into)
  }

  /** The full name of the record type `topic` carries (a value of another type is a SchemaMismatchError). */
  expectedType(topic: string): string | undefined {
    return this.expected.get(topic)
  }

  /** Decodes a value of `topic`; throws UndecodableRecordError or SchemaMismatchError for poison records. */
  async decode<T>(topic: string, value: Buffer | null): Promise<T> {
    if (value === null) throw new UndecodableRecordError('record has no value (tombstone)')
    return this.checked<T>(topic, await this.registry.decode(value))
  }

  /** `decode`, or a promise of it only when the value's schema must be fetched first (decodeKnown). */
  decodeSoon<T>(topic: string, value: Buffer | null): T | Promise<T> {
    if (value === null) throw new UndecodableRecordError('record has no value (tombstone)')
    const known = this.registry.decodeKnown(value)
    return known ? this.checked<T>(topic, known) : this.decode<T>(topic, value)
  }

  private checked<T>(topic: string, { schemaId, value: decoded }: { schemaId: number; value: unknown }): T {
    const expected = this.expected.get(topic)
    const got = decoded === null ? null : typeNameOf(decoded)
    if (expected && got && got !== expected) {
      throw new SchemaMismatchError(`schema ${schemaId} writes ${got}, but ${topic} carries ${expected}`)
    }
    return decoded as T
  }
}

