/**
 * Resolving tenants against chdb and the embedded event log: profiles written for every customer,
 * events on cdp.profile-changes.v1, a bridging customer merging two profiles, an admin's split,
 * the same outcome whatever order the customers arrived in, and no work when nothing changed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../common/store/clickhouse.ts'
import { openEventLog } from '../../common/runtime/context.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { markTenantsChanged } from '../../common/store/data-changes.ts'
import { TOPICS } from '../../common/topics.ts'
import { runIdentity, type RunningIdentity } from '../../pipelines/identity/run.ts'
import { resolveTenant, type ProfileChanged } from '../../pipelines/identity/resolve.ts'
import { IdentityStore } from '../../pipelines/identity/store.ts'
import { readTopic, silentLogger, testConfig, migratedStore } from '../helpers.ts'

let store: Store
let log: EventLog
let codec: EventCodec
let identity: RunningIdentity

const T = 901
const SHUFFLED = 902

beforeAll(async () => {
  store = await migratedStore()
  ;({ log, codec } = await openEventLog(testConfig('embedded'), silentLogger))
  await log.createTopics([{ name: TOPICS.profileChanges.name, partitions: 2, compacted: true }])
  identity = runIdentity({ store, log, codec, logger: silentLogger }, { intervalMs: 3_600_000 })
})

afterAll(async () => {
  await identity?.stop()
  await log?.close()
  await store?.close()
})

interface Person {
  id: number
  email?: string
  phone?: string
  national_id?: string
  created: string
  source: string
  source_ids?: { source: string; id: string }[]
}

/** The same people as the commerce platform and the marketplace know them. */
const PEOPLE: Person[] = [
  { id: 1, email: 'ana.perez@gmail.com', phone: '+54 9 11 4123-4567', created: '2024-01-10', source: 'commerce_platform' },
  { id: 2, email: 'Ana.Perez@Gmail.com ', national_id: '20-27456123-9', created: '2024-03-01', source: 'marketplace', source_ids: [{ source: 'marketplace', id: 'MLA-88' }] },
  { id: 3, phone: '011 15 4123-4567', created: '2024-05-01', source: 'marketplace' },
  { id: 4, email: 'juan@hotmail.com', created: '2023-12-01', source: 'commerce_platform' },
  { id: 5, email: 'juan.p@hotmail.com', national_id: '30.987.654', created: '2024-02-01', source: 'marketplace' },
  ...[6, 7, 8, 9, 10, 11].map((id) => ({ id, email: 'familia.gomez@gmail.com', created: `2024-0${(id % 9) + 1}-15`, source: 'commerce_platform' })),
]

async function insertCustomers(tenant: number, people: Person[], offset = 0) {
  await store.insert({
    table: 'customers',
    format: 'JSONEachRow',
    values: people.map((p) => ({
      tenant_id: tenant, customer_id: p.id + offset, last_event_id: `c${p.id}`, email: p.email ?? null, phone: p.phone ?? null, national_id: p.national_id ?? null,
      created_at: `${p.created} 10:00:00.000`, source_ids: p.source_ids ?? [], source: p.source, updated_at: '2025-01-01 00:00:00.000', version: 1,
    })),
  })
  await markTenantsChanged(store, [tenant])
}

async function profiles(tenant: number): Promise<Record<number, number>> {
  return Object.fromEntries(await new IdentityStore(store).profiles(tenant))
}

async function changesOf(tenant: number): Promise<(ProfileChanged & { key?: string })[]> {
  const records = await readTopic<ProfileChanged>(log, codec, TOPICS.profileChanges.name)
  // Partitions interleave: in profile order, then as published (a compacted topic keeps the last per key).
  return records
    .filter((r) => r.value.tenant_id === tenant)
    .map((r) => ({ ...r.value, key: r.key }))
    .sort((a, b) => a.profile_id - b.profile_id || a.occurred_at - b.occurred_at)
}

describe('identity resolution of a tenant', () => {
  it('writes a profile for every customer and publishes each new profile, keyed tenant:profile', async () => {
    await insertCustomers(T, PEOPLE)
    const round = await identity.runOnce()
    expect(round.get(T)).toMatchObject({ customers: 11, profiles: 9, reassigned: 11, blocked: [{ identifier: 'email:familia.gomez@gmail.com', customers: 6 }] })
    expect(await profiles(T)).toEqual({ 1: 1, 2: 1, 3: 1, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9, 10: 10, 11: 11 })
    const events = await changesOf(T)
    expect(events.map((e) => [e.profile_id, e.change, e.members])).toEqual([
      // 2 and 3 were their own profiles until resolved into 1.
      [1, 'created', [1, 2, 3]], [2, 'absorbed', []], [3, 'absorbed', []], [4, 'created', [4]], [5, 'created', [5]], [6, 'created', [6]], [7, 'created', [7]], [8, 'created', [8]], [9, 'created', [9]], [10, 'created', [10]], [11, 'created', [11]],
    ])
    expect(events.map((e) => (e as ProfileChanged & { key?: string }).key)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11].map((p) => `${T}:${p}`))
    // Nothing changed since: the next round leaves the tenant alone.
    expect((await identity.runOnce()).has(T)).toBe(false)
  })

  it('a customer who bridges two profiles merges them into the older one; an admin split undoes it', async () => {
    await insertCustomers(T, [{ id: 12, email: 'juan@hotmail.com', national_id: '30987654', created: '2024-06-01', source: 'marketplace' }])
    const round = await identity.runOnce()
    expect(round.get(T)).toMatchObject({ customers: 12, profiles: 8, reassigned: 2 })
    expect(await profiles(T)).toMatchObject({ 4: 4, 5: 4, 12: 4 })
    const merged = (await changesOf(T)).filter((e) => e.change !== 'created' && ![2, 3].includes(e.profile_id))
    expect(merged.map((e) => [e.profile_id, e.change, e.members, e.previous_profile_ids, e.absorbed_into])).toEqual([
      [4, 'merged', [4, 5, 12], [4, 5], null],
      [5, 'absorbed', [], [5], 4],
      [12, 'absorbed', [], [12], 4],
    ])
    // The admin unlinks customer 12's national id: 5 stands alone again, 12 stays with 4 by e-mail.
    await new IdentityStore(store).exclude(T, { customerId: 12, identifier: 'national_id:30987654' })
    const split = await resolveTenant({ store, log, codec, logger: silentLogger }, T)
    expect(split.events.map((e) => [e.profile_id, e.change, e.members])).toEqual([
      [4, 'split', [4, 12]],
      [5, 'split', [5]],
    ])
    expect(await profiles(T)).toMatchObject({ 4: 4, 5: 5, 12: 4 })
  })

  it('resolves the same customers arriving in another order, in other batches, twice, to the same profiles', async () => {
    const reversed = [...PEOPLE].reverse()
    await insertCustomers(SHUFFLED, reversed.slice(0, 4))
    await identity.runOnce()
    await insertCustomers(SHUFFLED, reversed.slice(4))
    await insertCustomers(SHUFFLED, reversed.slice(2, 6)) // delivered twice
    await identity.runOnce()
    const want = Object.fromEntries(Object.entries(await profiles(T)).filter(([c]) => Number(c) <= 11))
    // T's 5 is alone again after the split, as in a resolution of PEOPLE alone.
    expect(await profiles(SHUFFLED)).toEqual({ ...want, 5: 5 })
  })
})
