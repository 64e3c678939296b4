import { pino, type Logger } from 'pino'
import pretty from 'pino-pretty'

export type { Logger }

/** Paths pino blanks in every log line, wherever a secret could travel. */
export const REDACT_PATHS = [
  'password', '*.password', 'secret', '*.secret', 'token', '*.token',
  'clickhousePassword', '*.clickhousePassword', 'schemaRegistryPassword', '*.schemaRegistryPassword',
  'app_token', '*.app_token', 'app_secret', '*.app_secret', 'client_secret', '*.client_secret',
  'access_token', '*.access_token', 'refresh_token', '*.refresh_token', 'developer_token', '*.developer_token',
  'authorization', '*.authorization', 'req.headers.authorization', 'req.headers["x-api-key"]', '*.headers["x-api-key"]',
  'headers.authorization', '*.headers.authorization', 'headers.cookie', '*.headers.cookie', 'req.headers.cookie',
  'adminToken', '*.adminToken', 'api_key', '*.api_key', 'apiKey', '*.apiKey', 'key_hash', '*.key_hash',
  'credentials', '*.credentials', 'webhook_secret', '*.webhook_secret',
  // One level deeper (pino's `*` matches one key): a record or body logged inside another object.
  '*.*.password', '*.*.secret', '*.*.token', '*.*.app_token', '*.*.app_secret', '*.*.client_secret', '*.*.access_token',
  '*.*.refresh_token', '*.*.developer_token', '*.*.credentials', '*.*.webhook_secret', '*.*.authorization',
]

export type LogFormat = 'auto' | 'json' | 'pretty'

/**
 * Where log lines go without an explicit destination: readable, coloured lines on a terminal
 * (pino-pretty, synchronous so nothing is lost on exit), one JSON object per line otherwise (a
 * pipe, a file, a container's log collector). `CDP_LOG_FORMAT` forces either.
 */
function defaultDestination(format: LogFormat): pino.DestinationStream | undefined {
  if (format === 'json' || (format === 'auto' && !process.stdout.isTTY)) return undefined
  return pretty({ sync: true, colorize: process.stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
}

export function createLogger(opts: { level?: string; name?: string; destination?: pino.DestinationStream; format?: LogFormat } = {}): Logger {
  const format = opts.format ?? ((process.env.CDP_LOG_FORMAT as LogFormat | undefined) || 'auto')
  return pino(
    {
      name: opts.name ?? 'cdp',
      level: opts.level ?? process.env.LOG_LEVEL ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '***' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    opts.destination ?? defaultDestination(format),
  )
}
