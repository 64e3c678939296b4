// Entry of the projection's decode thread (order-rows.ts): the TypeScript sources run through tsx here too, as in the main
// thread (bin/cdp.mjs), so the worker needs no build step.
import { register } from 'tsx/esm/api'

register()
await import('./order-rows-worker.ts')
