/**
 * The identity use cases behind the profile endpoints: one profile with its source customers,
 * their identifiers and why they were linked; an admin's split (one customer's identifier stops
 * linking, the tenant is resolved again at once). docs/identity.md.
 */
import type { EventCodec } from '../../common/eventlog/codec.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { Logger } from '../../common/logger.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import { InvalidInputError, NotFoundError } from '../../common/domain-errors.ts'
import { DEFAULT_IDENTITY_SETTINGS, resolveProfiles, type IdentitySettings, type Link } from './graph.ts'
import { identifierKey } from './identifiers.ts'
import { resolveTenant, type TenantResolved } from './resolve.ts'
import { markTenantsChanged } from '../../common/store/data-changes.ts'
import { IdentityStore } from './store.ts'

export interface IdentityServiceDeps {
  store: Store
  log: EventLog
  codec: EventCodec
  logger: Logger
  now?: () => number
}

export interface ProfileView {
  profile_id: number
  members: { customer_id: number; first_seen_at: string; identifiers: string[] }[]
  links: Link[]
  /** Identifiers of the members that link nobody: carried by too many customers, or split off by an admin. */
  not_linking: { identifier: string; reason: 'too_many_customers' | 'split_by_admin' | 'kind_disabled'; customers?: number }[]
}

/** National ids are shown with their last 3 digits only; e-mails and phones as stored. */
export function maskIdentifier(key: string): string {
  if (!key.startsWith('national_id:')) return key
  const v = key.slice('national_id:'.length)
  return `national_id:${'*'.repeat(Math.max(0, v.length - 3))}${v.slice(-3)}`
}

export class IdentityService {
  readonly #ids: IdentityStore

  constructor(private readonly deps: IdentityServiceDeps) {
    this.#ids = new IdentityStore(deps.store, deps.now)
  }

  settings(tenantId: number): Promise<IdentitySettings> {
    return this.#ids.settings(tenantId)
  }

  /** Stores the tenant's settings and marks it changed: the resolver's next round applies them. */
  async putSettings(tenantId: number, s: Pick<IdentitySettings, 'mergeKinds' | 'maxCustomersPerIdentifier'>): Promise<void> {
    await this.#ids.putSettings(tenantId, { ...DEFAULT_IDENTITY_SETTINGS, ...s })
    await markTenantsChanged(this.deps.store, [tenantId])
    this.deps.logger.info({ tenant_id: tenantId, merge_kinds: s.mergeKinds, max_customers_per_identifier: s.maxCustomersPerIdentifier }, 'identity settings changed')
  }

  /** The profile as the last resolution left it; NotFoundError when the tenant has no such profile. */
  async profile(tenantId: number, profileId: number): Promise<ProfileView> {
    const memberIds = await this.#ids.membersOf(tenantId, profileId)
    if (!memberIds.length) throw new NotFoundError('Profile not found', { tenant_id: tenantId, profile_id: profileId })
    const [members, settings, exclusions, last] = await Promise.all([this.#ids.sourceCustomers(tenantId, memberIds), this.#ids.settings(tenantId), this.#ids.exclusions(tenantId), this.#ids.lastResolution(tenantId)])
    const wanted = new Set(memberIds)
    // Why they are together: the members' own resolution reproduces the links between them (the
    // guard counts every customer of the tenant, so blocked identifiers come from the last resolution).
    const blocked = new Map((last?.blocked ?? []).map((b) => [b.identifier, b.customers]))
    const usable = members.map((m) => ({ ...m, identifiers: m.identifiers.filter((i) => !blocked.has(identifierKey(i))) }))
    const r = resolveProfiles(usable, { ...settings, maxCustomersPerIdentifier: Number.MAX_SAFE_INTEGER }, exclusions)
    const links = r.profiles.flatMap((p) => p.links).map((l) => ({ ...l, identifier: maskIdentifier(l.identifier) }))
    const excluded = new Set(exclusions.filter((e) => wanted.has(e.customerId)).map((e) => e.identifier))
    const kinds = new Set<string>(settings.mergeKinds)
    const not_linking: ProfileView['not_linking'] = []
    for (const key of new Set(members.flatMap((m) => m.identifiers.map(identifierKey)))) {
      if (blocked.has(key)) not_linking.push({ identifier: maskIdentifier(key), reason: 'too_many_customers', customers: blocked.get(key) })
      else if (excluded.has(key)) not_linking.push({ identifier: maskIdentifier(key), reason: 'split_by_admin' })
      else if (!kinds.has(key.slice(0, key.indexOf(':')))) not_linking.push({ identifier: maskIdentifier(key), reason: 'kind_disabled' })
    }
    members.sort((a, b) => a.firstSeenAt - b.firstSeenAt || a.customerId - b.customerId)
    return {
      profile_id: profileId,
      members: members.map((m) => ({ customer_id: m.customerId, first_seen_at: new Date(m.firstSeenAt).toISOString(), identifiers: m.identifiers.map((i) => maskIdentifier(identifierKey(i))) })),
      links,
      not_linking: not_linking.sort((a, b) => (a.identifier < b.identifier ? -1 : 1)),
    }
  }

  /**
   * An admin's split: `customerId`'s `identifier` (as the profile shows it; a masked national id is
   * matched against the member's own) stops linking; the tenant is resolved again now.
   */
  async split(tenantId: number, profileId: number, customerId: number, identifier: string): Promise<TenantResolved> {
    const view = await this.profile(tenantId, profileId)
    const member = view.members.find((m) => m.customer_id === customerId)
    if (!member) throw new InvalidInputError([{ path: 'customer_id', code: 'not_a_member', message: `customer ${customerId} is not in profile ${profileId}` }])
    const [own] = await this.#ids.sourceCustomers(tenantId, [customerId])
    if (!own) throw new InvalidInputError([{ path: 'customer_id', code: 'not_a_member', message: `customer ${customerId} has no profile data` }])
    const key = own.identifiers.map(identifierKey).find((k) => k === identifier || maskIdentifier(k) === identifier)
    if (!key) throw new InvalidInputError([{ path: 'identifier', code: 'unknown_identifier', message: `customer ${customerId} has no identifier ${identifier}` }])
    await this.#ids.exclude(tenantId, { customerId, identifier: key })
    // A resolution that started before the exclusion (the features role's) may still write what it
    // computed without it: marking the tenant changed makes it due again, so the split holds.
    await markTenantsChanged(this.deps.store, [tenantId])
    this.deps.logger.info({ tenant_id: tenantId, profile_id: profileId, customer_id: customerId, identifier: maskIdentifier(key) }, 'identity link split by an admin')
    return resolveTenant(this.deps, tenantId)
  }
}
