// Entry of an analytics body worker (body-workers.ts): the TypeScript sources run through tsx here
// too, as in the main thread (bin/cdp.mjs), so the worker needs no build step either.
import { register } from 'tsx/esm/api'

register()
await import('./body-worker.ts')
