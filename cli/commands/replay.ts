import { loadConfig } from '../../common/config.ts'
import { createLogger } from '../../common/logger.ts'
import { createProgress } from '../../common/progress.ts'
import { openRuntime } from '../../common/runtime/context.ts'
import { replayProjections } from '../../pipelines/projection/replay.ts'
import { RUNTIME_FLAGS, configFlags, parse } from '../args.ts'

const HELP = `usage: cdp replay [--runtime embedded|distributed] [--data-dir DIR]

Drops the rows of the raw projections (order_events, orders, customers) and rebuilds them from
the event log, from the first offset. Stop the process running the features role first.
`

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, RUNTIME_FLAGS)
  if (values.help) {
    process.stdout.write(HELP)
    return 0
  }
  const config = loadConfig(process.env, configFlags(values, Object.keys(RUNTIME_FLAGS)))
  const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel })
  const rt = await openRuntime(config, logger)
  const bar: { progress: ReturnType<typeof createProgress> | null } = { progress: null }
  let done = 0
  try {
    const result = await replayProjections(rt, {
      onProgress: ({ total, remaining }) => {
        bar.progress ??= createProgress({ label: 'replay', total })
        bar.progress.tick(total - remaining - done)
        done = total - remaining
      },
    })
    bar.progress?.done()
    process.stdout.write(`${JSON.stringify({ replayed_records: result.records, seconds: result.seconds })}\n`)
  } finally {
    await rt.close()
  }
  return 0
}
