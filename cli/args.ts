import { parseArgs, type ParseArgsConfig } from 'node:util'
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../common/retry.ts'

export class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>

/** Flags shared by every command that opens the runtime; they override the environment. */
export const RUNTIME_FLAGS = {
  runtime: { type: 'string' },
  'data-dir': { type: 'string' },
  'log-level': { type: 'string' },
  partitions: { type: 'string' },
} as const satisfies Options

export function parse<O extends Options>(argv: string[], options: O) {
  try {
    return parseArgs({ args: argv, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true })
  } catch (e) {
    throw new UsageError((e as Error).message)
  }
}

/**
 * A command whose first positional is an action (`cdp keys rotate`, `cdp apikey create`): with
 * `--help`, or without an action, the help is printed and `exit` says the code (0 when asked
 * for, 2 when the action is missing).
 */
export function parseAction<O extends Options>(argv: string[], options: O, help: string): { exit: number } | { exit: null; action: string; values: ReturnType<typeof parse<O>>['values'] } {
  const { values, positionals } = parse(argv, options)
  const action = positionals[0]
  if ((values as { help?: boolean }).help || !action) {
    process.stdout.write(help)
    return { exit: (values as { help?: boolean }).help ? 0 : 2 }
  }
  return { exit: null, action, values }
}

/** Maps kebab-case flags onto config keys (camelCase), skipping the ones that are not config. */
export function configFlags(values: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const k of keys) {
    if (values[k] === undefined) continue
    out[k.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())] = values[k]
  }
  return out
}

/** `--retry-for SECONDS` (0 or more; 0: no retry) as a retry policy; without it the default (60 s). */
export function retryPolicyFlag(v: string | undefined): RetryPolicy {
  const seconds = v === undefined ? DEFAULT_RETRY_POLICY.retryForMs / 1000 : Number(v)
  if (!Number.isFinite(seconds) || seconds < 0 || v?.trim() === '') throw new UsageError(`--retry-for must be a number of seconds (0 or more), got "${v}"`)
  return { ...DEFAULT_RETRY_POLICY, retryForMs: seconds * 1000 }
}

/** A process that cannot start for a reason its operator can fix (a port in use, a held lock): one line, exit 1, no stack. */
export class StartupError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'StartupError'
  }
}
