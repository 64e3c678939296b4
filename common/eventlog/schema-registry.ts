import fs from 'node:fs'
import path from 'node:path'
import avsc from 'avsc'
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry'
import { AVRO_LOGICAL_TYPES } from './decimal-logical-type.ts'

/**
 * Where Avro schemas live and get their ids. Both implementations frame values in the Confluent
 * wire format (magic byte 0, 4-byte big-endian schema id, Avro binary), so a record written by
 * the embedded runtime is byte-for-byte what the Kafka runtime writes.
 */
export interface SchemaRegistryPort {
  /** Registers `schema` under `subject` with BACKWARD compatibility; returns its id. Throws IncompatibleSchemaError. */
  register(subject: string, schema: string): Promise<number>
  encode(id: number, value: unknown): Promise<Buffer>
  /** `encode` without a promise when schema `id` is known here (undefined when it must be fetched first). */
  encodeKnown(id: number, value: unknown): Buffer | undefined
  decode(buf: Buffer): Promise<{ schemaId: number; value: unknown }>
  /**
   * `decode` without a promise when the value's schema is already known here (undefined when it
   * must be fetched first): the consumers decode every record, and a promise each was a tenth of
   * their time. Throws UndecodableRecordError as decode rejects with it.
   */
  decodeKnown(buf: Buffer): { schemaId: number; value: unknown } | undefined
  /**
   * The writer schema of `id` when it is known here (its JSON, logical types' attributes
   * included), else undefined: what another thread needs to decode values of that schema.
   */
  knownSchema(id: number): string | undefined
}

export class IncompatibleSchemaError extends Error {
  readonly retriable = false
  constructor(public readonly subject: string, detail: string) {
    super(`schema for ${subject} is not BACKWARD compatible with the registered one: ${detail}`)
  }
}

export class UndecodableRecordError extends Error {
  readonly retriable = false
}

const AVRO_OPTS = { logicalTypes: AVRO_LOGICAL_TYPES, wrapUnions: false as const }

export function avroType(schema: string | object): avsc.Type {
  return avsc.Type.forSchema((typeof schema === 'string' ? JSON.parse(schema) : schema) as avsc.Schema, { ...AVRO_OPTS } as never)
}

let scratch = Buffer.allocUnsafe(64 * 1024)

/**
 * `value` in the Confluent wire format (magic byte 0, schema id, Avro payload). The payload is
 * written after the header in a buffer kept for the purpose, then copied once into a buffer of its
 * exact size (avsc's toBuffer would allocate and zero one, and framing copy it again).
 */
export function frame(id: number, t: avsc.Type, value: unknown): Buffer {
  let end = t.encode(value, scratch, 5)
  while (end < 0) {
    scratch = Buffer.allocUnsafe(Math.max(scratch.length * 2, scratch.length - end))
    end = t.encode(value, scratch, 5)
  }
  const out = Buffer.allocUnsafe(end)
  scratch.copy(out, 0, 0, end)
  out[0] = 0
  out.writeUInt32BE(id, 1)
  return out
}

/**
 * The schema id of a value in the Confluent wire format, the value being buf[start, end) (the
 * whole buffer by default); its Avro payload starts 5 bytes in.
 */
export function schemaIdOf(buf: Buffer, start = 0, end = buf.length): number {
  if (!Buffer.isBuffer(buf) || end - start < 5 || buf[start] !== 0) {
    throw new UndecodableRecordError('value is not in the Confluent wire format (magic byte 0 + schema id)')
  }
  return buf.readUInt32BE(start + 1)
}

/**
 * The Avro value after the header of the framed value buf[start, end), read in place (no view of
 * the payload per record), and exactly to its end, as `fromBuffer` would: a truncated or overlong
 * payload is undecodable.
 */
export function readPayload(t: avsc.Type, schemaId: number, framed: Buffer, start = 0, end = framed.length): unknown {
  let read: { value: unknown; offset: number }
  try {
    read = t.decode(framed, start + 5)
  } catch (e) {
    throw new UndecodableRecordError(`Avro payload does not match schema ${schemaId}: ${(e as Error).message}`)
  }
  if (read.offset !== end) throw new UndecodableRecordError(`Avro payload does not match schema ${schemaId}: ${read.offset < 0 ? 'truncated buffer' : 'trailing data'}`)
  return read.value
}

/** Shared encode/decode over avsc types cached by id. */
abstract class AvroCodecBase implements SchemaRegistryPort {
  protected readonly types = new Map<number, avsc.Type>()
  abstract register(subject: string, schema: string): Promise<number>
  protected abstract fetchSchema(id: number): Promise<string>

  protected async typeFor(id: number): Promise<avsc.Type> {
    let t = this.types.get(id)
    if (!t) {
      t = avroType(await this.fetchSchema(id))
      this.types.set(id, t)
    }
    return t
  }

  async encode(id: number, value: unknown): Promise<Buffer> {
    const t = this.types.get(id) ?? (await this.typeFor(id))
    return frame(id, t, value)
  }

  encodeKnown(id: number, value: unknown): Buffer | undefined {
    const t = this.types.get(id)
    return t && frame(id, t, value)
  }

  async decode(buf: Buffer): Promise<{ schemaId: number; value: unknown }> {
    const known = this.decodeKnown(buf)
    if (known) return known
    const schemaId = schemaIdOf(buf)
    let t: avsc.Type
    try {
      t = await this.typeFor(schemaId)
    } catch (e) {
      throw new UndecodableRecordError(`unknown schema id ${schemaId}: ${(e as Error).message}`)
    }
    return { schemaId, value: readPayload(t, schemaId, buf) }
  }

  decodeKnown(buf: Buffer): { schemaId: number; value: unknown } | undefined {
    const schemaId = schemaIdOf(buf)
    const t = this.types.get(schemaId)
    return t && { schemaId, value: readPayload(t, schemaId, buf) }
  }

  knownSchema(id: number): string | undefined {
    const t = this.types.get(id)
    return t && JSON.stringify(t.schema({ exportAttrs: true }))
  }
}

/** A Confluent-compatible registry over HTTP (Confluent, Apicurio's ccompat API, Karapace, Redpanda). */
export class ConfluentSchemaRegistry extends AvroCodecBase {
  private readonly client: SchemaRegistry

  constructor(opts: { url: string; username?: string; password?: string }) {
    super()
    const auth = opts.username ? { username: opts.username, password: opts.password ?? '' } : undefined
    this.client = new SchemaRegistry({ host: opts.url, auth }, { [SchemaType.AVRO]: AVRO_OPTS } as never)
  }

  async register(subject: string, schema: string): Promise<number> {
    // Processes starting together race on a new subject: the client registers first and sets
    // BACKWARD after, so a peer may briefly see another level or a rule that already exists.
    for (let attempt = 1; ; attempt++) {
      try {
        const { id } = await this.client.register({ type: SchemaType.AVRO, schema }, { subject })
        this.types.set(id, avroType(schema))
        return id
      } catch (e) {
        const msg = (e as Error).message ?? String(e)
        if (/incompatib/i.test(msg)) throw new IncompatibleSchemaError(subject, msg)
        const race = /already exists|Compatibility does not match/i.test(msg)
        if (!race || attempt >= 8) throw e
        await new Promise((r) => setTimeout(r, 100 * attempt))
      }
    }
  }

  protected async fetchSchema(id: number): Promise<string> {
    const t = (await this.client.getSchema(id)) as unknown as avsc.Type
    return JSON.stringify(t.schema({ exportAttrs: true }))
  }
}

interface RegistryFile {
  nextId: number
  schemas: Record<string, string>
  subjects: Record<string, number[]>
}

/**
 * The embedded runtime's registry: subjects, versions and ids in one JSON file beside the log.
 * Ids are assigned like Confluent's (same canonical schema, same id) and BACKWARD compatibility is
 * checked with avsc's resolver: the new schema must be able to read data written with the latest one.
 */
export class EmbeddedSchemaRegistry extends AvroCodecBase {
  private state: RegistryFile
  private readonly file: string

  constructor(dir: string) {
    super()
    fs.mkdirSync(dir, { recursive: true })
    this.file = path.join(dir, 'schemas.json')
    this.state = fs.existsSync(this.file)
      ? (JSON.parse(fs.readFileSync(this.file, 'utf8')) as RegistryFile)
      : { nextId: 1, schemas: {}, subjects: {} }
  }

  async register(subject: string, schema: string): Promise<number> {
    const canonical = JSON.stringify(avroType(schema).schema({ exportAttrs: true }))
    const versions = this.state.subjects[subject] ?? []
    const existing = Object.entries(this.state.schemas).find(([, s]) => s === canonical)
    if (existing && versions.includes(Number(existing[0]))) return Number(existing[0])
    const latestId = versions[versions.length - 1]
    if (latestId !== undefined) {
      const reader = avroType(canonical)
      const writer = avroType(this.state.schemas[String(latestId)]!)
      try {
        reader.createResolver(writer)
      } catch (e) {
        throw new IncompatibleSchemaError(subject, (e as Error).message)
      }
    }
    const id = existing ? Number(existing[0]) : this.state.nextId++
    this.state.schemas[String(id)] = canonical
    this.state.subjects[subject] = [...versions, id]
    this.persist()
    this.types.set(id, avroType(canonical))
    return id
  }

  protected async fetchSchema(id: number): Promise<string> {
    const s = this.state.schemas[String(id)]
    if (!s) throw new Error(`no schema with id ${id}`)
    return s
  }

  private persist(): void {
    const tmp = `${this.file}.tmp`
    fs.writeFileSync(tmp, JSON.stringify(this.state, null, 2))
    fs.renameSync(tmp, this.file)
  }
}
