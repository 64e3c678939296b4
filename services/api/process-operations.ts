import { z } from 'zod'
import { ANALYSES } from '../../pipelines/features/index.ts'
import { ProcessBodySchema, ScheduleBodySchema } from '../../pipelines/processing/validation.ts'
import { EARLIEST_DATE, ReferenceDateSchema } from '../../common/reference-date.ts'
import { failure } from './errors.ts'
import { describeProperties, TenantIdParams } from './request-schemas.ts'
import { json, shared, type Operation, type Responses, type RouteGroup } from './routes.ts'
import { Count, Fraction, NullableTimestamp, Percentage, ReferenceMetadata, success, Timestamp, withMessage } from './response-schemas.ts'

/** The processing operations (spec "Endpoints › Processing" 1–4, plus DELETE …/schedule); handlers in process-routes.ts. */
const BASE = '/api/v2/cdp/process'
const AS_OF = `Compute as of the end of this UTC day (${EARLIEST_DATE} to today) instead of the reference date: a read-only run`
const Seconds = z.number().min(0).meta({ description: 'Seconds' })

const Results = z
  .strictObject({
    rfm: z
      .strictObject({
        total_processed: Count,
        segments: z.array(z.strictObject({ segment: z.string(), count: Count, percentage: Percentage })),
        processing_time: Seconds,
        errors: Count,
      })
      .optional(),
    clv: z.strictObject({ processed: Count, avg_clv: z.number(), processing_time: Seconds }).optional(),
    churn: z.strictObject({ processed: Count, at_risk: Count, churn_rate: Fraction, processing_time: Seconds }).optional(),
  })
  .meta({ description: 'One entry per analysis requested' })

const Processed = success({
  message: z.string(),
  tenant_id: z.int().min(1),
  results: Results,
  total_time: Seconds,
  metadata: ReferenceMetadata.optional(),
}).meta({ id: 'ProcessingResult' })

const Status = z
  .strictObject({
    status: z.enum(['never_processed', 'processing', 'processed', 'failed', 'queued']),
    last_processed: NullableTimestamp,
    hours_since_last_sync: Count.nullable(),
    is_stale: z.boolean(),
    records_processed: z.string().regex(/^\d+$/),
    next_scheduled: NullableTimestamp,
    processing_queue: z.strictObject({
      position: z.int().min(1).nullable(),
      estimated_time: z.string().regex(/^\d+s$/).nullable().meta({ description: 'e.g. "42s"; null without a successful run to go by' }),
    }),
  })
  .meta({ id: 'ProcessingStatus' })

const Schedule = z.strictObject({
  schedule_id: z.string(),
  tenant_id: z.int().min(1),
  schedule_at: Timestamp,
  recurring: z.boolean(),
  frequency: ScheduleBodySchema.shape.frequency.unwrap().nullable(),
  analyses: z.array(z.enum(ANALYSES)),
  next_run: NullableTimestamp,
})

const tenantErrors = (status400: string, status404 = 'No tenant with the given identifier'): Responses => ({
  400: failure(status400),
  403: shared('Forbidden'),
  404: failure(status404),
})
const badTenant = 'Invalid tenant id (`details.errors[]`)'

const process: Operation = {
  method: 'post',
  path: `${BASE}/:tenantId`,
  operationId: 'processTenant',
  summary: 'Recompute RFM, CLV and churn for a tenant now',
  description:
    "Runs the requested analyses (deduplicated, computed in the order rfm, clv, churn) and answers when they are done, as of the tenant's reference date (`metadata.reference_date`). Results of the last hour come from the cache unless `force` is true. One run per tenant at a time. With `as_of` (query or body), a read-only run as of the end of that day: no job, no cache, the tenant's features untouched.",
  request: {
    params: TenantIdParams,
    query: z.object({ as_of: ReferenceDateSchema.optional().meta({ description: AS_OF }) }),
    body: {
      schema: ProcessBodySchema,
      required: false,
      document: (body) => describeProperties(body, { as_of: `${AS_OF}; the same as the query's, if both are given` }),
      example: { analyses: ['rfm', 'clv', 'churn'], force: false, batch_size: 1000 },
    },
  },
  responses: {
    200: json('Processed (or from the results cache): `message`, `tenant_id`, `results` per analysis, `total_time` in seconds', Processed),
    ...tenantErrors('Invalid tenant id or body, `as_of` in the query and differently in the body, or `as_of` with an engine that cannot; `details.errors[]` lists every problem at once'),
    409: failure('A job is already running for the tenant, or the run was cancelled'),
    500: failure('The run failed'),
  },
}

const schedule: Operation = {
  method: 'post',
  path: `${BASE}/:tenantId/schedule`,
  operationId: 'scheduleProcessing',
  summary: 'Schedule processing for a tenant (once or recurring)',
  description: 'Replaces any active schedule of the tenant.',
  request: {
    params: TenantIdParams,
    body: {
      schema: ScheduleBodySchema,
      required: false,
      example: { schedule_at: '2025-06-01T03:00:00Z', recurring: true, frequency: 'daily', analyses: ['rfm', 'clv', 'churn'] },
      document: (body) =>
        describeProperties(body, {
          schedule_at: 'ISO 8601 date or date-time (without a zone it is UTC), before the year 2500; default: now',
          frequency: 'Required when recurring is true',
        }),
    },
  },
  responses: {
    201: json('Scheduled: `data` has schedule_id, tenant_id, schedule_at, recurring, frequency, analyses, next_run', withMessage(Schedule)),
    ...tenantErrors('Invalid tenant id or body; `details.errors[]` lists every problem at once'),
  },
}

const unschedule: Operation = {
  method: 'delete',
  path: `${BASE}/:tenantId/schedule`,
  operationId: 'unscheduleProcessing',
  summary: "Remove a tenant's processing schedule",
  request: { params: TenantIdParams },
  responses: {
    200: json('Removed: `data` has tenant_id and schedule_ids', withMessage(z.strictObject({ tenant_id: z.int().min(1), schedule_ids: z.array(z.string()).min(1) }))),
    ...tenantErrors(badTenant, 'No tenant with the given identifier, or it has no active schedule (`No active schedule`)'),
  },
}

const status: Operation = {
  method: 'get',
  path: `${BASE}/status/:tenantId`,
  operationId: 'processingStatus',
  summary: 'Processing status of a tenant',
  description: 'Current or last job, its progress and the schedule.',
  request: { params: TenantIdParams },
  responses: { 200: json('Status object in `data`', success({ data: Status })), ...tenantErrors(badTenant) },
}

const cancel: Operation = {
  method: 'delete',
  path: `${BASE}/:tenantId/cancel`,
  operationId: 'cancelProcessing',
  summary: "Cancel a tenant's running or queued job",
  request: { params: TenantIdParams },
  responses: {
    200: json(
      'Cancelled (`cancelled`), or cancel requested from the replica running it (`cancelling`): `data` has tenant_id, job_id, status',
      withMessage(z.strictObject({ tenant_id: z.int().min(1), job_id: z.string(), status: z.enum(['cancelled', 'cancelling']) })),
    ),
    ...tenantErrors(badTenant, 'No tenant with the given identifier, or no running or queued job'),
    409: failure('The job finished before it could be cancelled'),
  },
}

export const PROCESS_OPERATIONS = { process, schedule, unschedule, status, cancel }

export const PROCESSING_ROUTES: RouteGroup = {
  tag: { name: 'Processing', description: 'Recompute RFM, CLV and churn on demand or on a schedule.' },
  operations: Object.values(PROCESS_OPERATIONS),
}
