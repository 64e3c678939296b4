import { createHash, randomBytes } from 'node:crypto'
import type { Store } from './clickhouse.ts'

/**
 * Tenant API keys, stored in ClickHouse (`api_keys`, migration 004) as SHA-256 hashes only.
 *
 * A key is `cdp_<tenant>_<43 base64url characters>`: 32 random bytes (256 bits). With that much
 * entropy a slow password hash (scrypt, bcrypt) buys nothing: there is no dictionary to guess
 * from and 2^256 preimages to search, so a plain SHA-256 is as safe and lets a request be checked
 * with one hash and one indexed lookup. The plain key exists only in the output of `create`.
 */
export interface ApiKeyRecord {
  key_id: string
  tenant_id: number
  name: string
  key_prefix: string
  created_at: string
  revoked_at: string | null
}

export interface CreatedKey extends ApiKeyRecord {
  /** The plain key: shown once, never stored. */
  key: string
}

/** What the auth middleware needs: a plain key to its tenant, or null when unknown or revoked. */
export interface KeyVerifier {
  verify(plainKey: string): Promise<{ keyId: string; tenantId: number } | null>
}

const KEY_RE = /^cdp_(\d{1,16})_([A-Za-z0-9_-]{43})$/

export function hashKey(plainKey: string): string {
  return createHash('sha256').update(plainKey, 'utf8').digest('hex')
}

/** True when the string has the shape of a tenant key (cheap check before any lookup). */
export function looksLikeKey(s: string): boolean {
  return KEY_RE.test(s)
}

export function generateKey(tenantId: number): string {
  return `cdp_${tenantId}_${randomBytes(32).toString('base64url')}`
}

const toIso = (ms: number) => new Date(ms).toISOString()
const fromCh = (s: string | null) => (s === null ? null : new Date(`${s.replace(' ', 'T')}Z`).toISOString())

export class ApiKeyStore implements KeyVerifier {
  constructor(private readonly store: Store, private readonly now: () => number = Date.now) {}

  async create(tenantId: number, name = ''): Promise<CreatedKey> {
    if (!Number.isSafeInteger(tenantId) || tenantId <= 0) throw new Error('tenant must be a positive integer')
    const key = generateKey(tenantId)
    const row = {
      key_id: `key_${randomBytes(8).toString('hex')}`,
      tenant_id: tenantId,
      name,
      key_prefix: key.slice(0, `cdp_${tenantId}_`.length + 4),
      key_hash: hashKey(key),
      created_at: toIso(this.now()),
      revoked_at: null,
      version: 1,
    }
    await this.store.insert({ table: 'api_keys', values: [row], format: 'JSONEachRow' })
    const { key_hash: _h, version: _v, ...rest } = row
    return { ...rest, key }
  }

  /** Keys (never the key itself or its hash), newest first; all tenants when no tenant is given. */
  async list(tenantId?: number): Promise<ApiKeyRecord[]> {
    const rs = await this.store.query({
      query: `SELECT key_id, tenant_id, name, key_prefix, toString(created_at) AS created_at, if(isNull(revoked_at), NULL, toString(revoked_at)) AS revoked_at
              FROM api_keys FINAL ${tenantId === undefined ? '' : 'WHERE tenant_id = {t:UInt64}'} ORDER BY created_at DESC, key_id`,
      query_params: tenantId === undefined ? {} : { t: tenantId },
      format: 'JSONEachRow',
    })
    const rows = await rs.json<ApiKeyRecord>()
    return rows.map((r) => ({ ...r, tenant_id: Number(r.tenant_id), created_at: fromCh(r.created_at)!, revoked_at: fromCh(r.revoked_at) }))
  }

  /** Marks a key revoked. Returns the key's record, or null when there is no such key. Idempotent. */
  async revoke(keyId: string): Promise<ApiKeyRecord | null> {
    const rs = await this.store.query({
      query: `SELECT key_id, tenant_id, name, key_prefix, key_hash, toString(created_at) AS created_at, if(isNull(revoked_at), NULL, toString(revoked_at)) AS revoked_at
              FROM api_keys FINAL WHERE key_id = {id:String}`,
      query_params: { id: keyId },
      format: 'JSONEachRow',
    })
    const [row] = await rs.json<ApiKeyRecord & { key_hash: string }>()
    if (!row) return null
    const created = fromCh(row.created_at)!
    if (row.revoked_at !== null) return { key_id: row.key_id, tenant_id: Number(row.tenant_id), name: row.name, key_prefix: row.key_prefix, created_at: created, revoked_at: fromCh(row.revoked_at) }
    const revokedAt = toIso(this.now())
    await this.store.insert({
      table: 'api_keys',
      values: [{ ...row, tenant_id: Number(row.tenant_id), created_at: created, revoked_at: revokedAt, version: 2 }],
      format: 'JSONEachRow',
    })
    return { key_id: row.key_id, tenant_id: Number(row.tenant_id), name: row.name, key_prefix: row.key_prefix, created_at: created, revoked_at: revokedAt }
  }

  async verify(plainKey: string): Promise<{ keyId: string; tenantId: number } | null> {
    const m = KEY_RE.exec(plainKey)
    if (!m) return null
    const rs = await this.store.query({
      query: 'SELECT key_id, tenant_id FROM api_keys FINAL WHERE key_hash = {h:String} AND isNull(revoked_at) LIMIT 1',
      query_params: { h: hashKey(plainKey) },
      format: 'JSONEachRow',
    })
    const [row] = await rs.json<{ key_id: string; tenant_id: number }>()
    // The tenant in the key's text is a hint for humans; the stored row is the authority.
    return row ? { keyId: row.key_id, tenantId: Number(row.tenant_id) } : null
  }
}
