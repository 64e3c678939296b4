import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { ConfigError, type Config } from './config.ts'
import type { Logger } from './logger.ts'

/**
 * Secrets at rest (ads tokens, integration credentials): AES-256-GCM under a 256-bit key, a
 * random 16-byte IV per record, the record holding key id, IV, authentication tag and
 * ciphertext in hex. A keyring holds several keys so records written under an old key can be
 * read while `cdp keys rotate` re-encrypts them under the current one.
 */
export interface EncryptedSecret {
  key_id: string
  iv: string
  tag: string
  ciphertext: string
}

export class SecretDecryptError extends Error {}

const KEY_ID_RE = /^[A-Za-z0-9_-]{1,32}$/

export class SecretBox {
  /** keys: id → 32-byte key; `current` encrypts. */
  constructor(private readonly keys: ReadonlyMap<string, Buffer>, readonly current: string) {
    const k = keys.get(current)
    if (!k) throw new Error(`current key ${current} is not in the keyring`)
    for (const [id, key] of keys) if (key.length !== 32 || !KEY_ID_RE.test(id)) throw new Error(`key ${id} must be 32 bytes with an id of [A-Za-z0-9_-]{1,32}`)
  }

  /**
   * `context` (additional authenticated data, not stored): names the row a secret belongs to,
   * e.g. `integrations:7:tenant 3`, so a record copied into another row does not decrypt there.
   */
  encrypt(plain: string, context = ''): EncryptedSecret {
    const iv = randomBytes(16)
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.current)!, iv)
    if (context) cipher.setAAD(Buffer.from(context, 'utf8'))
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    return { key_id: this.current, iv: iv.toString('hex'), tag: cipher.getAuthTag().toString('hex'), ciphertext: ciphertext.toString('hex') }
  }

  decrypt(e: EncryptedSecret, context = ''): string {
    const key = this.keys.get(e.key_id)
    if (!key) throw new SecretDecryptError(`no key ${e.key_id} in the keyring`)
    // A full 16-byte IV and a full 16-byte tag only: a truncated tag would weaken the authentication.
    if (!/^[0-9a-f]{32}$/i.test(e.iv) || !/^[0-9a-f]{32}$/i.test(e.tag) || !/^(?:[0-9a-f]{2})*$/i.test(e.ciphertext)) {
      throw new SecretDecryptError('the secret record is malformed (iv and tag must be 16 bytes in hex)')
    }
    try {
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(e.iv, 'hex'), { authTagLength: 16 })
      if (context) d.setAAD(Buffer.from(context, 'utf8'))
      d.setAuthTag(Buffer.from(e.tag, 'hex'))
      return Buffer.concat([d.update(Buffer.from(e.ciphertext, 'hex')), d.final()]).toString('utf8')
    } catch {
      throw new SecretDecryptError('the secret does not decrypt under its key (tampered, moved from another record, or the wrong key)')
    }
  }

  /** The record under the current key (unchanged when it already is). */
  reencrypt(e: EncryptedSecret, context = ''): EncryptedSecret {
    return e.key_id === this.current ? e : this.encrypt(this.decrypt(e, context), context)
  }
}

/** `id:hex64[,id:hex64…]`, the first being current. */
export function parseKeyring(spec: string): SecretBox {
  const keys = new Map<string, Buffer>()
  let current = ''
  for (const part of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^([A-Za-z0-9_-]{1,32}):([0-9a-fA-F]{64})$/.exec(part)
    if (!m) throw new ConfigError([{ path: 'secretsKeys (CDP_SECRETS_KEYS)', message: 'must be id:<64 hex characters>[,id:<64 hex>…] (a 256-bit key per id; the first encrypts)' }])
    keys.set(m[1]!, Buffer.from(m[2]!, 'hex'))
    current ||= m[1]!
  }
  if (!current) throw new ConfigError([{ path: 'secretsKeys (CDP_SECRETS_KEYS)', message: 'holds no key' }])
  return new SecretBox(keys, current)
}

/**
 * A development secret kept in a file (mode 0600): read when `valid`, else generated once and
 * written. Production never takes this path: its secrets come from the environment.
 */
export function devSecretFile(file: string, valid: (value: string) => boolean, generate: () => string): string {
  let value = ''
  try {
    value = fs.readFileSync(file, 'utf8').trim()
  } catch {
    // not there yet
  }
  if (!valid(value)) {
    fs.mkdirSync(path.dirname(file), { recursive: true })
    value = generate()
    fs.writeFileSync(file, `${value}\n`, { mode: 0o600 })
  }
  fs.chmodSync(file, 0o600)
  return value
}

export const secretsKeyFile = (config: Pick<Config, 'dataDir'>) => path.resolve(config.dataDir, 'secrets-keys')

/**
 * The keyring of this process: CDP_SECRETS_KEYS; in production it is required; in development a
 * key is generated once into `<data dir>/secrets-keys` (mode 0600) with a warning. The keys are
 * never logged.
 */
export function resolveSecretBox(config: Config, logger: Logger): SecretBox {
  if (config.secretsKeys) return parseKeyring(config.secretsKeys)
  if (config.nodeEnv === 'production') {
    throw new ConfigError([{ path: 'secretsKeys (CDP_SECRETS_KEYS)', message: 'is required in production: stored credentials are encrypted under it' }])
  }
  const file = secretsKeyFile(config)
  const spec = devSecretFile(file, (v) => v.length > 0, () => `dev1:${randomBytes(32).toString('hex')}`)
  logger.warn({ file }, 'CDP_SECRETS_KEYS is not set: stored credentials are encrypted under a development key kept in this file; set CDP_SECRETS_KEYS in production')
  return parseKeyring(spec)
}
