/**
 * Customer-base models for CLV and churn: BG/NBD and MBG/NBD (purchases, P(alive)), Gamma-Gamma (spend)
 * and discounted CLV. Pure functions, no I/O. Formulas and published checks: test/features/clv.test.ts.
 */
export type { RfmObservation } from './patterns.ts'
export {
  LOG_PARAM_BOUND,
  type TransactionFit,
  type TransactionFitOptions,
  type TransactionModel,
  type TransactionModelName,
  type TransactionParams,
} from './transaction-model.ts'
export { bgNbd, fitBgNbd } from './bgnbd.ts'
export { mbgNbd, fitMbgNbd, fitMbgNbdFromDefault, fitMbgNbdSeeded, mbgNbdNeedsSeed, bestMbgNbd, seedSample } from './mbgnbd.ts'
export { compressPatterns, type Patterns } from './patterns.ts'
/** The per-model functions under their own names (both modules export the same set). */
export * as bgnbd from './bgnbd.ts'
export * as mbgnbd from './mbgnbd.ts'
export {
  expectedAverageSpend,
  fitGammaGamma,
  populationMeanSpend,
  totalLogLikelihood as gammaGammaLogLikelihood,
  logLikelihoodGradient as gammaGammaLogLikelihoodGradient,
  type GammaGammaFit,
  type GammaGammaFitOptions,
  type GammaGammaParams,
  type SpendObservation,
} from './gamma-gamma.ts'
export {
  CLV_TIER_HIGH_ABOVE,
  CLV_TIER_MEDIUM_FROM,
  DAYS_PER_MONTH,
  DEFAULT_CLV_MONTHS,
  DEFAULT_MONTHLY_DISCOUNT_RATE,
  TRANSACTION_MODELS,
  clvTier,
  checkHorizon,
  discountedClv,
  discountedSum,
  transactionModel,
  type ClvTier,
  type DiscountedClvInput,
} from './lifetime-value.ts'
export { REFERENCE_FITS, REFERENCE_PRIOR_PRECISION } from './reference-prior.ts'
export { parseCdnowSummary, SummaryParseError, type CdnowSummaryRow } from './summary.ts'
export { hyp2f1Signed, lgamma, logAddExp, logBeta, logHyp2f1, logSumExp } from './special.ts'
export { minimizeWithWarmStart, nelderMead, newtonPolish, type MinimizeResult, type NelderMeadOptions, type NewtonOptions } from './optimize.ts'
