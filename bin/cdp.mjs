#!/usr/bin/env node
// The `cdp` command. Runs the TypeScript sources directly through tsx (no build step).
import { register } from 'tsx/esm/api'

// Launched by npm or npx (`npm start`, `npx cdp start`): killing the launcher kills the shell
// between it and this process but not this process, which would run on as an orphan holding the
// port and the data directory's lock. So under npm, this process stops as on SIGTERM (draining)
// as soon as its parent is gone. Started any other way (a service manager, nohup), it stays.
if (process.env.npm_command && process.ppid > 1) {
  const parent = process.ppid
  const watch = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(watch)
    process.kill(process.pid, 'SIGTERM')
  }, 500)
  watch.unref()
}

register()
await import('../cli/main.ts')
