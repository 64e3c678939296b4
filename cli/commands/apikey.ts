import { UsageError } from '../args.ts'

export async function run(_argv: string[]): Promise<number> {
  throw new UsageError('cdp apikey is not implemented yet')
}
