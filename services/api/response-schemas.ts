import { z } from 'zod'

/**
 * Building blocks of the response schemas (each route module writes its own bodies from these).
 * Objects are strict where every field is known: a documented body never grows a field unseen.
 */

/** ISO 8601 in UTC with milliseconds (`Date.prototype.toISOString`). */
export const Timestamp = z.iso.datetime({ offset: false })
export const NullableTimestamp = Timestamp.nullable()
/** A calendar date, `YYYY-MM-DD`. */
export const DateOnly = z.iso.date()
export const Count = z.int().min(0)
/** A signed percent string of a change (`+12.5%`, `-3%`, `0%`), null without a base to compare with. */
export const SignedPercent = z
  .string()
  .regex(/^[+-]?\d+(\.\d+)?%$/)
  .nullable()
  .meta({ description: 'Signed percent change, e.g. "+12.5%"; null without a base' })
/** A percentage 0..100 with 2 decimals. */
export const Percentage = z.number().min(0).max(100)
/** A fraction 0..1. */
export const Fraction = z.number().min(0).max(1)

/** `{ success: true, …fields }`. */
export const success = <S extends z.ZodRawShape>(shape: S) => z.strictObject({ success: z.literal(true), ...shape })

/** `{ success: true, message, data }`, the usual answer of an operation. */
export const withMessage = <T extends z.ZodType>(data: T) => success({ message: z.string(), data })

/** The reference date an answer was computed as of (docs/tenant-settings.md). */
export const ReferenceMetadata = z
  .strictObject({
    reference_date: DateOnly,
    reference_date_setting: z.string().meta({ description: '`now`, `data_end` or a date YYYY-MM-DD' }),
    reference_date_source: z.enum(['setting', 'as_of']),
  })
  .meta({ id: 'ReferenceMetadata' })
