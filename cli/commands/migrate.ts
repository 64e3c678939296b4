import { loadConfig } from '../../common/config.ts'
import { createLogger } from '../../common/logger.ts'
import { openRuntime } from '../../common/runtime/context.ts'
import { RUNTIME_FLAGS, configFlags, parse } from '../args.ts'

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, RUNTIME_FLAGS)
  if (values.help) {
    process.stdout.write('usage: cdp migrate [--runtime embedded|distributed] [--data-dir DIR]\n\nCreates the topics, registers the Avro schemas (BACKWARD) and applies ClickHouse migrations. Idempotent.\n')
    return 0
  }
  const config = loadConfig(process.env, configFlags(values, Object.keys(RUNTIME_FLAGS)))
  const logger = createLogger({ level: config.logLevel })
  const rt = await openRuntime(config, logger)
  await rt.close()
  return 0
}
