/**
 * The prediction-quality report of a tenant (GET /api/v2/cdp/analytics/clv/validation): its
 * customers' counting orders up to the reference date, read like the batch recompute reads them,
 * checked by validation.ts with the calibration ending on `calibrationEnd`. docs/prediction-quality.md.
 */
import type { Store } from '../../common/store/clickhouse.ts'
import { endOfDay, type Reference } from '../../common/reference-date.ts'
import { loadTenantCustomers } from './recompute.ts'
import { utcDay } from './order-facts.ts'
import { validatePredictions, type ValidationReport } from './validation.ts'
import type { TransactionModelName } from './clv/index.ts'

export async function predictionQuality(store: Store, tenantId: number, calibrationEnd: string, ref: Reference, model: TransactionModelName = 'mbgnbd'): Promise<ValidationReport> {
  const customers = await loadTenantCustomers(store, tenantId, ref.cutoffMs)
  return validatePredictions({
    customers: customers.map((c) => c.history),
    calibrationEndDay: utcDay(endOfDay(calibrationEnd)),
    holdoutEndDay: utcDay(ref.ms),
    model,
  })
}
