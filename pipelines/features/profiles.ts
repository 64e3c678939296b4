import { CustomerIndex } from './customer-index.ts'

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

export function newerRecord(a: ProfileRecord, b: ProfileRecord): boolean {
  return b.at > a.at || (b.at === a.at && b.eventId > a.eventId)
}

export class ProfileMemberships {
  /** Newest record of each profile. */
  private readonly records = new CustomerIndex<ProfileRecord>()
  /** Which profile lists each customer (only customers some record lists). */
  private readonly listedIn = new CustomerIndex<ProfileRecord>()

  /** Folds a record; true when it is the profile's newest (its membership may have changed). */
  apply(r: ProfileRecord): boolean {
    const t = r.tenantId
    const old = this.records.get(t, r.profileId)
    if (old && !newerRecord(old, r)) return false
    this.records.set(t, r.profileId, r)
    const now = new Set(r.members)
    for (const m of old?.members ?? []) if (!now.has(m) && this.listedIn.get(t, m) === old) this.listedIn.delete(t, m)
    for (const m of r.members) {
      const cur = this.listedIn.get(t, m)
      if (!cur || cur === old || newerRecord(cur, r)) this.listedIn.set(t, m, r)
    }
    return true
  }

  /** Forgets the records `drop` selects (a revoked partition's). */
  forget(drop: (r: ProfileRecord) => boolean): void {
    this.records.deleteWhere(drop)
    this.listedIn.deleteWhere(drop)
  }

  record(tenantId: number, profileId: number): ProfileRecord | undefined {
    return this.records.get(tenantId, profileId)
  }

  /** False when the customer's own profile was absorbed into another: it has no row of its own. */
  isProfile(tenantId: number, customerId: number): boolean {
    const r = this.records.get(tenantId, customerId)
    return !r || r.members.length > 0
  }

  /** The profile a customer's orders count for, when a record this fold holds lists it. */
  profileOf(tenantId: number, customerId: number): number | undefined {
    return this.listedIn.get(tenantId, customerId)?.profileId
  }

  /** Whether a record gives the profile other members besides its own customer (cheap: no list is built). */
  hasOthers(tenantId: number, profileId: number): boolean {
    return (this.records.get(tenantId, profileId)?.members.length ?? 0) > 1
  }

  /**
   * The customers scored as one profile: those its newest record lists and no newer record of
   * another profile claims; the customer alone when no record names it.
   */
  membersOf(tenantId: number, profileId: number): number[] {
    const r = this.records.get(tenantId, profileId)
    if (!r) return [profileId]
    return r.members.filter((m) => this.listedIn.get(tenantId, m) === r)
  }
}
