/**
 * The identity graph of a tenant: source customers are nodes, shared identifiers join them, and a
 * profile (one person) is a connected component. Pure and deterministic: the same customers give
 * the same profiles whatever order they arrived in (docs/identity.md).
 *
 * - Guard: an identifier carried by more source customers than `maxCustomersPerIdentifier` links
 *   none of them (a family e-mail, a shop's own phone typed for every walk-in order) and is
 *   reported in `blocked`, for an alert.
 * - Only the kinds in `mergeKinds` link (per-tenant setting: a shop whose national ids are
 *   unreliable can turn them off).
 * - Exclusions (an admin's split) remove one identifier from one customer before linking.
 * - A profile's id is its oldest member's customer id (first seen, then the smaller id): a merge
 *   keeps the older profile's id, a split gives the part that lost the oldest member its own
 *   oldest member's id.
 */
import { identifierKey, type Identifier, type IdentifierKind, IDENTIFIER_KINDS } from './identifiers.ts'

export interface IdentitySettings {
  mergeKinds: readonly IdentifierKind[]
  maxCustomersPerIdentifier: number
  /**
   * At most this many distinct values of a kind in one profile (a person has one national id, one
   * or two phones): a link that would exceed it is not made, so a shared family e-mail does not
   * join relatives whose DNIs or phones differ. Kinds not listed are unlimited.
   */
  maxPerProfile: Partial<Record<IdentifierKind, number>>
}

export const DEFAULT_IDENTITY_SETTINGS: IdentitySettings = { mergeKinds: IDENTIFIER_KINDS, maxCustomersPerIdentifier: 4, maxPerProfile: { national_id: 1, phone: 2 } }

/** Links are made strongest kind first, then by value: the same links in the same order whatever the arrival order. */
const KIND_ORDER: Record<IdentifierKind, number> = { national_id: 0, phone: 1, email: 2, source_id: 3 }

export interface SourceCustomer {
  customerId: number
  /** When the customer was first seen (epoch ms): decides which profile id survives a merge. */
  firstSeenAt: number
  identifiers: readonly Identifier[]
}

/** An admin's split: this customer's identifier links nothing. */
export interface Exclusion {
  customerId: number
  identifier: string
}

/** Why members are in one profile: an identifier they share, and who shares it. */
export interface Link {
  identifier: string
  customers: number[]
}

export interface Profile {
  profileId: number
  /** Oldest first. */
  members: number[]
  links: Link[]
}

export interface Resolution {
  profiles: Profile[]
  profileOf: Map<number, number>
  /** Identifiers that did not link (too many customers carry them), with their count. */
  blocked: { identifier: string; customers: number }[]
}

/**
 * `carriers`: how many customers of the whole tenant carry an identifier, when `customers` is only
 * part of it (an incremental resolution: every customer an identifier below the guard's limit
 * reaches is among them, but a blocked identifier's other carriers need not be).
 */
export function resolveProfiles(
  customers: readonly SourceCustomer[],
  settings: IdentitySettings = DEFAULT_IDENTITY_SETTINGS,
  exclusions: readonly Exclusion[] = [],
  carriers: ReadonlyMap<string, number> = new Map(),
): Resolution {
  const byId = new Map<number, SourceCustomer>()
  for (const c of customers) byId.set(c.customerId, c)
  const excluded = new Set(exclusions.map((e) => `${e.customerId}\u0000${e.identifier}`))
  const kinds = new Set(settings.mergeKinds)
  // identifier key → the customers carrying it.
  const carrying = new Map<string, number[]>()
  for (const c of byId.values()) {
    for (const i of c.identifiers) {
      if (!kinds.has(i.kind)) continue
      const key = identifierKey(i)
      if (excluded.has(`${c.customerId}\u0000${key}`)) continue
      const list = carrying.get(key)
      if (list) {
        if (list[list.length - 1] !== c.customerId) list.push(c.customerId)
      } else carrying.set(key, [c.customerId])
    }
  }
  const parent = new Map<number, number>()
  const find = (x: number): number => {
    let root = x
    while (parent.get(root) !== root) root = parent.get(root)!
    for (let n = x; n !== root; ) {
      const next = parent.get(n)!
      parent.set(n, root)
      n = next
    }
    return root
  }
  // Per component root: the distinct values of each limited kind it holds.
  const limited = Object.entries(settings.maxPerProfile ?? {}) as [IdentifierKind, number][]
  const held = new Map<number, Map<IdentifierKind, Set<string>>>()
  for (const c of byId.values()) {
    parent.set(c.customerId, c.customerId)
    if (!limited.length) continue
    const m = new Map<IdentifierKind, Set<string>>()
    for (const [kind] of limited) m.set(kind, new Set(c.identifiers.filter((i) => i.kind === kind && !excluded.has(`${c.customerId}\u0000${identifierKey(i)}`)).map((i) => i.value)))
    held.set(c.customerId, m)
  }
  const union = (a: number, b: number): boolean => {
    const ra = find(a)
    const rb = find(b)
    if (ra === rb) return true
    const ha = held.get(ra)
    const hb = held.get(rb)
    if (ha && hb) {
      for (const [kind, max] of limited) {
        const sa = ha.get(kind)!
        const sb = hb.get(kind)!
        let n = sa.size
        for (const v of sb) if (!sa.has(v)) n++
        if (n > max) return false
      }
      // Keep the larger sets, fold the smaller ones in.
      for (const [kind] of limited) {
        const sa = ha.get(kind)!
        for (const v of hb.get(kind)!) sa.add(v)
      }
      held.delete(rb)
    }
    parent.set(rb, ra)
    return true
  }
  const blocked: Resolution['blocked'] = []
  // Sorted once by a precomputed key (kind rank, then the identifier): comparing plain strings.
  const count = (identifier: string, list: readonly number[]) => Math.max(list.length, carriers.get(identifier) ?? 0)
  const ordered = [...carrying]
    .filter(([identifier, list]) => count(identifier, list) > 1)
    .map(([identifier, list]) => ({ sortKey: `${KIND_ORDER[identifier.slice(0, identifier.indexOf(':')) as IdentifierKind]}${identifier}`, identifier, list }))
    .sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0))
    .map(({ identifier, list }) => [identifier, list] as const)
  for (const [identifier, list] of ordered) {
    if (count(identifier, list) > settings.maxCustomersPerIdentifier) {
      blocked.push({ identifier, customers: count(identifier, list) })
      continue
    }
    if (list.length < 2) continue
    const sorted = [...list].sort((a, b) => a - b)
    for (const c of sorted.slice(1)) union(sorted[0]!, c)
  }
  // Why members are together: each identifier shared by two or more members of one profile.
  const links: Link[] = []
  for (const [identifier, list] of ordered) {
    if (list.length < 2 || count(identifier, list) > settings.maxCustomersPerIdentifier) continue
    const groups = new Map<number, number[]>()
    for (const c of list) {
      const r = find(c)
      const g = groups.get(r)
      if (g) g.push(c)
      else groups.set(r, [c])
    }
    for (const g of groups.values()) if (g.length > 1) links.push({ identifier, customers: g.sort((a, b) => a - b) })
  }
  // Members per component, oldest first; the oldest names the profile.
  const older = (a: number, b: number) => byId.get(a)!.firstSeenAt - byId.get(b)!.firstSeenAt || a - b
  // Single-member components need no sort; most profiles are one customer.
  const components = new Map<number, number[]>()
  for (const id of byId.keys()) {
    const r = find(id)
    const m = components.get(r)
    if (m) m.push(id)
    else components.set(r, [id])
  }
  const profileOf = new Map<number, number>()
  const profiles: Profile[] = []
  const linksOf = new Map<number, Link[]>()
  for (const l of links) {
    const r = find(l.customers[0]!)
    const list = linksOf.get(r)
    if (list) list.push(l)
    else linksOf.set(r, [l])
  }
  for (const [root, members] of components) {
    if (members.length > 1) members.sort(older)
    const profileId = members[0]!
    for (const m of members) profileOf.set(m, profileId)
    profiles.push({ profileId, members, links: (linksOf.get(root) ?? []).sort((a, b) => (a.identifier < b.identifier ? -1 : a.identifier > b.identifier ? 1 : 0)) })
  }
  profiles.sort((a, b) => a.profileId - b.profileId)
  blocked.sort((a, b) => b.customers - a.customers || (a.identifier < b.identifier ? -1 : 1))
  return { profiles, profileOf, blocked }
}
