/**
 * The reference fits a small shop's CLV starts from (docs/features.md, "CLV for small shops").
 * Pure constants: the maximum-likelihood fits of each transaction model on the CDNOW calibration
 * period (2,357 customers, 1997-01-01 to 1997-09-30, the setting of Fader, Hardie and Lee 2005),
 * in days, as lifetimes 0.11.3 computes them (`calibration_and_holdout_data(..., freq='D')`,
 * BetaGeoFitter / ModifiedBetaGeoFitter without penalty); BG/NBD's equals the published weekly fit
 * (r 0.243, α 4.414 weeks, a 0.793, b 2.426) with α × 7. test/features/clv.test.ts refits them.
 */
import type { TransactionModelName, TransactionParams } from './transaction-model.ts'

export const REFERENCE_FITS: Readonly<Record<TransactionModelName, TransactionParams>> = {
  bgnbd: { r: 0.24259454342, alpha: 30.8952190125, a: 0.79292183335, b: 2.4259057287 },
  mbgnbd: { r: 0.52484290315, alpha: 43.2815723508, a: 0.89135951727, b: 1.6140029312 },
}

/**
 * Precision of the prior on each log-parameter (sd 1/√20 ≈ 0.22, about ±25 %): with a handful of
 * customers the estimate stays near the reference shop's; the tenant's own likelihood grows with
 * every customer while the prior does not, so the estimate moves toward the tenant's own fit.
 */
export const REFERENCE_PRIOR_PRECISION = 20
