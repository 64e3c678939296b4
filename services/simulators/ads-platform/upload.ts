/**
 * Checks an upload payload the way the platform does: the request as a whole (schema, data,
 * at most 10,000 rows) answers error 100; single bad rows are counted and sampled, the good
 * rows are applied.
 */
import { invalidParameter } from './graph-error.ts'

export const SIM_COLUMNS = ['EMAIL', 'PHONE', 'FN', 'LN'] as const
export type SimColumn = (typeof SIM_COLUMNS)[number]

/** A member: its non-empty (column, digest) pairs. */
export type Member = Partial<Record<SimColumn, string>>

export interface CheckedPayload {
  schema: SimColumn[]
  received: number
  /** Valid rows, each as its member and its identity key. */
  rows: { key: string; member: Member }[]
  invalid: number
  samples: Record<string, string[]>
}

const HEX64 = /^[0-9a-f]{64}$/

/** Identity of a member: its non-empty pairs in column order, so blank columns do not matter. */
export function memberKey(member: Member): string {
  return SIM_COLUMNS.filter((c) => member[c] !== undefined)
    .map((c) => `${c}=${member[c]}`)
    .join('|')
}

export function checkPayload(raw: unknown, maxRows: number, maxSamples: number): CheckedPayload {
  let payload = raw
  if (typeof payload === 'string') {
    try {
      payload = JSON.parse(payload)
    } catch {
      throw invalidParameter('param payload must be a JSON object')
    }
  }
  if (payload === undefined || payload === null) throw invalidParameter('The parameter payload is required')
  if (typeof payload !== 'object' || Array.isArray(payload)) throw invalidParameter('param payload must be a JSON object')
  const p = payload as { schema?: unknown; data?: unknown }
  const schemaList = typeof p.schema === 'string' ? [p.schema] : p.schema
  if (!Array.isArray(schemaList) || schemaList.length === 0) throw invalidParameter('payload.schema must be a non-empty array of column names')
  for (const c of schemaList) {
    if (typeof c !== 'string' || !(SIM_COLUMNS as readonly string[]).includes(c)) throw invalidParameter(`Invalid schema column: ${JSON.stringify(c)}`)
  }
  if (new Set(schemaList).size !== schemaList.length) throw invalidParameter('payload.schema repeats a column')
  const schema = schemaList as SimColumn[]
  if (!Array.isArray(p.data)) throw invalidParameter('payload.data must be an array of rows')
  if (p.data.length === 0) throw invalidParameter('payload.data is empty')
  if (p.data.length > maxRows) throw invalidParameter(`Too many entries in payload.data: ${p.data.length}; at most ${maxRows} per request`)

  const samples: Record<string, string[]> = {}
  const sample = (column: string, value: string) => {
    const list = (samples[column] ??= [])
    if (list.length < maxSamples) list.push(value)
  }
  const rows: CheckedPayload['rows'] = []
  let invalid = 0
  for (const row of p.data as unknown[]) {
    if (!Array.isArray(row) || row.length !== schema.length) {
      invalid++
      // A row of the wrong shape has no column of its own: its raw text goes under the first one.
      sample(schema[0]!, JSON.stringify(row))
      continue
    }
    const member: Member = {}
    let bad = false
    row.forEach((value: unknown, i) => {
      const column = schema[i]!
      if (value === '' ) return
      if (typeof value !== 'string' || !HEX64.test(value)) {
        bad = true
        sample(column, typeof value === 'string' ? value : JSON.stringify(value))
        return
      }
      member[column] = value
    })
    if (bad || Object.keys(member).length === 0) {
      invalid++
      continue
    }
    rows.push({ key: memberKey(member), member })
  }
  return { schema, received: p.data.length, rows, invalid, samples }
}
