/**
 * BG/NBD (Fader, Hardie & Lee 2005, "Counting your customers the easy way"): the beta-geometric
 * family (beta-geometric.ts) where only repeat purchases can end a customer's life. A customer with
 * no repeat purchase can never have dropped out, so P(alive | x = 0) = 1: use MBG/NBD (mbgnbd.ts)
 * where one-time buyers need a churn probability.
 */
import { betaGeometricFamily } from './beta-geometric.ts'
import type { TransactionModel } from './transaction-model.ts'

const family = betaGeometricFamily('bgnbd', false)

export const {
  patternLogLikelihood,
  patternLogLikelihoodGradient,
  logLikelihood,
  totalLogLikelihood,
  fit: fitBgNbd,
  expectedPurchases,
  expectedPurchasesIfAlive,
  expectedPurchasesUnconditional,
  probabilityAlive,
} = family

export const bgNbd: TransactionModel = { name: 'bgnbd', ...family }
