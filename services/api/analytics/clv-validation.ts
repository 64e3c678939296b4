/**
 * GET /api/v2/cdp/analytics/clv/validation?tenant_id=N&calibration_end=YYYY-MM-DD — how good the
 * CLV and churn predictions are on the tenant's own history: the model fitted on the orders up to
 * `calibration_end`, its predictions for the holdout (the days after it up to the tenant's
 * reference date) against what the customers did (pipelines/features/validation.ts). Read how:
 * docs/prediction-quality.md.
 */
import express, { type Router } from 'express'
import { z } from 'zod'
import { predictionQuality } from '../../../pipelines/features/prediction-quality.ts'
import { VALIDATION_BUCKETS, ValidationRangeError } from '../../../pipelines/features/validation.ts'
import { loadModels } from '../../../pipelines/features/feature-store.ts'
import { CHURN_RISKS } from '../../../pipelines/features/churn.ts'
import { tenantExists } from '../../../common/store/tenants.ts'
import { referenceDate, referenceMetadata } from '../../../common/reference-date.ts'
import { failure, parseRequest, sendError } from '../errors.ts'
import { json, route, shared, type Operation, type RouteGroup } from '../routes.ts'
import { Count, DateOnly, Fraction } from '../response-schemas.ts'
import { PROCESSING_RESULTS_TTL_MS } from './cache.ts'
import { analyticsBody } from './endpoint.ts'
import { ctxFor, type AnalyticsDeps } from './router.ts'
import { ReferenceSource } from './reference.ts'

export const CLV_VALIDATION_PATH = '/api/v2/cdp/analytics/clv/validation'

const Query = z.strictObject({
  tenant_id: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  calibration_end: DateOnly.meta({ description: 'Last day (UTC, inclusive) of the calibration period; the holdout runs from the next day to the tenant\'s reference date' }),
  model: z.enum(['mbgnbd', 'bgnbd']).optional().meta({ description: "The transaction model (default: the tenant's, else mbgnbd)" }),
})

const Mean = z.number().min(0)
const Report = z
  .strictObject({
    model: z.enum(['mbgnbd', 'bgnbd']),
    method: z.enum(['maximum_likelihood', 'reference_prior']),
    parameters: z.strictObject({ r: z.number(), alpha: z.number(), a: z.number(), b: z.number() }),
    calibration: z.strictObject({ end: DateOnly, customers: Count, repeat_buyers: Count }),
    holdout: z.strictObject({ start: DateOnly, end: DateOnly, days: z.int().min(1) }),
    purchases: z.strictObject({
      buckets: z.array(
        z.strictObject({
          frequency_cal: z.enum(VALIDATION_BUCKETS).meta({ description: 'Repeat purchase days in the calibration period (7+: seven or more)' }),
          customers: Count,
          actual_purchases: Count.meta({ description: 'Purchase days in the holdout' }),
          predicted_purchases: Mean,
          actual_mean: Mean,
          predicted_mean: Mean,
          p_alive_mean: Fraction,
          purchased_share: Fraction,
        }),
      ),
      totals: z.strictObject({ customers: Count, actual_purchases: Count, predicted_purchases: Mean, mae: Mean, rmse: Mean, bias: z.number().nullable() }),
    }),
    churn: z.strictObject({
      levels: z.array(z.strictObject({ churn_risk: z.enum(CHURN_RISKS), customers: Count, churn_probability_mean: Fraction, no_purchase_share: Fraction })),
      p_alive_mean: Fraction,
      purchased_share: Fraction,
      brier_score: Fraction.nullable(),
    }),
  })
  .meta({ id: 'PredictionQuality' })

const getValidation: Operation = {
  method: 'get',
  path: CLV_VALIDATION_PATH,
  operationId: 'getClvValidation',
  summary: 'How good the CLV and churn predictions are on the tenant\'s own history (calibration / holdout)',
  description:
    'Fits the model on the orders up to `calibration_end` and predicts the holdout, the days after it up to the tenant\'s reference date: per calibration frequency (0…6, 7+) the customers, actual and predicted purchase days (sums and means), mean P(alive) and who bought; totals with MAE, RMSE and bias; per churn level at the calibration end the mean churn probability against the share who bought nothing, and the Brier score. Chart-ready: buckets on x, actual and predicted means as two series. Cached for an hour per tenant and calibration end. docs/prediction-quality.md.',
  request: { query: Query },
  responses: {
    200: json('The report in `data`', analyticsBody(Report)),
    400: failure('Invalid query (`details.errors[]`), a calibration end not before the reference date, or nobody bought by the calibration end (`Validation not possible`)'),
    403: shared('Forbidden'),
    404: failure('Tenant not found'),
  },
}

export const CLV_VALIDATION_ROUTES: RouteGroup = {
  tag: { name: 'Prediction quality', description: 'How well the CLV and churn models predicted a holdout period of the tenant\'s own history.' },
  operations: [getValidation],
}

export function clvValidationRouter(deps: AnalyticsDeps): Router {
  const router = express.Router()
  const ctx = ctxFor(deps)
  const references = deps.references ?? new ReferenceSource(deps.store, deps.now)
  route(router, getValidation, async (req, res, next) => {
    try {
      const parsed = parseRequest(req, res, { query: Query }, 'Invalid query parameters')
      if (!parsed) return
      const q = parsed.query
      if (!(await tenantExists(ctx.store, q.tenant_id))) return sendError(res, 404, 'Tenant not found', { tenant_id: q.tenant_id })
      const ref = await references.reference(q.tenant_id)
      if (q.calibration_end >= referenceDate(ref)) {
        return sendError(res, 400, 'Validation not possible', `calibration_end must be before the reference date ${referenceDate(ref)}: the holdout is the time after it`)
      }
      const model = q.model ?? (await loadModels(ctx.store, [q.tenant_id])).get(q.tenant_id)?.clv?.model ?? 'mbgnbd'
      const key = `${CLV_VALIDATION_PATH}?${q.calibration_end}&${model}&${referenceDate(ref)}`
      let report = ctx.cache.get(q.tenant_id, key)
      if (report === undefined) {
        const epoch = ctx.cache.epoch(q.tenant_id)
        try {
          report = await predictionQuality(ctx.store, q.tenant_id, q.calibration_end, ref, model)
        } catch (err) {
          if (err instanceof ValidationRangeError) return sendError(res, 400, 'Validation not possible', err.message)
          throw err
        }
        ctx.cache.set(q.tenant_id, key, report, PROCESSING_RESULTS_TTL_MS, epoch)
      }
      res.set('X-Reference-Date', referenceDate(ref))
      res.json({ success: true, data: report, metadata: referenceMetadata(ref) })
    } catch (err) {
      next(err)
    }
  })
  return router
}
