/**
 * Incremental identity resolution: after the first (full) resolution, a tenant's resolution reads
 * only the customers written since and what their identifiers reach, and ends with exactly the
 * profiles a full resolution of every customer gives: new customers who bridge profiles, a family
 * e-mail that crosses the guard's limit (and so unlinks the profiles it joined), changed e-mails,
 * an admin's split, and a settings change (which resolves the whole tenant again).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../common/store/clickhouse.ts'
import { openEventLog } from '../../common/runtime/context.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { TOPICS } from '../../common/topics.ts'
import { resolveTenant } from '../../pipelines/identity/resolve.ts'
import { IdentityStore } from '../../pipelines/identity/store.ts'
import { DEFAULT_IDENTITY_SETTINGS, resolveProfiles } from '../../pipelines/identity/graph.ts'
import { overlappingAccounts, type SourceAccount } from '../../pipelines/ingest/synthetic/overlap.ts'
import { silentLogger, testConfig, migratedStore } from '../helpers.ts'

let store: Store
let log: EventLog
let codec: EventCodec

beforeAll(async () => {
  store = await migratedStore()
  ;({ log, codec } = await openEventLog(testConfig('embedded'), silentLogger))
  await log.createTopics([{ name: TOPICS.profileChanges.name, partitions: 2, compacted: true }])
})

afterAll(async () => {
  await log?.close()
  await store?.close()
})

const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '')

async function insert(tenant: number, accounts: SourceAccount[], version = 1) {
  await store.insert({
    table: 'customers',
    format: 'JSONEachRow',
    values: accounts.map((a) => ({
      tenant_id: tenant, customer_id: a.customerId, last_event_id: `c${a.customerId}-${version}`, email: a.email, phone: a.phone, national_id: a.national_id,
      created_at: iso(a.firstSeenAt), source_ids: [], source: a.source, updated_at: '2025-01-01 00:00:00.000', version,
    })),
  })
}

/** What a full resolution of every stored customer gives, computed apart from the stored state. */
async function fullyResolved(tenant: number): Promise<Map<number, number>> {
  const ids = new IdentityStore(store)
  return resolveProfiles(await ids.sourceCustomers(tenant), await ids.settings(tenant), await ids.exclusions(tenant)).profileOf
}

// Sequential writes: no insert can be in flight across a mark, so no overlap is needed (production: 10 s).
const deps = () => ({ store, log, codec, logger: silentLogger, ingestOverlapMs: 0 })

describe('incremental identity resolution', () => {
  it('ends with the profiles a full resolution gives, reading only what changed', async () => {
    const T = 951
    const accounts = [...overlappingAccounts({ people: 1500, seed: 'incremental', familyShare: 0.05 })]
    const cut = Math.floor(accounts.length * 0.7)
    await insert(T, accounts.slice(0, cut))
    const first = await resolveTenant(deps(), T)
    expect(first.mode).toBe('full')
    expect(Object.fromEntries(await new IdentityStore(store).profiles(T))).toEqual(Object.fromEntries(await fullyResolved(T)))

    // The rest of the accounts arrive (marketplace accounts that bridge, family members that push
    // a shared e-mail over the limit), and some customers change their e-mail.
    await insert(T, accounts.slice(cut))
    const moved = accounts.slice(0, 40).filter((a) => a.email !== null)
    await insert(T, moved.map((a, i) => ({ ...a, email: i % 2 ? null : `nuevo.${a.customerId}@correo.com.ar` })), 2)
    const second = await resolveTenant(deps(), T)
    expect(second.mode).toBe('incremental')
    expect(second.reassigned).toBeGreaterThan(0)
    expect(Object.fromEntries(await new IdentityStore(store).profiles(T))).toEqual(Object.fromEntries(await fullyResolved(T)))

    // Nothing new: an incremental round reads nothing and changes nothing.
    const quiet = await resolveTenant(deps(), T)
    expect(quiet).toMatchObject({ mode: 'incremental', reassigned: 0, events: [] })

    // An admin splits a merged profile: only that profile is read again.
    const profiles = await new IdentityStore(store).profiles(T)
    const merged = [...profiles].find(([c, p]) => c !== p)!
    const member = (await new IdentityStore(store).sourceCustomers(T, [merged[0]]))[0]!
    for (const i of member.identifiers) await new IdentityStore(store).exclude(T, { customerId: member.customerId, identifier: `${i.kind}:${i.value}` })
    const split = await resolveTenant(deps(), T)
    expect(split.mode).toBe('incremental')
    expect(split.customers).toBeLessThan(50)
    expect((await new IdentityStore(store).profiles(T)).get(member.customerId)).toBe(member.customerId)
    expect(Object.fromEntries(await new IdentityStore(store).profiles(T))).toEqual(Object.fromEntries(await fullyResolved(T)))

    // A settings change resolves the whole tenant again.
    await new IdentityStore(store).putSettings(T, { ...DEFAULT_IDENTITY_SETTINGS, maxCustomersPerIdentifier: 8 })
    const again = await resolveTenant(deps(), T)
    expect(again.mode).toBe('full')
    expect(Object.fromEntries(await new IdentityStore(store).profiles(T))).toEqual(Object.fromEntries(await fullyResolved(T)))
  })

  it('a family e-mail that crosses the limit unlinks the customers it joined, outside the changed ones too', async () => {
    const T = 952
    const family = (id: number, dni: string) => ({ customerId: id, personId: id, source: 'commerce_platform' as const, email: 'familia.ruiz@gmail.com', phone: null, national_id: dni, firstSeenAt: Date.UTC(2024, 0, id) })
    // Two people with only the family e-mail in common, and no national id to tell them apart.
    await insert(T, [{ ...family(1, ''), national_id: null }, { ...family(2, ''), national_id: null }])
    await resolveTenant(deps(), T)
    expect((await new IdentityStore(store).profiles(T)).get(2)).toBe(1)
    // Three more relatives with the same e-mail: five carriers, above the default limit of four.
    await insert(T, [3, 4, 5].map((id) => ({ ...family(id, ''), national_id: null })))
    const r = await resolveTenant(deps(), T)
    expect(r.mode).toBe('incremental')
    expect(Object.fromEntries(await new IdentityStore(store).profiles(T))).toEqual({ 1: 1, 2: 2, 3: 3, 4: 4, 5: 5 })
    expect(r.blocked).toEqual([{ identifier: 'email:familia.ruiz@gmail.com', customers: 5 }])
  })
})
