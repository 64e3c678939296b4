import { z } from 'zod'
import { ReferenceDateSchema } from '../../common/reference-date.ts'
import { ANALYSES, type Analysis } from '../features/index.ts'
import { FREQUENCIES, type Frequency } from '../../common/jobs/schedule.ts'

/** Field error as in the rest of the API (`details.errors[]`). */
export interface FieldError {
  path: string
  code: string
  message: string
}

export const MAX_BATCH_SIZE = 100_000
export const DEFAULT_BATCH_SIZE = 1000

/** Deduplicated and in canonical order (rfm, clv, churn): the order the engine computes them in. */
const analysesSchema = z
  .array(z.enum(ANALYSES))
  .min(1)
  .default(['rfm'])
  .transform((list): Analysis[] => ANALYSES.filter((a) => list.includes(a)))

export const ProcessBodySchema = z.strictObject({
  analyses: analysesSchema,
  force: z.boolean().default(false),
  batch_size: z.number().int().min(1).max(MAX_BATCH_SIZE).default(DEFAULT_BATCH_SIZE),
  /** Compute as of the end of this day instead of the tenant's reference date; stores nothing of the tenant's (docs/processing.md). Also `?as_of=`. */
  as_of: ReferenceDateSchema.optional(),
})
export type ProcessBody = z.output<typeof ProcessBodySchema>

/** ISO 8601 date or date-time; without a zone it is UTC (as everywhere in this API). */
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i

export function parseIsoTimestamp(s: string): number | undefined {
  const m = ISO_TIMESTAMP.exec(s)
  if (!m) return undefined
  const withZone = m[1] ? s : s.length === 10 ? `${s}T00:00:00Z` : `${s}Z`
  const ms = Date.parse(withZone.replace(' ', 'T'))
  return Number.isFinite(ms) ? ms : undefined
}

/** Row versions of schedules are next_run in ms and must stay below 2^44 (see 003_processing.sql). */
const LATEST_SCHEDULE_AT = Date.UTC(2500, 0, 1)

export const ScheduleBodySchema = z
  .strictObject({
    schedule_at: z
      .string()
      .refine((s) => parseIsoTimestamp(s) !== undefined, { message: 'must be an ISO 8601 timestamp, e.g. 2025-06-01T03:00:00Z' })
      .refine((s) => (parseIsoTimestamp(s) ?? 0) < LATEST_SCHEDULE_AT, { message: 'must be before the year 2500' })
      .optional(),
    recurring: z.boolean().default(false),
    frequency: z.enum(FREQUENCIES).optional(),
    analyses: analysesSchema,
  })
  .superRefine((b, ctx) => {
    if (b.recurring && !b.frequency) ctx.addIssue({ code: 'custom', path: ['frequency'], message: 'is required when recurring is true', params: { code: 'required' } })
  })
export type ScheduleBody = z.output<typeof ScheduleBodySchema>
export type { Frequency }

/** zod issues → field errors; unknown keys get one error each, at their own path. */
export function fieldErrors(issues: readonly z.core.$ZodIssue[]): FieldError[] {
  return issues.flatMap((i): FieldError[] => {
    if (i.code === 'unrecognized_keys') {
      return i.keys.map((k) => ({ path: [...i.path.map(String), k].join('.'), code: 'unrecognized_key', message: 'is not a known field' }))
    }
    return [{ path: i.path.map(String).join('.'), code: i.code === 'custom' ? String(i.params?.code ?? 'invalid') : i.code, message: i.message }]
  })
}

/** `tenantId` path parameter: a positive integer within the safe range. */
export function parseTenantId(raw: string | undefined): { ok: true; value: number } | { ok: false; error: FieldError } {
  const value = raw !== undefined && /^\d{1,16}$/.test(raw) ? Number(raw) : NaN
  if (Number.isSafeInteger(value) && value > 0) return { ok: true, value }
  return { ok: false, error: { path: 'tenantId', code: 'invalid_tenant_id', message: 'must be a positive integer' } }
}

/** Parses a body (an absent body is `{}`), collecting errors next to any earlier ones (the tenant id). */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown, errors: FieldError[]): z.output<S> | undefined {
  const r = schema.safeParse(body ?? {})
  if (r.success) return r.data
  errors.push(...fieldErrors(r.error.issues))
  return undefined
}
