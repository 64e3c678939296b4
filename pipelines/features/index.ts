/**
 * The features lane's public surface (docs/architecture.md): the contract between the processing
 * lane and the feature engine (which analyses exist, what a run returns).
 */
export { ANALYSES, type Analysis, type ProcessingEngine, type ProcessingResults, type RunOptions } from './analyses.ts'
