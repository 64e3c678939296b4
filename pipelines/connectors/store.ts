/**
 * Integrations in ClickHouse (`integrations`, migration 007). Credentials are sealed with the
 * SecretBox (AES-256-GCM, key id + IV + tag + ciphertext in hex) as one JSON record of all the
 * type's credential fields, and decrypted only to talk to the external system; the webhook secret
 * likewise. Every write inserts a new version of the row (ReplacingMergeTree, read with FINAL).
 */
import { randomUUID } from 'node:crypto'
import type { Store } from '../../common/store/clickhouse.ts'
import type { EncryptedSecret, SecretBox } from '../../common/secrets.ts'
import type { Credentials, IntegrationType } from './sources/types.ts'
import type { IntegrationConfiguration } from './schemas.ts'
import { iso } from '../../common/time.ts'
import { nextVersion } from '../../common/store/versions.ts'

export interface IntegrationRecord {
  id: number
  tenant_id: number
  integration_type: IntegrationType
  account_name: string | null
  environment: string | null
  account_key: string
  is_active: boolean
  validation_status: string
  configuration: IntegrationConfiguration
  has_webhook_secret: boolean
  created_at: number
  updated_at: number
  deleted_at: number | null
}

interface Row {
  integration_id: number
  tenant_id: number
  integration_type: IntegrationType
  account_name: string | null
  environment: string | null
  account_key: string
  is_active: number
  validation_status: string
  configuration: string
  credentials: string
  webhook_secret: string
  created_at_ms: number
  updated_at_ms: number
  deleted_at_ms: number | null
}

const COLUMNS = `integration_id, tenant_id, integration_type, account_name, environment, account_key, is_active, validation_status, configuration, credentials, webhook_secret,
                 toUnixTimestamp64Milli(created_at) AS created_at_ms, toUnixTimestamp64Milli(updated_at) AS updated_at_ms, toUnixTimestamp64Milli(deleted_at) AS deleted_at_ms`



function toRecord(r: Row): IntegrationRecord {
  return {
    id: Number(r.integration_id),
    tenant_id: Number(r.tenant_id),
    integration_type: r.integration_type,
    account_name: r.account_name,
    environment: r.environment,
    account_key: r.account_key,
    is_active: Number(r.is_active) === 1,
    validation_status: r.validation_status,
    configuration: JSON.parse(r.configuration) as IntegrationConfiguration,
    has_webhook_secret: r.webhook_secret !== '',
    created_at: Number(r.created_at_ms),
    updated_at: Number(r.updated_at_ms),
    deleted_at: r.deleted_at_ms === null ? null : Number(r.deleted_at_ms),
  }
}

export interface NewIntegration {
  tenant_id: number
  integration_type: IntegrationType
  account_name: string | null
  environment: string | null
  account_key: string
  configuration: IntegrationConfiguration
  credentials: Credentials
  webhook_secret: string | null
}

export interface IntegrationChange {
  is_active?: boolean
  validation_status?: string
  configuration?: IntegrationConfiguration
  /** The whole new credential set (plain); absent: the sealed one is kept as it is. */
  credentials?: Credentials
  /** A new secret, null to remove it, absent to keep it. */
  webhook_secret?: string | null
  deleted_at?: number
}

export class IntegrationStore {
  constructor(private readonly store: Store, private readonly secrets: SecretBox, private readonly now: () => number = Date.now) {}

  private async rows(where: string, params: Record<string, unknown>): Promise<Row[]> {
    const rs = await this.store.query({ query: `SELECT ${COLUMNS} FROM integrations FINAL WHERE ${where} ORDER BY integration_id`, query_params: params, format: 'JSONEachRow' })
    return rs.json<Row>()
  }

  private async row(id: number): Promise<Row | null> {
    const [r] = await this.rows('integration_id = {i:UInt64}', { i: id })
    return r ?? null
  }

  /** The integration, deleted ones too (callers answer 404 for those). */
  async get(id: number): Promise<IntegrationRecord | null> {
    const r = await this.row(id)
    return r ? toRecord(r) : null
  }

  /** Integrations not deleted: of one tenant, or of all. */
  async list(tenantId: number | null = null): Promise<IntegrationRecord[]> {
    const rows = await this.rows(`deleted_at IS NULL${tenantId === null ? '' : ' AND tenant_id = {t:UInt64}'}`, { t: tenantId ?? 0 })
    return rows.map(toRecord)
  }

  async findByAccount(tenantId: number, type: IntegrationType, accountKey: string): Promise<IntegrationRecord | null> {
    const [r] = await this.rows('deleted_at IS NULL AND tenant_id = {t:UInt64} AND integration_type = {y:String} AND account_key = {k:String}', { t: tenantId, y: type, k: accountKey })
    return r ? toRecord(r) : null
  }

  /** The plain credentials: only to call the external system, never to answer or log. */
  async credentials(id: number): Promise<Credentials> {
    const r = await this.row(id)
    if (!r) throw new Error(`no integration ${id}`)
    return JSON.parse(this.secrets.decrypt(JSON.parse(r.credentials) as EncryptedSecret, sealContext(id, Number(r.tenant_id), 'credentials'))) as Credentials
  }

  async webhookSecret(id: number): Promise<string | null> {
    const r = await this.row(id)
    if (!r || !r.webhook_secret) return null
    return this.secrets.decrypt(JSON.parse(r.webhook_secret) as EncryptedSecret, sealContext(id, Number(r.tenant_id), 'webhook_secret'))
  }

  async create(input: NewIntegration): Promise<IntegrationRecord> {
    const id = await this.allocateId()
    const now = this.now()
    const row = {
      integration_id: id,
      tenant_id: input.tenant_id,
      integration_type: input.integration_type,
      account_name: input.account_name,
      environment: input.environment,
      account_key: input.account_key,
      is_active: 1,
      validation_status: 'valid',
      configuration: JSON.stringify(input.configuration),
      credentials: this.seal(JSON.stringify(input.credentials), sealContext(id, input.tenant_id, 'credentials')),
      webhook_secret: input.webhook_secret ? this.seal(input.webhook_secret, sealContext(id, input.tenant_id, 'webhook_secret')) : '',
      created_at: iso(now),
      updated_at: iso(now),
      deleted_at: null,
      version: nextVersion(),
    }
    await this.store.insert({ table: 'integrations', format: 'JSONEachRow', values: [row] })
    return (await this.get(id))!
  }

  async update(id: number, change: IntegrationChange): Promise<IntegrationRecord> {
    const r = await this.row(id)
    if (!r) throw new Error(`no integration ${id}`)
    const tenantId = Number(r.tenant_id)
    const webhook = change.webhook_secret === undefined ? r.webhook_secret : change.webhook_secret === null ? '' : this.seal(change.webhook_secret, sealContext(id, tenantId, 'webhook_secret'))
    await this.store.insert({
      table: 'integrations',
      format: 'JSONEachRow',
      values: [
        {
          integration_id: id,
          tenant_id: r.tenant_id,
          integration_type: r.integration_type,
          account_name: r.account_name,
          environment: r.environment,
          account_key: r.account_key,
          is_active: change.is_active === undefined ? Number(r.is_active) : change.is_active ? 1 : 0,
          validation_status: change.validation_status ?? r.validation_status,
          configuration: change.configuration ? JSON.stringify(change.configuration) : r.configuration,
          credentials: change.credentials ? this.seal(JSON.stringify(change.credentials), sealContext(id, tenantId, 'credentials')) : r.credentials,
          webhook_secret: webhook,
          created_at: iso(Number(r.created_at_ms)),
          updated_at: iso(this.now()),
          deleted_at: change.deleted_at !== undefined ? iso(change.deleted_at) : iso(r.deleted_at_ms === null ? null : Number(r.deleted_at_ms)),
          version: nextVersion(),
        },
      ],
    })
    return (await this.get(id))!
  }

  private seal(plain: string, context: string): string {
    return JSON.stringify(this.secrets.encrypt(plain, context))
  }

  /**
   * max + 1, claimed: the claimant keeps the id only when its claim is the only one for it, so
   * two API replicas creating at once never share an id (at worst both give it up and retry).
   */
  private async allocateId(): Promise<number> {
    for (let tries = 0; tries < 50; tries++) {
      const rs = await this.store.query({
        query: `SELECT greatest((SELECT max(integration_id) FROM integrations), (SELECT max(integration_id) FROM integration_id_claims)) AS m`,
        format: 'JSONEachRow',
      })
      const [row] = await rs.json<{ m: number }>()
      const candidate = Number(row?.m ?? 0) + 1
      await this.store.insert({ table: 'integration_id_claims', format: 'JSONEachRow', values: [{ integration_id: candidate, claim: randomUUID(), claimed_at: iso(this.now()) }] })
      const c = await this.store.query({ query: 'SELECT count() AS n FROM integration_id_claims WHERE integration_id = {i:UInt64}', query_params: { i: candidate }, format: 'JSONEachRow' })
      const [count] = await c.json<{ n: number }>()
      if (Number(count?.n) === 1) return candidate
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 50))
    }
    throw new Error('could not allocate an integration id (too many concurrent creations)')
  }

  /** `cdp keys rotate`: every sealed value not under the current key, re-encrypted under it. */
  async rotateSecrets(): Promise<number> {
    const rs = await this.store.query({ query: 'SELECT * FROM integrations FINAL', format: 'JSONEachRow' })
    const rows = await rs.json<Record<string, unknown> & { integration_id: string | number; tenant_id: string | number; credentials: string; webhook_secret: string; version: string | number }>()
    const stale = (s: string) => s !== '' && (JSON.parse(s) as EncryptedSecret).key_id !== this.secrets.current
    const moved = rows.filter((r) => stale(r.credentials) || stale(r.webhook_secret))
    if (!moved.length) return 0
    const reseal = (s: string, context: string) => (stale(s) ? JSON.stringify(this.secrets.reencrypt(JSON.parse(s) as EncryptedSecret, context)) : s)
    await this.store.insert({
      table: 'integrations',
      format: 'JSONEachRow',
      // version + 1, not a new one: an integration written meanwhile (newer version) wins over this copy.
      values: moved.map((r) => {
        const [id, tenant] = [Number(r.integration_id), Number(r.tenant_id)]
        return { ...r, credentials: reseal(r.credentials, sealContext(id, tenant, 'credentials')), webhook_secret: reseal(r.webhook_secret, sealContext(id, tenant, 'webhook_secret')), version: String(BigInt(r.version) + 1n) }
      }),
    })
    return moved.length
  }
}

/** The additional authenticated data of a sealed value: its integration, tenant and field (a value moved to another row or field does not decrypt). */
export const sealContext = (integrationId: number, tenantId: number, field: 'credentials' | 'webhook_secret') => `integrations:${integrationId}:${tenantId}:${field}`

/** For `cdp keys rotate` (cli/commands/keys.ts ROTATIONS): re-encrypts every integration's secrets under the current key. */
export function rotateIntegrationCredentials(store: Store, box: SecretBox): Promise<number> {
  return new IntegrationStore(store, box).rotateSecrets()
}
