import fs from 'node:fs'
import path from 'node:path'
import avsc from 'avsc'
import { writeJsonAtomic } from '../json-file.ts'
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry'
import { AVRO_OPTS, avroType, frame, readPayload, RegistryUnavailableError, schemaIdOf, UndecodableRecordError, type FramedValues } from './wire-format.ts'

/**
 * Where Avro schemas live and get their ids. Both implementations frame values in the Confluent
 * wire format (magic byte 0, 4-byte big-endian schema id, Avro binary), so a record written by
 * the embedded runtime is byte-for-byte what the Kafka runtime writes.
 */
export interface SchemaRegistryPort {
  /** Registers `schema` under `subject` with BACKWARD compatibility; returns its id. Throws IncompatibleSchemaError. */
  register(subject: string, schema: string): Promise<number>
  encode(id: number, value: unknown): Promise<Buffer>
  /** `encode` into `into`, without a promise, when schema `id` is known here; false (nothing added) when it must be fetched first. */
  encodeKnownInto(id: number, value: unknown, into: FramedValues): boolean
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

/** The registry has no schema of that id: a record written with it cannot be read (a poison record). */
export class SchemaNotFoundError extends Error {
  readonly retriable = false
}

export { avroType, frame, readPayload, RegistryUnavailableError, schemaIdOf, UndecodableRecordError } from './wire-format.ts'

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

  encodeKnownInto(id: number, value: unknown, into: FramedValues): boolean {
    const t = this.types.get(id)
    if (!t) return false
    into.add(id, t, value)
    return true
  }

  async decode(buf: Buffer): Promise<{ schemaId: number; value: unknown }> {
    const known = this.decodeKnown(buf)
    if (known) return known
    const schemaId = schemaIdOf(buf)
    let t: avsc.Type
    try {
      t = await this.typeFor(schemaId)
    } catch (e) {
      // Only the registry's not answering is worth waiting for; an id it does not know, or a schema
      // it gives that cannot be read here (JSON or Protobuf, unresolved references), stays so.
      if (e instanceof RegistryUnavailableError) throw e
      throw new UndecodableRecordError(`${e instanceof SchemaNotFoundError ? 'unknown ' : ''}schema id ${schemaId}: ${(e as Error).message}`)
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

  /** `timeoutMs`: the longest one request may take (default 10 s). The client retries 5xx answers and refused connections up to three times, not a timeout. */
  constructor(opts: { url: string; username?: string; password?: string; timeoutMs?: number }) {
    super()
    const auth = opts.username ? { username: opts.username, password: opts.password ?? '' } : undefined
    const timeout = opts.timeoutMs ?? 10_000
    // mappersmith sends a request without a timeout unless one is set on it: a registry that
    // accepted the connection and never answered held a consumer's batch forever.
    const timeoutMiddleware = () => ({ prepareRequest: (next: () => Promise<{ enhance(extras: { timeout: number }): unknown }>) => next().then((request) => request.enhance({ timeout })) })
    this.client = new SchemaRegistry({ host: opts.url, auth, middlewares: [timeoutMiddleware] as never }, { [SchemaType.AVRO]: AVRO_OPTS } as never)
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
    let t: avsc.Type
    try {
      t = (await this.client.getSchema(id)) as unknown as avsc.Type
    } catch (e) {
      // The client's errors carry the HTTP status: 404 (error code 40403) no such id; any other, a
      // network error or a timeout included (mappersmith answers those as a 400 of its own), means
      // the registry did not give the schema now. An error without one is the schema's own (the
      // client could not read what it was given): a permanent fault, as an unknown id.
      const status = (e as { status?: unknown }).status
      if (status === 404) throw new SchemaNotFoundError((e as Error).message)
      if (typeof status === 'number') throw new RegistryUnavailableError(`the schema registry answered ${status} for schema id ${id}: ${(e as Error).message}`)
      throw e
    }
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
    if (!s) throw new SchemaNotFoundError(`no schema with id ${id}`)
    return s
  }

  private persist(): void {
    writeJsonAtomic(this.file, this.state, 2)
  }
}
