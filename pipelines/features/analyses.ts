/**
 * The contract between the processing API (pipelines/processing) and the feature engine
 * (pipelines/features/recompute.ts): which analyses a processing run can do and what each
 * reports. Shapes follow the spec's "Endpoint 1 200 response" (cdp-service-interface.md).
 */
export const ANALYSES = ['rfm', 'clv', 'churn'] as const
export type Analysis = (typeof ANALYSES)[number]

export interface RfmRunResult {
  total_processed: number
  segments: { segment: string; count: number; percentage: number }[]
  /** Seconds. */
  processing_time: number
  errors: number
}

export interface ClvRunResult {
  processed: number
  avg_clv: number
  processing_time: number
}

export interface ChurnRunResult {
  processed: number
  at_risk: number
  /** Fraction 0..1. */
  churn_rate: number
  processing_time: number
}

export interface ProcessingResults {
  /** The reference date the run aged customers against (the router puts it beside `results`). */
  metadata?: {
    reference_date: string
    reference_date_setting: string
    reference_date_source: 'setting' | 'as_of'
    /** With `clv`: the transaction model and how its parameters were estimated (model.ts, ClvMethod); null without buyers. */
    clv_model?: string | null
    clv_method?: string | null
  }
  rfm?: RfmRunResult
  clv?: ClvRunResult
  churn?: ChurnRunResult
}

export interface RunOptions {
  analyses: Analysis[]
  /** Customers written per ClickHouse insert. */
  batchSize: number
  force: boolean
  /** Aborted by the cancel endpoint; the engine stops between batches and throws an AbortError. */
  signal: AbortSignal
  onProgress?(done: number, total: number): void
}

/** A full recompute of one tenant's features from its stored events. */
export interface ProcessingEngine {
  /** A tenant is known once any customer or order of it is stored. */
  tenantExists(tenantId: number): Promise<boolean>
  run(tenantId: number, opts: RunOptions): Promise<ProcessingResults>
  /**
   * The tenant's features as of the end of one day (YYYY-MM-DD), orders after it left out, written
   * to the as-of table only (customer_features_as_of): the tenant's own rows, model and setting
   * stay as they are. For one request's `as_of`.
   */
  runAsOf?(tenantId: number, asOf: string, analyses: Analysis[]): Promise<ProcessingResults>
}
