import { loadConfig } from '../../common/config.ts'
import { createLogger } from '../../common/logger.ts'
import { createProgress } from '../../common/progress.ts'
import { openRuntime } from '../../common/runtime/context.ts'
import { replayProjections } from '../../pipelines/projection/replay.ts'
import { replayDemographics } from '../../pipelines/demographics/replay.ts'
import { loadReferenceDirectory } from '../../pipelines/demographics/reference-loader.ts'
import type { ReplayProgress } from '../../common/runtime/replay.ts'
import { RUNTIME_FLAGS, configFlags, parse } from '../args.ts'

const HELP = `usage: cdp replay [--runtime embedded|distributed] [--data-dir DIR]

Drops the rows of the raw projections (order_events, orders, customers) and of the demographic
enrichment (customer_demographics) and rebuilds them from the event log, from the first offset.
Stop the process running the features role first.
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
  try {
    const reference = config.demographicsReferenceDir ? loadReferenceDirectory(config.demographicsReferenceDir) : undefined
    const out: Record<string, unknown> = {}
    for (const [label, replay] of [
      ['projections', (onProgress: (p: ReplayProgress) => void) => replayProjections(rt, { onProgress })],
      ['demographics', (onProgress: (p: ReplayProgress) => void) => replayDemographics(rt, { reference, onProgress })],
    ] as const) {
      let bar: ReturnType<typeof createProgress> | null = null
      let done = 0
      const result = await replay(({ total, remaining }) => {
        bar ??= createProgress({ label: `replay ${label}`, total })
        bar.tick(total - remaining - done)
        done = total - remaining
      })
      ;(bar as ReturnType<typeof createProgress> | null)?.done()
      out[label] = { replayed_records: result.records, seconds: result.seconds }
    }
    process.stdout.write(`${JSON.stringify(out)}\n`)
  } finally {
    await rt.close()
  }
  return 0
}
