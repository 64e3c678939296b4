// Entry of the feature consumer's decode thread (input-thread.ts): the TypeScript sources run through tsx here too, as in the main
// thread (bin/cdp.mjs), so the worker needs no build step.
import { register } from 'tsx/esm/api'

register()
await import('./input-worker.ts')
