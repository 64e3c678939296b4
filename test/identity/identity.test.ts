/**
 * Identity resolution, the pure core: identifiers normalised so one person's spellings meet,
 * placeholders refused, profiles as connected components with the guard, settings, splits, stable
 * ids whatever the arrival order, and the merge/split events between two resolutions.
 */
import { describe, expect, it } from 'vitest'
import { identifiersOf, normalizeEmail, normalizeNationalId, normalizePhone, normalizeSourceId } from '../../pipelines/identity/identifiers.ts'
import { DEFAULT_IDENTITY_SETTINGS, resolveProfiles, type SourceCustomer } from '../../pipelines/identity/graph.ts'
import { profileEvents } from '../../pipelines/identity/resolve.ts'
import { pairwiseScores } from '../../pipelines/identity/evaluation.ts'
import { overlappingAccounts } from '../../pipelines/ingest/synthetic/overlap.ts'
import { formatPhone, type PhoneStyle } from '../../pipelines/ingest/synthetic/identity.ts'

describe('identifiers', () => {
  it('e-mails: trimmed and lower-cased; placeholders and malformed ones are none', () => {
    expect(normalizeEmail('  Ana.Perez+compras@Gmail.COM ')).toBe('ana.perez+compras@gmail.com')
    for (const bad of ['sin@email.com', 'SIN@MAIL.COM', 'noreply@shop.com.ar', 'test@test.com', 'ana@example.com', 'ana', 'ana@', '@gmail.com', 'ana@gmail', 'a b@gmail.com', '', null, undefined]) {
      expect(normalizeEmail(bad), String(bad)).toBeNull()
    }
  })

  it('phones: every way an Argentine writes one mobile is one E.164 value without the mobile 9', () => {
    const phone = { areaCode: '11', subscriber: '41234567' }
    const styles: PhoneStyle[] = ['international', 'domestic', 'compact', 'domestic15', 'e164']
    expect(new Set(styles.map((s) => normalizePhone(formatPhone(phone, s))))).toEqual(new Set(['+541141234567']))
    const cordoba = { areaCode: '351', subscriber: '5123456' }
    expect(new Set(styles.map((s) => normalizePhone(formatPhone(cordoba, s))))).toEqual(new Set(['+543515123456']))
    const rio = { areaCode: '2966', subscriber: '412345' }
    expect(new Set(styles.map((s) => normalizePhone(formatPhone(rio, s))))).toEqual(new Set(['+542966412345']))
    expect(normalizePhone('(011) 4123-4567')).toBe('+541141234567')
    expect(normalizePhone('54 11 4123 4567')).toBe('+541141234567')
    expect(normalizePhone('0054 9 11 4123-4567')).toBe('+541141234567')
    // Another country's number keeps its code; nonsense and placeholders are none.
    expect(normalizePhone('+34 612 345 678')).toBe('+34612345678')
    expect(normalizePhone('+1 (415) 555-0100')).toBe('+14155550100')
    for (const bad of ['', '123', '0000000000', '1111111111', '011 0000-0000', '1234567890', '+54 11 4123', 'sin telefono', null]) expect(normalizePhone(bad), String(bad)).toBeNull()
  })

  it('national ids: the DNI, or the DNI inside a valid CUIL; companies and placeholders are none', () => {
    expect(normalizeNationalId('DNI 27.456.123')).toBe('27456123')
    expect(normalizeNationalId('20-27456123-9')).toBe('27456123')
    expect(normalizeNationalId('20274561239')).toBe('27456123')
    expect(normalizeNationalId('20-27456123-5')).toBeNull() // wrong check digit
    expect(normalizeNationalId('30-71234567-1')).toBeNull() // a company
    for (const placeholder of ['00000000', '11111111', '12345678', '1234567']) expect(normalizeNationalId(placeholder), placeholder).toBeNull()
    expect(normalizeSourceId(' marketplace ', ' 88123 ')).toBe('marketplace:88123')
    expect(normalizeSourceId('marketplace', '  ')).toBeNull()
  })

  it("a customer's identifiers: each usable one once", () => {
    expect(identifiersOf({ email: 'Ana@B.com', phone: '011 4123 4567', national_id: 'sin dni', source_ids: [{ source: 'mp', id: '1' }, { source: 'mp', id: '1' }] })).toEqual([
      { kind: 'email', value: 'ana@b.com' },
      { kind: 'phone', value: '+541141234567' },
      { kind: 'source_id', value: 'mp:1' },
    ])
  })
})

const c = (customerId: number, firstSeenAt: number, ids: Record<string, string | undefined>): SourceCustomer => ({
  customerId,
  firstSeenAt,
  identifiers: identifiersOf({ email: ids.email, phone: ids.phone, national_id: ids.dni }),
})

describe('profiles', () => {
  const people = [
    c(10, 500, { email: 'ana@gmail.com', phone: '+54 9 11 4123-4567' }), // commerce platform
    c(20, 300, { email: 'ANA@gmail.com ', dni: '20-27456123-9' }), // marketplace, seen first
    c(30, 900, { phone: '011 15 4123-4567' }), // a third account: only the phone
    c(40, 100, { email: 'juan@hotmail.com' }),
    c(50, 200, { email: 'juan.p@hotmail.com', dni: '30.987.654' }),
  ]

  it('joins accounts that share an identifier, transitively; the oldest member names the profile; links say why', () => {
    const r = resolveProfiles(people)
    expect(r.profiles.map((p) => [p.profileId, p.members])).toEqual([
      [20, [20, 10, 30]],
      [40, [40]],
      [50, [50]],
    ])
    expect(r.profiles[0]!.links).toEqual([
      { identifier: 'email:ana@gmail.com', customers: [10, 20] },
      { identifier: 'phone:+541141234567', customers: [10, 30] },
    ])
    expect(r.blocked).toEqual([])
  })

  it('is the same whatever order the customers arrive in', () => {
    const want = resolveProfiles(people)
    let seed = 7
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
    for (let k = 0; k < 25; k++) {
      const shuffled = [...people].sort(() => rnd() - 0.5)
      expect(resolveProfiles(shuffled)).toEqual(want)
    }
  })

  it('an identifier carried by too many customers links none of them and is reported; the limit is a setting', () => {
    const family = Array.from({ length: 6 }, (_, i) => c(100 + i, i, { email: 'familia.gomez@gmail.com', phone: i === 0 || i === 1 ? '+54 9 11 5555-1212' : undefined }))
    const r = resolveProfiles(family)
    expect(r.blocked).toEqual([{ identifier: 'email:familia.gomez@gmail.com', customers: 6 }])
    // Only the two who share a phone too are one person.
    expect(r.profiles.map((p) => p.members)).toEqual([[100, 101], [102], [103], [104], [105]])
    expect(resolveProfiles(family, { ...DEFAULT_IDENTITY_SETTINGS, maxCustomersPerIdentifier: 6 }).profiles).toHaveLength(1)
  })

  it('per-tenant kinds: without national ids, a DNI links nobody', () => {
    const twins = [c(1, 1, { dni: '27456123' }), c(2, 2, { dni: '20-27456123-9' })]
    expect(resolveProfiles(twins).profiles).toHaveLength(1)
    expect(resolveProfiles(twins, { ...DEFAULT_IDENTITY_SETTINGS, mergeKinds: ['email', 'phone', 'source_id'] }).profiles).toHaveLength(2)
  })

  it('a split removes one link; the merge and split events between two resolutions say what happened', () => {
    const merged = resolveProfiles(people)
    // The admin unlinks account 30's phone: it becomes its own profile; 10 and 20 stay together.
    const split = resolveProfiles(people, DEFAULT_IDENTITY_SETTINGS, [{ customerId: 30, identifier: 'phone:+541141234567' }])
    expect(split.profileOf.get(30)).toBe(30)
    expect(split.profileOf.get(10)).toBe(20)
    const events = (before: ReadonlyMap<number, number>, after: ReturnType<typeof resolveProfiles>) =>
      profileEvents(1, before, after, 0).map(({ profile_id, change, members, previous_profile_ids, absorbed_into }) => ({ profile_id, change, members, previous_profile_ids, absorbed_into }))
    expect(events(merged.profileOf, split)).toEqual([
      { profile_id: 20, change: 'split', members: [20, 10], previous_profile_ids: [20], absorbed_into: null },
      { profile_id: 30, change: 'split', members: [30], previous_profile_ids: [20], absorbed_into: null },
    ])
    expect(events(split.profileOf, merged)).toEqual([
      { profile_id: 20, change: 'merged', members: [20, 10, 30], previous_profile_ids: [20, 30], absorbed_into: null },
      { profile_id: 30, change: 'absorbed', members: [], previous_profile_ids: [30], absorbed_into: 20 },
    ])
    // A new customer joining a profile changes it (merged); one that bridges two merges them; nothing new, no event.
    const bridged = resolveProfiles([...people, c(60, 950, { email: 'juan@hotmail.com', dni: '30987654' })])
    expect(events(merged.profileOf, bridged)).toEqual([
      { profile_id: 40, change: 'merged', members: [40, 50, 60], previous_profile_ids: [40, 50], absorbed_into: null },
      // 60 was its own profile until now (every customer is, until resolved).
      { profile_id: 60, change: 'absorbed', members: [], previous_profile_ids: [60], absorbed_into: 40 },
      { profile_id: 50, change: 'absorbed', members: [], previous_profile_ids: [50], absorbed_into: 40 },
    ])
    const first = events(new Map(), merged)
    expect(first.filter((e) => e.change === 'created').map((e) => e.profile_id)).toEqual(merged.profiles.map((p) => p.profileId))
    // Every customer that is not its profile's id ends its implicit own profile.
    expect(first.filter((e) => e.change === 'absorbed').map((e) => [e.profile_id, e.absorbed_into])).toEqual(
      merged.profiles.flatMap((p) => p.members.filter((m) => m !== p.profileId).map((m) => [m, p.profileId])),
    )
    expect(events(merged.profileOf, merged)).toEqual([])
  })
})

describe('pairwise scores', () => {
  it('counts correct, predicted and true pairs from the cells', () => {
    // Persons: {1,2,3}, {4,5}, {6}. Predicted: {1,2}, {3,4,5}, {6}.
    const truth = new Map([[1, 1], [2, 1], [3, 1], [4, 4], [5, 4], [6, 6]])
    const predicted = new Map([[1, 1], [2, 1], [3, 3], [4, 3], [5, 3], [6, 6]])
    const s = pairwiseScores(truth, predicted)
    expect(s).toMatchObject({ customers: 6, true_pairs: 4, predicted_pairs: 4, correct_pairs: 2, precision: 0.5, recall: 0.5, f1: 0.5 })
    expect(pairwiseScores(truth, truth)).toMatchObject({ precision: 1, recall: 1, f1: 1 })
    expect(pairwiseScores(truth, new Map())).toMatchObject({ predicted_pairs: 0, precision: 1, recall: 0 })
  })
})

describe('the overlapping population, resolved', () => {
  it('joins most accounts of one person and never a family sharing an e-mail (2,000 people)', () => {
    const accounts = [...overlappingAccounts({ people: 2000, seed: 'identity-test', familyShare: 0.05 })]
    const truth = new Map(accounts.map((a) => [a.customerId, a.personId]))
    const r = resolveProfiles(accounts.map((a) => ({ customerId: a.customerId, firstSeenAt: a.firstSeenAt, identifiers: identifiersOf(a) })))
    const s = pairwiseScores(truth, r.profileOf)
    expect(accounts.length).toBeGreaterThan(2600)
    expect(s.precision).toBeGreaterThanOrEqual(0.999)
    expect(s.recall).toBeGreaterThanOrEqual(0.95)
    expect(r.blocked.some((b) => b.identifier.startsWith('email:familia.'))).toBe(true)
  })
})
