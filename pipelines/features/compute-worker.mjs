// Entry of a compute worker (parallel-fit.ts: CLV fits, CLV sums, a recompute's rows): the TypeScript sources run through tsx here too, as
// in the main thread (bin/cdp.mjs), so the worker needs no build step.
import { register } from 'tsx/esm/api'

register()
await import('./compute-worker.ts')
