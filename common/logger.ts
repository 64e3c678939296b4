import { pino, type Logger } from 'pino'

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

export function createLogger(opts: { level?: string; name?: string; destination?: pino.DestinationStream } = {}): Logger {
  return pino(
    {
      name: opts.name ?? 'cdp',
      level: opts.level ?? process.env.LOG_LEVEL ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '***' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    opts.destination,
  )
}
