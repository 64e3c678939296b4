/** The ads platform client: hashing, batching, errors, retries, limits, HTTP client, webhook helpers. */
export * from './types.ts'
export * from './hashing.ts'
export * from './errors.ts'
export * from './limits.ts'
export * from './batching.ts'
export * from './client.ts'
export * from './webhook.ts'
