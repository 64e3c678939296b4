/**
 * The profile endpoints: one person with the identifiers that joined its source customers (national
 * ids masked), an admin's split that re-resolves the tenant, the customer list's profile_id, and
 * the refusals (400, 403 across tenants, 404).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../common/store/clickhouse.ts'
import { openEventLog } from '../../common/runtime/context.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { ApiKeyStore, type CreatedKey } from '../../common/store/api-keys.ts'
import { markTenantsChanged } from '../../common/store/data-changes.ts'
import { TOPICS } from '../../common/topics.ts'
import { createApp } from '../../services/api/app.ts'
import { resolveTenant } from '../../pipelines/identity/index.ts'
import { IdentityStore } from '../../pipelines/identity/store.ts'
import { silentLogger, testConfig, serve, migratedStore } from '../helpers.ts'
import { readDocumented } from './documented.ts'

const T = 911
const OTHER = 912
const ADMIN = 'an-admin-token-long-enough-for-tests'
let store: Store
let log: EventLog
let codec: EventCodec
let closeServer: (() => Promise<void>) | undefined
let base: string
let keyA: CreatedKey
let keyB: CreatedKey

const customer = (tenant: number, id: number, created: string, fields: Record<string, string | null>) => ({
  tenant_id: tenant, customer_id: id, last_event_id: `c${id}`, email: null, phone: null, national_id: null, ...fields,
  created_at: `${created} 10:00:00.000`, source_ids: [], source: 'test', updated_at: '2025-01-01 00:00:00.000', version: 1,
})

beforeAll(async () => {
  store = await migratedStore()
  ;({ log, codec } = await openEventLog(testConfig('embedded'), silentLogger))
  await log.createTopics([{ name: TOPICS.profileChanges.name, partitions: 1, compacted: true }])
  await store.insert({
    table: 'customers',
    format: 'JSONEachRow',
    values: [
      customer(T, 1, '2024-01-10', { email: 'ana.perez@gmail.com', phone: '+54 9 11 4123-4567' }),
      customer(T, 2, '2024-03-01', { email: 'ANA.PEREZ@gmail.com', national_id: '20-27456123-9' }),
      customer(T, 3, '2024-05-01', { phone: '011 15 4123-4567', national_id: '27456123' }),
      customer(T, 4, '2024-06-01', { email: 'otra@gmail.com' }),
      customer(OTHER, 1, '2024-01-10', { email: 'ana.perez@gmail.com' }),
    ],
  })
  // Customer features rows, so the customer list has them.
  await store.insert({
    table: 'customer_features',
    format: 'JSONEachRow',
    values: [1, 2, 3, 4].map((id) => ({ tenant_id: T, customer_id: id, email: '', frequency: 0, monetary: '0', processed_at: '2025-01-01 00:00:00.000', historical_value: '0', version: 1 })),
  })
  await markTenantsChanged(store, [T, OTHER])
  for (const t of [T, OTHER]) await resolveTenant({ store, log, codec, logger: silentLogger }, t)
  const keys = new ApiKeyStore(store)
  keyA = await keys.create(T, 'tenant A')
  keyB = await keys.create(OTHER, 'tenant B')
  const app = createApp({ logger: silentLogger, log, codec, readiness: [], analytics: { store, logger: silentLogger }, auth: { adminToken: ADMIN, keys } })
  ;({ base, close: closeServer } = await serve(app))
}, 120_000)

afterAll(async () => {
  await closeServer?.()
  await log?.close()
  await store?.close()
})

const call = async (method: string, path: string, body?: unknown, token = keyA.key) =>
  readDocumented(method, await fetch(base + path, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined }))

describe('profiles', () => {
  it('shows one person: members oldest first, their identifiers (national ids masked) and the links that joined them', async () => {
    const { status, body } = await call('GET', `/api/cdp/v2/profiles/1?tenant_id=${T}`)
    expect(status).toBe(200)
    expect(body.data).toEqual({
      profile_id: 1,
      members: [
        { customer_id: 1, first_seen_at: '2024-01-10T10:00:00.000Z', identifiers: ['email:ana.perez@gmail.com', 'phone:+541141234567'] },
        { customer_id: 2, first_seen_at: '2024-03-01T10:00:00.000Z', identifiers: ['email:ana.perez@gmail.com', 'national_id:*****123'] },
        { customer_id: 3, first_seen_at: '2024-05-01T10:00:00.000Z', identifiers: ['phone:+541141234567', 'national_id:*****123'] },
      ],
      links: [
        { identifier: 'email:ana.perez@gmail.com', customers: [1, 2] },
        { identifier: 'national_id:*****123', customers: [2, 3] },
        { identifier: 'phone:+541141234567', customers: [1, 3] },
      ],
      not_linking: [],
    })
    // The customer list shows each member's profile.
    const list = await call('GET', `/api/cdp/v2/customers?tenant_id=${T}`)
    expect(list.body.data.customers.map((c: { profile_id: string }) => c.profile_id)).toEqual(['1', '1', '1', '4'])
  })

  it("an admin's split re-resolves the tenant: unlinking 3's phone and national id makes it its own profile", async () => {
    const first = await call('POST', `/api/cdp/v2/profiles/1/split?tenant_id=${T}`, { customer_id: 3, identifier: 'phone:+541141234567' })
    expect(first.status).toBe(200)
    expect(first.body.data.changes).toEqual([]) // still linked by the national id
    const second = await call('POST', `/api/cdp/v2/profiles/1/split?tenant_id=${T}`, { customer_id: 3, identifier: 'national_id:*****123' })
    expect(second.body.data).toEqual({ profiles: 3, changes: [{ profile_id: 1, change: 'split', members: [1, 2] }, { profile_id: 3, change: 'split', members: [3] }] })
    const three = await call('GET', `/api/cdp/v2/profiles/3?tenant_id=${T}`)
    expect(three.body.data.not_linking.map((n: { reason: string }) => n.reason)).toEqual(['split_by_admin', 'split_by_admin'])
    expect((await call('GET', `/api/cdp/v2/customers?tenant_id=${T}`)).body.data.customers.map((c: { profile_id: string }) => c.profile_id)).toEqual(['1', '1', '3', '4'])
  })

  it('refuses what it must: 404 unknown profile, 400 bad ids or a non-member, 403 across tenants', async () => {
    expect((await call('GET', `/api/cdp/v2/profiles/99?tenant_id=${T}`)).status).toBe(404)
    expect((await call('GET', `/api/cdp/v2/profiles/abc?tenant_id=${T}`)).status).toBe(400)
    const notMember = await call('POST', `/api/cdp/v2/profiles/1/split?tenant_id=${T}`, { customer_id: 4, identifier: 'email:otra@gmail.com' })
    expect([notMember.status, notMember.body.details.errors[0].code]).toEqual([400, 'not_a_member'])
    const unknown = await call('POST', `/api/cdp/v2/profiles/1/split?tenant_id=${T}`, { customer_id: 2, identifier: 'email:nobody@gmail.com' })
    expect([unknown.status, unknown.body.details.errors[0].code]).toEqual([400, 'unknown_identifier'])
    expect((await call('GET', `/api/cdp/v2/profiles/1?tenant_id=${T}`, undefined, keyB.key)).status).toBe(403)
    // Tenant B's profile 1 is another person.
    expect((await call('GET', `/api/cdp/v2/profiles/1?tenant_id=${OTHER}`, undefined, keyB.key)).body.data.members).toHaveLength(1)
    expect((await call('GET', `/api/cdp/v2/profiles/1?tenant_id=${OTHER}`, undefined, ADMIN)).status).toBe(200)
  })
  it('identity settings: the defaults, a change that the next resolution applies, refusals', async () => {
    const got = await call('GET', `/api/cdp/v2/identity/settings?tenant_id=${T}`)
    expect(got.body.data).toEqual({ tenant_id: T, merge_kinds: ['email', 'phone', 'national_id', 'source_id'], max_customers_per_identifier: 4 })
    // Without e-mails linking, 1 and 2 (joined by their e-mail only, since 3 was split off) are two people.
    const put = await call('PUT', `/api/cdp/v2/identity/settings?tenant_id=${T}`, { merge_kinds: ['phone', 'national_id', 'source_id'], max_customers_per_identifier: 6 })
    expect(put.body.data).toEqual({ tenant_id: T, merge_kinds: ['phone', 'national_id', 'source_id'], max_customers_per_identifier: 6 })
    expect(await new IdentityStore(store).tenantsToResolve()).toContain(T)
    const r = await resolveTenant({ store, log, codec, logger: silentLogger }, T)
    expect(r.events.map((e) => [e.profile_id, e.change, e.members])).toEqual([
      [1, 'split', [1]],
      [2, 'split', [2]],
    ])
    for (const bad of [{ merge_kinds: ['email', 'fax'], max_customers_per_identifier: 4 }, { merge_kinds: ['email'], max_customers_per_identifier: 1 }, { merge_kinds: ['email'] }]) {
      const b = await call('PUT', `/api/cdp/v2/identity/settings?tenant_id=${T}`, bad)
      expect(b.status, JSON.stringify(bad)).toBe(400)
    }
    expect((await call('GET', `/api/cdp/v2/identity/settings?tenant_id=${T}`, undefined, keyB.key)).status).toBe(403)
  })
})
