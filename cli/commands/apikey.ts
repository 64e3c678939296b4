import { loadConfig } from '../../common/config.ts'
import { createLogger } from '../../common/logger.ts'
import { withAdminStore } from '../admin-store.ts'
import { ApiKeyStore } from '../../common/store/api-keys.ts'
import { RUNTIME_FLAGS, UsageError, configFlags, parseAction } from '../args.ts'

const FLAGS = { ...RUNTIME_FLAGS, tenant: { type: 'string' }, name: { type: 'string' }, id: { type: 'string' } } as const

const HELP = `usage: cdp apikey create --tenant N [--name LABEL]
       cdp apikey list [--tenant N]
       cdp apikey revoke --id KEY_ID
       (each also takes --data-dir DIR, --runtime embedded|distributed)

Tenant API keys for the query service (docs/auth.md). \`create\` prints the key once, as JSON on
stdout: only its SHA-256 is stored, so it cannot be shown again. \`list\` shows ids, names and
dates, never keys. \`revoke\` takes effect on running APIs within a minute (their key cache).
On the embedded runtime the store (chdb) belongs to one process: stop \`cdp start\` first.
`

function tenantOf(v: string | undefined): number {
  const n = v !== undefined && /^\d{1,16}$/.test(v) ? Number(v) : NaN
  if (!Number.isSafeInteger(n) || n <= 0) throw new UsageError('--tenant must be a positive integer')
  return n
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseAction(argv, FLAGS, HELP)
  if (parsed.exit !== null) return parsed.exit
  const { action, values } = parsed
  if (!['create', 'list', 'revoke'].includes(action)) throw new UsageError(`unknown apikey action '${action}': create, list or revoke`)
  const tenant = action === 'create' || (action === 'list' && values.tenant !== undefined) ? tenantOf(values.tenant) : undefined
  if (action === 'revoke' && !values.id) throw new UsageError('revoke needs --id KEY_ID (see `cdp apikey list`)')

  const config = loadConfig(process.env, configFlags(values, Object.keys(RUNTIME_FLAGS)))
  const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel })
  return withAdminStore('apikey', config, logger, async (store) => {
    const keys = new ApiKeyStore(store)
    if (action === 'create') {
      const created = await keys.create(tenant!, values.name ?? '')
      process.stdout.write(`${JSON.stringify(created)}\n`)
      process.stderr.write('Store this key now: only its hash is kept, it cannot be shown again.\n')
    } else if (action === 'list') {
      process.stdout.write(`${JSON.stringify({ keys: await keys.list(tenant) })}\n`)
    } else {
      const revoked = await keys.revoke(values.id!)
      if (!revoked) {
        process.stderr.write(`cdp apikey: no key with id ${values.id}\n`)
        return 1
      }
      process.stdout.write(`${JSON.stringify(revoked)}\n`)
    }
    return 0
  })
}
