import { randomUUID } from 'node:crypto'
import type { Store } from '../../common/store/clickhouse.ts'
import { iso } from '../../common/time.ts'
import { nextVersion } from '../../common/store/versions.ts'
import type { EncryptedSecret, SecretBox } from '../../common/secrets.ts'
import type { LimitStore } from './ads-platform/limits.ts'

/**
 * ClickHouse state of the audience sync (schemas/clickhouse/006_audience_sync.sql). Every table
 * is a ReplacingMergeTree read with FINAL; writers insert a new version instead of updating.
 */

export type ConfigStatus = 'active' | 'paused'

export interface AudienceSyncConfig {
  tenant_id: number
  config_id: string
  name: string
  segment: string
  ad_account_id: string
  audience_id: string | null
  status: ConfigStatus
  paused_reason: string | null
  /** Calls wait until then (the platform's rate-limit window). */
  blocked_until: number | null
  created_at: number
  updated_at: number
}

/** A configuration with its token, decrypted: only inside the sync, never in a response or a log. */
export interface ConfigWithToken extends AudienceSyncConfig {
  token: string
}

const ms = (v: string | null) => (v === null ? null : Date.parse(`${v.replace(' ', 'T')}Z`))

interface ConfigRow {
  tenant_id: string
  config_id: string
  name: string
  segment: string
  ad_account_id: string
  token: string
  audience_id: string | null
  status: ConfigStatus
  paused_reason: string | null
  blocked_until: string | null
  created_at: string
  updated_at: string
}

/** The additional authenticated data of a sync's token: a token moved to another configuration does not decrypt. */
const tokenContext = (tenantId: number, configId: string) => `audience_sync_configs:${tenantId}:${configId}:token`


export class AudienceSyncStore implements LimitStore {
  constructor(private readonly store: Store, private readonly secrets: SecretBox, private readonly now: () => number = Date.now) {}

  // ------------------------------------------------------------------ configurations

  private toConfig(r: ConfigRow): AudienceSyncConfig {
    return {
      tenant_id: Number(r.tenant_id),
      config_id: r.config_id,
      name: r.name,
      segment: r.segment,
      ad_account_id: r.ad_account_id,
      audience_id: r.audience_id,
      status: r.status,
      paused_reason: r.paused_reason,
      blocked_until: ms(r.blocked_until),
      created_at: ms(r.created_at)!,
      updated_at: ms(r.updated_at)!,
    }
  }

  private async configRows(where: string, params: Record<string, unknown>): Promise<ConfigRow[]> {
    const rs = await this.store.query({
      query: `SELECT tenant_id, config_id, name, segment, ad_account_id, token, audience_id, status, paused_reason,
                     toString(blocked_until) AS blocked_until, toString(created_at) AS created_at, toString(updated_at) AS updated_at
              FROM audience_sync_configs FINAL WHERE deleted = 0 AND ${where} ORDER BY tenant_id, created_at, config_id`,
      query_params: params,
      format: 'JSONEachRow',
    })
    return rs.json<ConfigRow>()
  }

  /** Who syncs a configuration, and its last heartbeat (epoch ms; 0: released). */
  async lease(configId: string): Promise<{ owner: string; heartbeat_at: number } | null> {
    const rs = await this.store.query({
      query: 'SELECT owner, toUnixTimestamp64Milli(heartbeat_at) AS heartbeat_at FROM audience_sync_leases FINAL WHERE config_id = {c:String}',
      query_params: { c: configId },
      format: 'JSONEachRow',
    })
    const [r] = await rs.json<{ owner: string; heartbeat_at: number | string }>()
    return r ? { owner: r.owner, heartbeat_at: Number(r.heartbeat_at) } : null
  }

  async writeLease(configId: string, owner: string, heartbeatAt: number): Promise<void> {
    await this.store.insert({ table: 'audience_sync_leases', format: 'JSONEachRow', values: [{ config_id: configId, owner, heartbeat_at: iso(heartbeatAt), version: nextVersion() }] })
  }

  async listConfigs(tenantId: number): Promise<AudienceSyncConfig[]> {
    return (await this.configRows('tenant_id = {t:UInt64}', { t: tenantId })).map((r) => this.toConfig(r))
  }

  async getConfig(tenantId: number, configId: string): Promise<AudienceSyncConfig | null> {
    const [r] = await this.configRows('tenant_id = {t:UInt64} AND config_id = {c:String}', { t: tenantId, c: configId })
    return r ? this.toConfig(r) : null
  }

  /**
   * Every active configuration of every tenant, with its token decrypted (the sync loop). One
   * whose token does not decrypt (a key dropped from the keyring, a damaged record) is paused
   * with an alert instead of stopping everyone's sync.
   */
  async activeConfigsWithTokens(): Promise<ConfigWithToken[]> {
    const out: ConfigWithToken[] = []
    for (const r of await this.configRows(`status = 'active'`, {})) {
      const c = this.toConfig(r)
      try {
        out.push({ ...c, token: this.secrets.decrypt(JSON.parse(r.token) as EncryptedSecret, tokenContext(c.tenant_id, c.config_id)) })
      } catch (err) {
        await this.writeConfig({ ...c, status: 'paused', paused_reason: 'token_undecryptable' })
        await this.alert(c.tenant_id, c.config_id, 'token_undecryptable', `The stored ads token cannot be decrypted (${(err as Error).message}): set a new token`)
      }
    }
    return out
  }

  async tokenOf(tenantId: number, configId: string): Promise<string | null> {
    const [r] = await this.configRows('tenant_id = {t:UInt64} AND config_id = {c:String}', { t: tenantId, c: configId })
    return r ? this.secrets.decrypt(JSON.parse(r.token) as EncryptedSecret, tokenContext(tenantId, configId)) : null
  }

  async createConfig(input: { tenant_id: number; name: string; segment: string; ad_account_id: string; token: string }): Promise<AudienceSyncConfig> {
    const now = this.now()
    const c: ConfigWithToken = { ...input, config_id: randomUUID(), audience_id: null, status: 'active', paused_reason: null, blocked_until: null, created_at: now, updated_at: now }
    await this.writeConfig(c, input.token)
    const { token: _t, ...out } = c
    return out
  }

  /**
   * Writes a new version of a configuration. `token` (plain) replaces the stored one; without it
   * the stored ciphertext is kept as it is.
   */
  async writeConfig(c: AudienceSyncConfig, token?: string, deleted = false): Promise<void> {
    let sealed: string
    if (token !== undefined) sealed = JSON.stringify(this.secrets.encrypt(token, tokenContext(c.tenant_id, c.config_id)))
    else {
      const [r] = await this.configRows('tenant_id = {t:UInt64} AND config_id = {c:String}', { t: c.tenant_id, c: c.config_id })
      if (!r) throw new Error(`no configuration ${c.config_id}`)
      sealed = r.token
    }
    await this.store.insert({
      table: 'audience_sync_configs',
      format: 'JSONEachRow',
      values: [
        {
          tenant_id: c.tenant_id, config_id: c.config_id, name: c.name, segment: c.segment, ad_account_id: c.ad_account_id, token: sealed,
          audience_id: c.audience_id, status: c.status, paused_reason: c.paused_reason, blocked_until: c.blocked_until === null ? null : iso(c.blocked_until),
          created_at: iso(c.created_at), updated_at: iso(this.now()), deleted: deleted ? 1 : 0, version: nextVersion(),
        },
      ],
    })
  }

  async updateConfig(tenantId: number, configId: string, change: (c: AudienceSyncConfig) => AudienceSyncConfig, token?: string): Promise<AudienceSyncConfig | null> {
    const cur = await this.getConfig(tenantId, configId)
    if (!cur) return null
    const next = { ...change(cur), updated_at: this.now() }
    await this.writeConfig(next, token)
    return next
  }

  async deleteConfig(tenantId: number, configId: string): Promise<boolean> {
    const cur = await this.getConfig(tenantId, configId)
    if (!cur) return false
    await this.writeConfig(cur, undefined, true)
    return true
  }

  /** Pauses every active configuration of a tenant (an invalid token or a missing permission). */
  async pauseTenant(tenantId: number, reason: string): Promise<number> {
    const configs = (await this.listConfigs(tenantId)).filter((c) => c.status === 'active')
    for (const c of configs) await this.writeConfig({ ...c, status: 'paused', paused_reason: reason })
    return configs.length
  }

  /** `cdp keys rotate`: every configuration whose token is under an older key, re-encrypted under the current one. */
  async rotateSecrets(): Promise<number> {
    const rs = await this.store.query({ query: 'SELECT * FROM audience_sync_configs FINAL', format: 'JSONEachRow' })
    const rows = await rs.json<Record<string, unknown> & { token: string; version: string | number }>()
    const moved = rows.filter((r) => (JSON.parse(r.token) as EncryptedSecret).key_id !== this.secrets.current)
    if (!moved.length) return 0
    // version + 1, not a new one: a configuration written meanwhile (newer version) wins over this copy.
    await this.store.insert({
      table: 'audience_sync_configs',
      format: 'JSONEachRow',
      values: moved.map((r) => ({
        ...r,
        token: JSON.stringify(this.secrets.reencrypt(JSON.parse(r.token) as EncryptedSecret, tokenContext(Number(r.tenant_id), String(r.config_id)))),
        version: String(BigInt(r.version) + 1n),
      })),
    })
    return moved.length
  }

  // ------------------------------------------------------------------ segments and members

  async recordSegments(rows: { tenant_id: number; customer_id: number; segment: string | null; version: number }[]): Promise<void> {
    if (!rows.length) return
    const at = iso(this.now())
    await this.store.insert({ table: 'audience_customer_segments', format: 'JSONEachRow', values: rows.map((r) => ({ ...r, received_at: at })) })
  }

  /** Profiles whose membership changed; versioned like audience_members (nextVersion), which the delta compares them with. */
  async recordProfileChanges(rows: { tenant_id: number; profile_id: number }[]): Promise<void> {
    if (!rows.length) return
    const at = iso(this.now())
    await this.store.insert({ table: 'audience_profile_changes', format: 'JSONEachRow', values: rows.map((r) => ({ ...r, received_at: at, version: nextVersion() })) })
  }

  /**
   * Customers whose membership the audience should change: in the segment but not held, or held
   * but no longer in it; only those whose latest change is older than `settleMs` (coalescing: a
   * customer who moves A → B → A within the window shows no difference and uploads nothing).
   * `refresh`: held and still in the segment, but the profile's members changed after its row was
   * uploaded (a merge or a split): its row is replaced by one with the profile's identifiers now.
   */
  async delta(c: AudienceSyncConfig, settleMs: number, limit: number): Promise<{ customer_id: number; want: 0 | 1; refresh: boolean }[]> {
    const rs = await this.store.query({
      query: `SELECT s.customer_id AS customer_id, toUInt8(ifNull(s.segment = {segment:String}, 0)) AS want,
                     ifNull(want = 1 AND m.member = 1 AND p.version > m.version, 0) AS refresh
              FROM (SELECT customer_id, segment, received_at FROM audience_customer_segments FINAL WHERE tenant_id = {t:UInt64}) AS s
              LEFT JOIN (SELECT customer_id, member, version FROM audience_members FINAL WHERE tenant_id = {t:UInt64} AND config_id = {c:String}) AS m
                ON m.customer_id = s.customer_id
              LEFT JOIN (SELECT profile_id, received_at, version FROM audience_profile_changes FINAL WHERE tenant_id = {t:UInt64}) AS p
                ON p.profile_id = s.customer_id
              WHERE (want != ifNull(m.member, 0) OR refresh)
                AND greatest(s.received_at, ifNull(p.received_at, s.received_at)) <= fromUnixTimestamp64Milli({settled:Int64}, 'UTC')
              ORDER BY want DESC, customer_id
              LIMIT {limit:UInt64}
              SETTINGS join_use_nulls = 1`,
      query_params: { t: c.tenant_id, c: c.config_id, segment: c.segment, settled: this.now() - settleMs, limit },
      format: 'JSONEachRow',
    })
    return (await rs.json<{ customer_id: string; want: number; refresh: number | boolean }>()).map((r) => ({ customer_id: Number(r.customer_id), want: Number(r.want) ? 1 : 0, refresh: Number(r.refresh) === 1 }))
  }

  /**
   * The email, phone and names of profiles (pipelines/identity): each value is the profile's own
   * customer's, else the first of its other members (by customer id) that has one, so a person
   * who gave the phone to one shop and the email to the other is one row with both. A customer
   * no resolution has placed is its own profile.
   */
  async identifiers(tenantId: number, ids: number[]): Promise<Map<number, { email: string | null; phone: string | null; first_name: string | null; last_name: string | null }>> {
    const rs = await this.store.query({
      query: `SELECT c.customer_id AS customer_id, ifNull(p.profile_id, c.customer_id) AS profile_id, c.email AS email, c.phone AS phone, c.first_name AS first_name, c.last_name AS last_name
              FROM (SELECT customer_id, email, phone, first_name, last_name FROM customers FINAL
                    WHERE tenant_id = {t:UInt64}
                      AND (customer_id IN {ids:Array(UInt64)} OR customer_id IN (SELECT customer_id FROM customer_profiles FINAL WHERE tenant_id = {t:UInt64} AND profile_id IN {ids:Array(UInt64)}))) AS c
              LEFT JOIN (SELECT customer_id, profile_id FROM customer_profiles FINAL WHERE tenant_id = {t:UInt64}) AS p ON p.customer_id = c.customer_id
              ORDER BY c.customer_id
              SETTINGS join_use_nulls = 1`,
      query_params: { t: tenantId, ids },
      format: 'JSONEachRow',
    })
    const rows = await rs.json<{ customer_id: string; profile_id: string; email: string | null; phone: string | null; first_name: string | null; last_name: string | null }>()
    return profileIdentifiers(ids, rows.map((r) => ({ ...r, customer_id: Number(r.customer_id), profile_id: Number(r.profile_id) })))
  }

  async recordMembers(c: AudienceSyncConfig, batchId: string, rows: { customer_id: number; member: 0 | 1; rejected: boolean; schema?: string[]; row?: string[] }[]): Promise<void> {
    if (!rows.length) return
    const version = nextVersion()
    await this.store.insert({
      table: 'audience_members',
      format: 'JSONEachRow',
      values: rows.map((r) => ({
        tenant_id: c.tenant_id, config_id: c.config_id, customer_id: r.customer_id, member: r.member, rejected: r.rejected ? 1 : 0, batch_id: batchId,
        hashed_schema: r.member ? (r.schema ?? []) : [], hashed_row: r.member ? (r.row ?? []) : [], version,
      })),
    })
  }

  /** The hashed rows the audience was given for these members (what a removal must send). */
  async heldRows(c: AudienceSyncConfig, ids: number[]): Promise<Map<number, { schema: string[]; row: string[] }>> {
    const rs = await this.store.query({
      query: `SELECT customer_id, hashed_schema, hashed_row FROM audience_members FINAL
              WHERE tenant_id = {t:UInt64} AND config_id = {c:String} AND customer_id IN {ids:Array(UInt64)} AND member = 1 AND length(hashed_row) > 0`,
      query_params: { t: c.tenant_id, c: c.config_id, ids },
      format: 'JSONEachRow',
    })
    const rows = await rs.json<{ customer_id: string; hashed_schema: string[]; hashed_row: string[] }>()
    return new Map(rows.map((r) => [Number(r.customer_id), { schema: r.hashed_schema, row: r.hashed_row }]))
  }

  /**
   * The platform no longer has the configuration's audience (deleted outside the CDP): forget its
   * id and what it held, so the next cycle creates a new audience and fills it again.
   */
  async resetAudience(c: AudienceSyncConfig): Promise<void> {
    await this.updateConfig(c.tenant_id, c.config_id, (x) => ({ ...x, audience_id: null }))
    await this.store.command({
      query: `INSERT INTO audience_members (tenant_id, config_id, customer_id, member, rejected, batch_id, hashed_schema, hashed_row, version)
              SELECT tenant_id, config_id, customer_id, 0, 0, 'audience-reset', [], [], version + 1
              FROM audience_members FINAL WHERE tenant_id = {t:UInt64} AND config_id = {c:String} AND member = 1`,
      query_params: { t: c.tenant_id, c: c.config_id },
    })
  }

  // ------------------------------------------------------------------ batches, status, alerts

  async recordBatch(b: {
    tenant_id: number
    config_id: string
    batch_id: string
    audience_id: string
    operation: 'add' | 'remove'
    rows: number
    status: 'pending' | 'done' | 'dead_letter' | 'failed' | 'waiting'
    num_received?: number | null
    num_invalid_entries?: number | null
    invalid_entry_samples?: Record<string, string[]>
    rejected_customer_ids?: number[]
    error?: string | null
    created_at: number
  }): Promise<void> {
    await this.store.insert({
      table: 'audience_sync_batches',
      format: 'JSONEachRow',
      values: [
        {
          ...b,
          num_received: b.num_received ?? null,
          num_invalid_entries: b.num_invalid_entries ?? null,
          invalid_entry_samples: JSON.stringify(b.invalid_entry_samples ?? {}),
          rejected_customer_ids: b.rejected_customer_ids ?? [],
          error: b.error ?? null,
          created_at: iso(b.created_at),
          updated_at: iso(this.now()),
          version: nextVersion(),
        },
      ],
    })
  }

  /**
   * Stores an audience's status as of `status_time` (default now); false, and nothing written,
   * when a newer status is already stored (a late or replayed webhook event).
   */
  async recordStatus(s: { tenant_id: number; config_id: string; audience_id: string; approximate_count?: number | null; delivery_code?: number | null; delivery_description?: string | null; source: 'poll' | 'webhook'; status_time?: number }): Promise<boolean> {
    const at = s.status_time ?? this.now()
    const [cur] = await this.statusOf(s.tenant_id, [s.config_id])
    if (cur && cur.audience_id === s.audience_id && cur.status_time > at) return false
    // A webhook carries only the delivery status: keep the last known count.
    const count = s.approximate_count === undefined ? (cur?.approximate_count ?? null) : s.approximate_count
    const { status_time: _t, ...row } = s
    await this.store.insert({
      table: 'audience_status',
      format: 'JSONEachRow',
      values: [{ ...row, approximate_count: count, delivery_code: s.delivery_code ?? null, delivery_description: s.delivery_description ?? null, status_time: iso(at), updated_at: iso(this.now()), version: nextVersion() }],
    })
    return true
  }

  async statusOf(tenantId: number, configIds: string[]) {
    const rs = await this.store.query({
      query: `SELECT config_id, audience_id, approximate_count, delivery_code, delivery_description, source, toString(updated_at) AS updated_at,
                     toString(status_time) AS status_time
              FROM audience_status FINAL WHERE tenant_id = {t:UInt64} AND config_id IN {c:Array(String)}`,
      query_params: { t: tenantId, c: configIds },
      format: 'JSONEachRow',
    })
    const rows = await rs.json<{ config_id: string; audience_id: string; approximate_count: string | null; delivery_code: number | null; delivery_description: string | null; source: string; updated_at: string; status_time: string }>()
    return rows.map((r) => ({ ...r, approximate_count: r.approximate_count === null ? null : Number(r.approximate_count), updated_at: ms(r.updated_at)!, status_time: ms(r.status_time)! }))
  }

  /** The configuration an audience id belongs to (webhook events name only the audience). */
  async configOfAudience(audienceId: string): Promise<AudienceSyncConfig | null> {
    const [r] = await this.configRows('audience_id = {a:String}', { a: audienceId })
    return r ? this.toConfig(r) : null
  }

  async alert(tenantId: number, configId: string, code: string, message: string): Promise<void> {
    await this.store.insert({ table: 'audience_sync_alerts', format: 'JSONEachRow', values: [{ tenant_id: tenantId, config_id: configId, code, message, created_at: iso(this.now()) }] })
  }

  async alertsOf(tenantId: number, configIds: string[], limit = 20) {
    const rs = await this.store.query({
      query: `SELECT config_id, code, message, toString(created_at) AS created_at FROM audience_sync_alerts
              WHERE tenant_id = {t:UInt64} AND config_id IN {c:Array(String)} ORDER BY created_at DESC LIMIT {n:UInt32} BY config_id`,
      query_params: { t: tenantId, c: configIds, n: limit },
      format: 'JSONEachRow',
    })
    return (await rs.json<{ config_id: string; code: string; message: string; created_at: string }>()).map((r) => ({ ...r, created_at: ms(r.created_at)! }))
  }

  /** Per configuration: the last batch, and the rows the platform rejected in the last 20 batches. */
  async batchSummary(tenantId: number, configIds: string[]) {
    const rs = await this.store.query({
      query: `SELECT config_id, toString(max(updated_at)) AS last_sync, countIf(status = 'done') AS batches_done,
                     countIf(status = 'dead_letter') AS batches_dead_lettered, sum(coalesce(num_invalid_entries, 0)) AS rejected_rows,
                     groupArrayIf(20)(batch_id, length(rejected_customer_ids) > 0) AS rejected_batches
              FROM audience_sync_batches FINAL WHERE tenant_id = {t:UInt64} AND config_id IN {c:Array(String)} AND status != 'pending'
              GROUP BY config_id`,
      query_params: { t: tenantId, c: configIds },
      format: 'JSONEachRow',
    })
    const rows = await rs.json<{ config_id: string; last_sync: string; batches_done: string; batches_dead_lettered: string; rejected_rows: string; rejected_batches: string[] }>()
    return new Map(rows.map((r) => [r.config_id, { last_sync: ms(r.last_sync), batches_done: Number(r.batches_done), batches_dead_lettered: Number(r.batches_dead_lettered), rejected_rows: Number(r.rejected_rows), rejected_batches: r.rejected_batches }]))
  }

  // ------------------------------------------------------------------ LimitStore (client-side hourly limits)

  async load(key: string): Promise<number[]> {
    const rs = await this.store.query({ query: 'SELECT timestamps FROM ads_call_windows FINAL WHERE key = {k:String}', query_params: { k: key }, format: 'JSONEachRow' })
    const [r] = await rs.json<{ timestamps: (string | number)[] }>()
    return r ? r.timestamps.map(Number) : []
  }

  async save(key: string, timestamps: number[]): Promise<void> {
    await this.store.insert({ table: 'ads_call_windows', format: 'JSONEachRow', values: [{ key, timestamps, version: nextVersion() }] })
  }
}

type Identifiers = { email: string | null; phone: string | null; first_name: string | null; last_name: string | null }

/**
 * Each profile's identifiers from its members' rows (pure; `rows` ordered by customer id): the
 * profile's own customer's value first, else the first member's that has one. A profile id whose
 * customer is now in another profile (its segment change to none is on its way) keeps its own.
 */
export function profileIdentifiers(ids: readonly number[], rows: readonly (Identifiers & { customer_id: number; profile_id: number })[]): Map<number, Identifiers> {
  const own = new Map(rows.map((r) => [r.customer_id, r]))
  const members = new Map<number, Identifiers[]>()
  for (const r of rows) members.set(r.profile_id, [...(members.get(r.profile_id) ?? []), r])
  const out = new Map<number, Identifiers>()
  for (const id of ids) {
    const self = own.get(id)
    const list = self && self.profile_id === id ? [self, ...(members.get(id) ?? []).filter((m) => m !== self)] : self ? [self] : (members.get(id) ?? [])
    if (!list.length) continue
    const pick = (k: keyof Identifiers) => list.map((m) => m[k]).find((v) => v !== null && v !== '') ?? null
    out.set(id, { email: pick('email'), phone: pick('phone'), first_name: pick('first_name'), last_name: pick('last_name') })
  }
  return out
}
