/**
 * Resolving a tenant: its customers' identifiers read, the profiles computed (graph.ts), the
 * customers whose profile changed written to `customer_profiles`, and every profile that changed
 * published on `cdp.profile-changes.v1` (key tenant:profile_id, compacted; at least once). The whole tenant is
 * resolved from its stored customers each time its data changed, so the outcome does not depend on
 * the order the events arrived in, on duplicates or on a crash in between (a resolution that did
 * not finish is simply done again). docs/identity.md.
 */
import { newEventId } from '../../common/event-id.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { Logger } from '../../common/logger.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import { TOPICS } from '../../common/topics.ts'
import type { ProfileChanged } from '../../common/events.ts'
import { resolveProfiles, type IdentitySettings, type Resolution, type SourceCustomer } from './graph.ts'
import { identifierKey } from './identifiers.ts'
import { IdentityStore } from './store.ts'

export type { ProfileChanged }

export interface ResolveDeps {
  store: Store
  log: EventLog
  codec: EventCodec
  logger: Logger
  now?: () => number
  /** Default INGEST_OVERLAP_MS. */
  ingestOverlapMs?: number
}

export interface TenantResolved {
  customers: number
  profiles: number
  /** Customers whose profile changed. */
  reassigned: number
  events: ProfileChanged[]
  blocked: Resolution['blocked']
  /** full: every customer of the tenant was read; incremental: those changed and what they reach. */
  mode: 'full' | 'incremental'
}

/**
 * The records that describe how `after` differs from the stored `before` (pure): one per profile
 * whose membership changed (created: all new customers; merged: it took in other profiles or new
 * customers; split: it lost members), and an `absorbed` record for a profile that no longer exists,
 * including a new customer's own (every customer is its own profile until it is resolved).
 */
export function profileEvents(tenantId: number, before: ReadonlyMap<number, number>, after: Resolution, now: number): ProfileChanged[] {
  const header = (profile_id: number) => ({ event_id: newEventId(), tenant_id: tenantId, occurred_at: now, source: 'identity', profile_id })
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

/** The next resolution reads customers written from this long before the last one started (an insert in flight then). */
export const INGEST_OVERLAP_MS = 10_000
/** An incremental resolution when at most this many customers (or this share of the tenant) changed; else a full one. */
export const INCREMENTAL_MAX_CUSTOMERS = 10_000
export const INCREMENTAL_MAX_SHARE = 0.1

/**
 * Resolves a tenant. The first resolution (and one after a settings change) reads every customer;
 * later ones are incremental: the customers written since the last one (and those with an admin's
 * split), every customer an identifier of theirs reaches (through the identifier index, within the
 * guard's limit) and the whole stored profile of each, until nothing new is reached. Those
 * customers are resolved together with the tenant-wide count of each identifier, so the outcome
 * is the one a full resolution gives (test/identity/incremental.test.ts).
 */
export async function resolveTenant(deps: ResolveDeps, tenantId: number, opts: { full?: boolean } = {}): Promise<TenantResolved> {
  const now = deps.now ?? Date.now
  const ids = new IdentityStore(deps.store, now)
  const startedAt = now()
  const ms: Record<string, number> = {}
  let t0 = performance.now()
  const lap = (phase: string) => {
    ms[phase] = Math.round(performance.now() - t0)
    t0 = performance.now()
  }
  const [ingestMark, settings, settingsVersion, exclusions, last] = await Promise.all([ids.storeNow(), ids.settings(tenantId), ids.settingsVersion(tenantId), ids.exclusions(tenantId), ids.lastResolution(tenantId)])
  const incremental = !opts.full && last !== null && last.ingestMark > 0 && last.settingsVersion === settingsVersion
  const changed = incremental ? await ids.changedCustomers(tenantId, last.ingestMark - (deps.ingestOverlapMs ?? INGEST_OVERLAP_MS)) : []
  // Past a share of the tenant, reading everything at once is cheaper than reaching out from each.
  const scope = incremental && changed.length <= Math.max(INCREMENTAL_MAX_CUSTOMERS, last.customers * INCREMENTAL_MAX_SHARE) ? await reach(ids, tenantId, changed, settings) : null
  // The index first (an incremental resolution's reach wrote its changed customers'): a resolution
  // that fails after it is done again from the same mark.
  let customers: SourceCustomer[]
  let before: Map<number, number>
  if (scope) {
    ;({ customers, before } = scope)
    lap('read')
  } else {
    let stored: Map<number, Set<string>>
    ;[customers, before, stored] = await Promise.all([ids.sourceCustomers(tenantId), ids.profiles(tenantId), ids.keysOf(tenantId)])
    lap('read')
    await ids.writeKeys(tenantId, customers, stored)
    lap('index')
  }
  const after = resolveProfiles(customers, settings, exclusions, scope?.counts)
  const reassigned: [number, number][] = []
  for (const [customer, profile] of after.profileOf) if (before.get(customer) !== profile) reassigned.push([customer, profile])
  const events = profileEvents(tenantId, before, after, now())
  lap('resolve')
  // The events first, then the rows: a resolution that fails between them finds the same
  // difference again and publishes it again (at least once; the records say the same), where rows
  // written first would hide the change from the retry and its events would be lost.
  if (events.length) {
    const records = await Promise.all(events.map(async (e) => ({ key: `${e.tenant_id}:${e.profile_id}`, value: await deps.codec.encode(TOPICS.profileChanges.name, e) })))
    await deps.log.send(TOPICS.profileChanges.name, records)
  }
  lap('publish')
  await ids.writeProfiles(tenantId, reassigned)
  lap('write')
  // An incremental resolution saw only some identifiers: the others' alert stands as it was.
  const blocked = scope ? incrementalBlocked(last!.blocked, customers, after.blocked) : after.blocked
  const [customerCount, profileCount] = scope ? await Promise.all([ids.customerCount(tenantId), ids.profileCount(tenantId)]) : [customers.length, after.profiles.length]
  await ids.recordResolution(tenantId, { startedAt, ingestMark, settingsVersion, mode: scope ? 'incremental' : 'full', customers: customerCount, profiles: profileCount, blocked })
  if (after.blocked.length) deps.logger.warn({ tenant_id: tenantId, blocked: after.blocked.slice(0, 10) }, 'identifiers carried by too many customers link none of them')
  if (events.length) deps.logger.info({ tenant_id: tenantId, reassigned: reassigned.length, events: events.length, mode: scope ? 'incremental' : 'full', resolved: customers.length, ms }, 'profiles changed')
  return { customers: customers.length, profiles: after.profiles.length, reassigned: reassigned.length, events, blocked, mode: scope ? 'incremental' : 'full' }
}

/** The alert after an incremental resolution: the identifiers it saw as it found them, the others as the last resolution did. */
function incrementalBlocked(previous: Resolution['blocked'], resolved: readonly SourceCustomer[], found: Resolution['blocked']): Resolution['blocked'] {
  const seen = new Set(resolved.flatMap((c) => c.identifiers.map(identifierKey)))
  return [...previous.filter((b) => !seen.has(b.identifier)), ...found].sort((a, b) => b.customers - a.customers || (a.identifier < b.identifier ? -1 : 1))
}

/**
 * The customers an incremental resolution must resolve together, from the changed ones: their
 * identifiers (written to the index first), every customer an identifier within the guard's limit
 * reaches, and all members of each one's stored profile, until closed.
 */
async function reach(ids: IdentityStore, tenantId: number, changed: readonly number[], settings: IdentitySettings) {
  const kinds = new Set(settings.mergeKinds)
  const customers = new Map<number, SourceCustomer>()
  const before = new Map<number, number>()
  const counts = new Map<string, number>()
  const asked = new Set<string>()
  const limit = settings.maxCustomersPerIdentifier
  let gained = new Map<string, number>()
  let next = [...changed]
  let first = true
  while (next.length) {
    const members = await ids.profileMembers(tenantId, next)
    for (const [c, p] of members) before.set(c, p)
    const batch = [...new Set([...next, ...members.keys()])].filter((c) => !customers.has(c))
    const read = await ids.sourceCustomers(tenantId, batch)
    if (first) {
      // The changed customers' identifiers go into the index before anyone counts them.
      gained = await ids.writeKeys(tenantId, read, await ids.keysOf(tenantId, read.map((c) => c.customerId)))
      first = false
    }
    for (const c of read) customers.set(c.customerId, c)
    const keys = [...new Set(read.flatMap((c) => c.identifiers.filter((i) => kinds.has(i.kind)).map(identifierKey)))].filter((k) => !asked.has(k))
    for (const k of keys) asked.add(k)
    const found = await ids.carriersOf(tenantId, keys, limit)
    for (const [k, n] of found.counts) counts.set(k, n)
    // An identifier the new carriers pushed over the limit linked its carriers until now: they are resolved again.
    const crossed = [...found.counts].filter(([k, n]) => n > limit && n - (gained.get(k) ?? 0) <= limit).map(([k]) => k)
    const unlinked = crossed.length ? (await ids.carriersOf(tenantId, crossed, 1_000_000)).carriers : new Map<string, number[]>()
    next = [...new Set([...found.carriers.values(), ...unlinked.values()].flat())].filter((c) => !customers.has(c))
  }
  return { customers: [...customers.values()].sort((a, b) => a.customerId - b.customerId), before, counts }
}
