import { z } from 'zod'

/**
 * How request schemas are shown in the OpenAPI document. A request schema is what a handler
 * validates with; the document shows what a client may send (zod's own `z.toJSONSchema(…, { io:
 * 'input' })`), which zod-to-openapi's renderer does not: it describes coerced numbers as
 * nullable, loses the item constraints of list parameters behind their transform and keeps the
 * `/i` of a case-insensitive pattern. Response schemas are plain data and rendered by
 * zod-to-openapi itself (openapi.ts).
 *
 * Query parameters: one per property of the handler's query schema. Lists (`segments`,
 * `customer_ids`, …) are arrays with `style: form, explode: true` (repeat the name); the
 * `segments[]=A` and `segments=A,B` forms are said in the description. Coerced numbers are
 * `integer`/`number`; string-or-boolean flags are `boolean`; `null` alternatives are dropped (a
 * query string cannot carry null).
 */

export type JsonSchema = Record<string, unknown>

/** zod → JSON Schema (2020-12, which OpenAPI 3.1 uses as is), without the `$schema` key. */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output' = 'input'): JsonSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', override: spellOutFlags }) as JsonSchema
  return rest
}

/** A JSON Schema pattern has no flags, so a case-insensitive zod regex is emitted with both cases spelled out. */
function spellOutFlags(ctx: { zodSchema: z.core.$ZodTypes; jsonSchema: object }): void {
  const json = ctx.jsonSchema as JsonSchema
  for (const check of (ctx.zodSchema._zod.def as { checks?: z.core.$ZodCheck[] }).checks ?? []) {
    const re = (check._zod.def as { pattern?: RegExp }).pattern
    if (!re?.flags.includes('i')) continue
    for (const s of [json, ...((json.allOf as JsonSchema[] | undefined) ?? [])]) if (s.pattern === re.source) s.pattern = caseless(re.source)
  }
}

const otherCase = (s: string) => (s === s.toLowerCase() ? s.toUpperCase() : s.toLowerCase())

/** `^[a-z0-9]x$` → `^[a-zA-Z0-9][xX]$`: the same language without the `i` flag. */
export function caseless(source: string): string {
  let out = ''
  let inClass = false
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!
    if (c === '\\') {
      out += c + (source[i + 1] ?? '')
      i++
    } else if (inClass) {
      const range = /^[A-Za-z]-[A-Za-z]/.exec(source.slice(i))?.[0]
      if (range) {
        out += range + otherCase(range)
        i += 2
      } else {
        if (c === ']') inClass = false
        out += /[A-Za-z]/.test(c) ? c + otherCase(c) : c
      }
    } else {
      if (c === '[') inClass = true
      out += /[A-Za-z]/.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c
    }
  }
  return out
}

export const propertiesOf = (s: JsonSchema) => (s.properties ?? {}) as Record<string, JsonSchema>

/** Sets the description of some properties of a generated schema (those it has); returns the schema. */
export function describeProperties(schema: JsonSchema, descriptions: Record<string, string>): JsonSchema {
  for (const [k, d] of Object.entries(descriptions)) {
    const p = propertiesOf(schema)[k]
    if (p) p.description = d
  }
  return schema
}

/** The schema of one query parameter, simplified for query strings (see the module comment). */
function queryParamSchema(input: JsonSchema, output: JsonSchema | undefined): { schema: JsonSchema; list: boolean } {
  let s = { ...input }
  const alts = Array.isArray(s.anyOf) ? (s.anyOf as JsonSchema[]) : undefined
  if (alts) {
    const nonNull = alts.filter((a) => a.type !== 'null')
    const arr = nonNull.find((a) => a.type === 'array')
    const bool = nonNull.find((a) => a.type === 'boolean')
    if (arr) {
      // string | string[] on input (the list helper): the item constraints live on the output side.
      const outArr = output?.type === 'array' ? output : Array.isArray(output?.anyOf) ? (output.anyOf as JsonSchema[]).find((a) => a.type === 'array') : undefined
      const { anyOf: _a, ...rest } = s
      const merged: JsonSchema = { ...rest, ...(outArr ?? arr), type: 'array' }
      if (merged.items && typeof merged.items === 'object') merged.items = queryParamSchema(merged.items as JsonSchema, undefined).schema
      return { schema: merged, list: true }
    }
    if (bool) {
      const { anyOf: _a, ...rest } = s
      s = { ...rest, type: 'boolean' }
    } else if (nonNull.length === 1) {
      const { anyOf: _a, ...rest } = s
      s = { ...rest, ...nonNull[0] }
    } else {
      s = { ...s, anyOf: nonNull }
    }
  }
  // The exact-date regex zod emits is unreadable and says no more than format: date.
  if (s.format === 'date' && typeof s.pattern === 'string') delete s.pattern
  return { schema: s, list: false }
}

const LIST_NOTE = 'A list: repeat the parameter (`x=A&x=B`), or send `x[]=A&x[]=B` or `x=A,B`.'

/**
 * The query schema as the document shows it: the same keys, each carrying its query-string JSON
 * Schema and parameter fields as metadata, which zod-to-openapi uses instead of rendering the
 * field itself (`notes` adds a sentence to a parameter's description).
 */
export function documentedQuery(schema: z.ZodObject, notes: Record<string, string> = {}): z.ZodObject {
  const input = jsonSchema(schema, 'input')
  let output: JsonSchema = {}
  try {
    output = jsonSchema(schema, 'output')
  } catch {
    // some output types cannot be represented; the input side is enough then
  }
  const shape = Object.fromEntries(
    Object.entries(schema.shape).map(([name, field]) => {
      const { schema: s, list } = queryParamSchema(propertiesOf(input)[name] ?? {}, propertiesOf(output)[name])
      const { description, ...rest } = s
      const text = [description, list ? LIST_NOTE.replaceAll('x', name) : undefined, notes[name]].filter(Boolean).join(' ')
      const param = { ...(text ? { description: text } : {}), ...(list ? { style: 'form', explode: true } : {}) }
      if (!rest.type) throw new Error(`query parameter ${name}: no single type to show (${JSON.stringify(rest)})`)
      // The description goes on the parameter only (undefined: not copied from the field onto its schema as well).
      return [name, (field as z.ZodType).meta({ ...rest, description: undefined, param })]
    }),
  )
  return z.object(shape)
}

/** An identifier in a path: a positive integer of at most 16 digits, within the safe range. */
export const PositiveId = z.int().min(1).max(Number.MAX_SAFE_INTEGER)

/** The `{tenantId}` path parameter (the handlers parse it with the processing lane's parseTenantId: 400 otherwise). */
export const TenantIdParams = z.object({ tenantId: PositiveId.meta({ description: 'Tenant identifier (positive integer)' }) })
