import { loadConfig, redactConfig } from '../../common/config.ts'
import { RUNTIME_FLAGS, configFlags, parse } from '../args.ts'

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, RUNTIME_FLAGS)
  if (values.help) {
    process.stdout.write('usage: cdp config [--runtime embedded|distributed] [--data-dir DIR]\n')
    return 0
  }
  const config = loadConfig(process.env, configFlags(values, Object.keys(RUNTIME_FLAGS)))
  process.stdout.write(`${JSON.stringify(redactConfig(config), null, 2)}\n`)
  return 0
}
