/**
 * Which source customers the feature consumer scores together (pure): the fold of the identity
 * lane's profile-change records (`cdp.profile-changes.v1`, docs/identity.md). Each record is a
 * profile's whole membership at one resolution; the newest record of a profile (occurred_at, then
 * event id) wins, so records arriving in any order, twice or after a restart fold to the same
 * memberships. A customer belongs to the profile whose newest record lists it; a customer no
 * record lists is its own profile.
 */
export interface ProfileRecord {
  tenantId: number
  profileId: number
  /** Oldest first; empty when the profile was absorbed. */
  members: number[]
  absorbedInto: number | null
  at: number
  eventId: string
}

const key = (tenantId: number, id: number) => `${tenantId}:${id}`

export function newerRecord(a: ProfileRecord, b: ProfileRecord): boolean {
  return b.at > a.at || (b.at === a.at && b.eventId > a.eventId)
}

export class ProfileMemberships {
  /** Newest record of each profile, by `tenant:profile`. */
  private readonly records = new Map<string, ProfileRecord>()
  /** Which profile lists each customer, by `tenant:customer` (only customers some record lists). */
  private readonly listedIn = new Map<string, ProfileRecord>()

  /** Folds a record; true when it is the profile's newest (its membership may have changed). */
  apply(r: ProfileRecord): boolean {
    const k = key(r.tenantId, r.profileId)
    const old = this.records.get(k)
    if (old && !newerRecord(old, r)) return false
    this.records.set(k, r)
    const now = new Set(r.members)
    for (const m of old?.members ?? []) {
      const mk = key(r.tenantId, m)
      if (!now.has(m) && this.listedIn.get(mk) === old) this.listedIn.delete(mk)
    }
    for (const m of r.members) {
      const mk = key(r.tenantId, m)
      const cur = this.listedIn.get(mk)
      if (!cur || cur === old || newerRecord(cur, r)) this.listedIn.set(mk, r)
    }
    return true
  }

  /** Forgets the records `drop` selects (a revoked partition's). */
  forget(drop: (r: ProfileRecord) => boolean): void {
    for (const [k, r] of this.records) if (drop(r)) this.records.delete(k)
    for (const [k, r] of this.listedIn) if (drop(r)) this.listedIn.delete(k)
  }

  record(tenantId: number, profileId: number): ProfileRecord | undefined {
    return this.records.get(key(tenantId, profileId))
  }

  /** False when the customer's own profile was absorbed into another: it has no row of its own. */
  isProfile(tenantId: number, customerId: number): boolean {
    const r = this.records.get(key(tenantId, customerId))
    return !r || r.members.length > 0
  }

  /** The profile a customer's orders count for, when a record this fold holds lists it. */
  profileOf(tenantId: number, customerId: number): number | undefined {
    return this.listedIn.get(key(tenantId, customerId))?.profileId
  }

  /** Whether a record gives the profile other members besides its own customer (cheap: no list is built). */
  hasOthers(tenantId: number, profileId: number): boolean {
    return (this.records.get(key(tenantId, profileId))?.members.length ?? 0) > 1
  }

  /**
   * The customers scored as one profile: those its newest record lists and no newer record of
   * another profile claims; the customer alone when no record names it.
   */
  membersOf(tenantId: number, profileId: number): number[] {
    const r = this.records.get(key(tenantId, profileId))
    if (!r) return [profileId]
    return r.members.filter((m) => this.listedIn.get(key(tenantId, m)) === r)
  }
}
