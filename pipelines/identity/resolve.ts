/**
 * Resolving a tenant: its customers' identifiers read, the profiles computed (graph.ts), the
 * customers whose profile changed written to `customer_profiles`, and every profile that changed
 * published on `cdp.profile-changes.v1` (key tenant:profile_id, compacted; at least once). The whole tenant is
 * resolved from its stored customers each time its data changed, so the outcome does not depend on
 * the order the events arrived in, on duplicates or on a crash in between (a resolution that did
 * not finish is simply done again). docs/identity.md.
 */
import { randomUUID } from 'node:crypto'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { Logger } from '../../common/logger.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import { TOPICS } from '../../common/topics.ts'
import type { ProfileChanged } from '../../common/events.ts'
import { resolveProfiles, type Resolution } from './graph.ts'
import { IdentityStore } from './store.ts'

export type { ProfileChanged }

export interface ResolveDeps {
  store: Store
  log: EventLog
  codec: EventCodec
  logger: Logger
  now?: () => number
}

export interface TenantResolved {
  customers: number
  profiles: number
  /** Customers whose profile changed. */
  reassigned: number
  events: ProfileChanged[]
  blocked: Resolution['blocked']
}

/**
 * The records that describe how `after` differs from the stored `before` (pure): one per profile
 * whose membership changed (created: all new customers; merged: it took in other profiles or new
 * customers; split: it lost members), and an `absorbed` record for a profile that no longer exists,
 * including a new customer's own (every customer is its own profile until it is resolved).
 */
export function profileEvents(tenantId: number, before: ReadonlyMap<number, number>, after: Resolution, now: number): ProfileChanged[] {
  const header = (profile_id: number) => ({ event_id: randomUUID(), tenant_id: tenantId, occurred_at: now, source: 'identity', profile_id })
  const membersBefore = new Map<number, Set<number>>()
  for (const [customer, profile] of before) {
    const m = membersBefore.get(profile) ?? new Set<number>()
    m.add(customer)
    membersBefore.set(profile, m)
  }
  const out: ProfileChanged[] = []
  for (const p of after.profiles) {
    const previous = [...new Set(p.members.map((m) => before.get(m)).filter((x): x is number => x !== undefined))].sort((a, b) => a - b)
    const old = membersBefore.get(p.profileId)
    const same = previous.length === 1 && previous[0] === p.profileId && old !== undefined && old.size === p.members.length && p.members.every((m) => old.has(m))
    if (same) continue
    const lostMembers = previous.length === 1 && [...(membersBefore.get(previous[0]!) ?? [])].some((m) => after.profileOf.get(m) !== p.profileId)
    const change = previous.length === 0 ? 'created' : previous.length > 1 ? 'merged' : lostMembers ? 'split' : 'merged'
    out.push({ ...header(p.profileId), change, members: p.members, previous_profile_ids: previous, absorbed_into: null })
  }
  // A customer is its own profile until it is resolved: a new customer resolved into another's
  // profile ends that implicit one, so the owner of its partition (and every subscriber) hears it.
  for (const p of after.profiles) {
    for (const m of p.members) if (m !== p.profileId && !before.has(m)) out.push({ ...header(m), change: 'absorbed', members: [], previous_profile_ids: [m], absorbed_into: p.profileId })
  }
  const exists = new Set(after.profiles.map((p) => p.profileId))
  for (const [old, members] of [...membersBefore].sort((a, b) => a[0] - b[0])) {
    if (exists.has(old)) continue
    const into = [...members].map((m) => after.profileOf.get(m)).find((x) => x !== undefined) ?? null
    out.push({ ...header(old), change: 'absorbed', members: [], previous_profile_ids: [old], absorbed_into: into })
  }
  return out
}

export async function resolveTenant(deps: ResolveDeps, tenantId: number): Promise<TenantResolved> {
  const now = deps.now ?? Date.now
  const ids = new IdentityStore(deps.store, now)
  const startedAt = now()
  const [customers, settings, exclusions, before] = await Promise.all([ids.sourceCustomers(tenantId), ids.settings(tenantId), ids.exclusions(tenantId), ids.profiles(tenantId)])
  const after = resolveProfiles(customers, settings, exclusions)
  const reassigned: [number, number][] = []
  for (const [customer, profile] of after.profileOf) if (before.get(customer) !== profile) reassigned.push([customer, profile])
  const events = profileEvents(tenantId, before, after, now())
  // The events first, then the rows: a resolution that fails between them finds the same
  // difference again and publishes it again (at least once; the records say the same), where rows
  // written first would hide the change from the retry and its events would be lost.
  if (events.length) {
    const records = await Promise.all(events.map(async (e) => ({ key: `${e.tenant_id}:${e.profile_id}`, value: await deps.codec.encode(TOPICS.profileChanges.name, e) })))
    await deps.log.send(TOPICS.profileChanges.name, records)
  }
  await ids.writeProfiles(tenantId, reassigned)
  await ids.recordResolution(tenantId, { startedAt, customers: customers.length, profiles: after.profiles.length, blocked: after.blocked })
  if (after.blocked.length) deps.logger.warn({ tenant_id: tenantId, blocked: after.blocked.slice(0, 10) }, 'identifiers carried by too many customers link none of them')
  if (events.length) deps.logger.info({ tenant_id: tenantId, reassigned: reassigned.length, events: events.length }, 'profiles changed')
  return { customers: customers.length, profiles: after.profiles.length, reassigned: reassigned.length, events, blocked: after.blocked }
}
