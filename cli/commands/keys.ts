import { randomBytes } from 'node:crypto'
import { loadConfig } from '../../common/config.ts'
import { createLogger } from '../../common/logger.ts'
import { resolveSecretBox } from '../../common/secrets.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import type { SecretBox } from '../../common/secrets.ts'
import { AudienceSyncStore } from '../../pipelines/audience-sync/store.ts'
import { rotateIntegrationCredentials } from '../../pipelines/connectors/store.ts'
import { withAdminStore } from '../admin-store.ts'
import { RUNTIME_FLAGS, UsageError, configFlags, parseAction } from '../args.ts'

const FLAGS = { ...RUNTIME_FLAGS, id: { type: 'string' } } as const

const HELP = `usage: cdp keys generate [--id ID]
       cdp keys rotate [--data-dir DIR] [--runtime embedded|distributed]

Secrets at rest (ads tokens, integration credentials) are AES-256-GCM records under the keyring
CDP_SECRETS_KEYS = "id:<64 hex>[,id:<64 hex>…]"; the first key encrypts, the others still decrypt.

  generate  prints a new key entry "id:<64 hex>" (256 random bits) to put first in CDP_SECRETS_KEYS
  rotate    re-encrypts every stored secret that is not under the first key; afterwards the old
            keys can be dropped from CDP_SECRETS_KEYS. Prints {"current_key", "rotated": {…}}.
            On the embedded runtime, stop \`cdp start\` first (chdb: one process per data directory).
`

/** Each owner of stored secrets re-encrypts its own records. */
const ROTATIONS: Record<string, (store: Store, box: SecretBox) => Promise<number>> = {
  audience_syncs: (store, box) => new AudienceSyncStore(store, box).rotateSecrets(),
  integrations: (store, box) => rotateIntegrationCredentials(store, box),
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseAction(argv, FLAGS, HELP)
  if (parsed.exit !== null) return parsed.exit
  const { action, values } = parsed
  if (action === 'generate') {
    const id = values.id ?? `k${new Date().toISOString().slice(0, 10).replaceAll('-', '')}`
    if (!/^[A-Za-z0-9_-]{1,32}$/.test(id)) throw new UsageError('--id must be 1-32 characters of [A-Za-z0-9_-]')
    process.stdout.write(`${id}:${randomBytes(32).toString('hex')}\n`)
    return 0
  }
  if (action !== 'rotate') throw new UsageError(`unknown keys action '${action}': generate or rotate`)
  const config = loadConfig(process.env, configFlags(values, Object.keys(RUNTIME_FLAGS)))
  const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel })
  const box = resolveSecretBox(config, logger)
  return withAdminStore('keys', config, logger, async (store) => {
    const rotated: Record<string, number> = {}
    for (const [name, rotate] of Object.entries(ROTATIONS)) rotated[name] = await rotate(store, box)
    process.stdout.write(`${JSON.stringify({ current_key: box.current, rotated })}\n`)
    return 0
  })
}
