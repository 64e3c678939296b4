/**
 * Buyers of one shop on two platforms, with the ground truth of who is who: the population the
 * identity resolution is measured on (`cdp eval identity`, `cdp bench identity`; docs/identity.md).
 *
 * Every person has a commerce-platform account; a share of them also buys on the marketplace,
 * where their details are written another way, as people do: the e-mail with other capitals or
 * spaces (or another address, or none), the phone in another local spelling (or none), the CUIL
 * instead of the DNI or the other way round (or none). Some families share one e-mail address
 * across several people (different persons: the guard must keep them apart). Deterministic for a
 * seed; one person at a time, so memory stays bounded.
 *
 * The pieces (unique DNIs and phone lines, family e-mails, the marketplace's spelling of a
 * person's identifiers) are exported: shared-population.ts builds the same population with orders.
 */
import { cuilFor, EmailRegistry, formatCuil, formatDni, formatPhone, mobilePhone, type PhoneStyle } from './identity.ts'
import { drawProfile, type Profile } from './profile.ts'
import { Rng } from './random.ts'

export type SourceName = 'commerce_platform' | 'marketplace'

export interface SourceAccount {
  customerId: number
  /** Ground truth: the person behind the account. */
  personId: number
  source: SourceName
  email: string | null
  phone: string | null
  national_id: string | null
  /** Epoch ms. */
  firstSeenAt: number
}

export interface OverlapOptions {
  people: number
  seed: string | number
  /** Share of people who also buy on the marketplace; default 0.4. */
  overlapShare?: number
  /** Share of people in a family that shares one e-mail (families of 4 to 7); default 0.02. */
  familyShare?: number
  /** First-seen times spread over this window (epoch ms); default 2023-01-01 to 2025-01-01. */
  from?: number
  to?: number
}

export const DEFAULT_OVERLAP_SHARE = 0.4
export const DEFAULT_FAMILY_SHARE = 0.02

const PHONE_STYLES: PhoneStyle[] = ['international', 'domestic', 'compact', 'domestic15', 'e164']

/** How often the marketplace account leaves a field out; and how often it has another e-mail address. */
export const MISSING = { email: 0.05, phone: 0.15, national_id: 0.3 } as const
export const ANOTHER_EMAIL = 0.04

/** The marketplace's customer ids start here, apart from the commerce platform's. */
export const MARKETPLACE_ID_OFFSET = 1_000_000_000

function respell(rng: Rng, email: string): string {
  const [local, domain] = email.split('@') as [string, string]
  return rng.weighted(
    [email, email.toUpperCase(), `${local.charAt(0).toUpperCase()}${local.slice(1)}@${domain}`, ` ${email} `, `${local}@${domain.toUpperCase()}`],
    [0.4, 0.1, 0.25, 0.15, 0.1],
  )
}

/**
 * Real DNIs and phone lines belong to one person; the generator draws them at random, so a drawn
 * one already taken is moved to the next free number (and the profile's text written again).
 */
export class UniqueIdentities {
  private readonly dnis = new Set<number>()
  private readonly phones = new Set<string>()

  /** Makes `p`'s DNI (and CUIL) and phone line unused so far, changing `p` where they were taken; then marks them used. */
  claim(rng: Rng, p: Profile): void {
    if (this.dnis.has(p.truth.dni)) {
      let dni = p.truth.dni
      while (this.dnis.has(dni)) dni++
      const cuil = cuilFor(dni, p.sex)
      if (p.nationalId !== null) p.nationalId = p.nationalId.replace(/\D/g, '').length === 11 ? formatCuil(cuil, true) : String(dni)
      p.truth = { ...p.truth, dni, cuil }
    }
    this.dnis.add(p.truth.dni)
    if (p.truth.phone !== null) {
      let phone = p.truth.phone
      while (this.phones.has(phone.areaCode + phone.subscriber)) phone = mobilePhone(rng, phone.areaCode)
      if (phone !== p.truth.phone) {
        p.truth = { ...p.truth, phone }
        if (p.phone !== null) p.phone = formatPhone(phone, 'international')
      }
      this.phones.add(phone.areaCode + phone.subscriber)
    }
  }
}

/** Families: now and then the next 4 to 7 people share one address (each keeps its own phone and DNI). */
export class FamilyEmails {
  private family: { email: string; left: number } | null = null

  /** `share`: of people in such a family. */
  constructor(private readonly share: number) {}

  /** The e-mail person number `person` gives: the family's while a family is being drawn, else `own`. */
  emailOf(rng: Rng, person: number, lastName: string, own: string | null): string | null {
    if (!this.family && rng.chance(this.share / 5)) this.family = { email: `familia.${lastName.toLowerCase().replace(/[^a-z]/g, '') || 'x'}${person}@gmail.com`, left: rng.int(4, 7) }
    if (!this.family) return own
    const email = this.family.email
    if (--this.family.left === 0) this.family = null
    return email
  }
}

export interface Identifiers {
  email: string | null
  phone: string | null
  national_id: string | null
}

/**
 * The person's identifiers as their marketplace account has them: the e-mail `email` respelled
 * (or another address, or none), the phone line in another spelling (or none), the DNI or the
 * CUIL in one of their spellings (or none). Every one that is there is the same person's.
 */
export function marketplaceIdentifiers(rng: Rng, email: string | null, truth: Profile['truth']): Identifiers {
  const other = rng.next()
  const mEmail = email === null ? null : other < MISSING.email ? null : other < MISSING.email + ANOTHER_EMAIL ? `${email.split('@')[0]}.mp@hotmail.com` : respell(rng, email)
  const phone = truth.phone === null || rng.chance(MISSING.phone) ? null : formatPhone(truth.phone, rng.pick(PHONE_STYLES))
  const national_id = rng.chance(MISSING.national_id) ? null : rng.weighted([String(truth.dni), formatDni(truth.dni, true), formatCuil(truth.cuil, true), truth.cuil], [0.3, 0.2, 0.3, 0.2])
  return { email: mEmail, phone, national_id }
}

export function* overlappingAccounts(opts: OverlapOptions): Generator<SourceAccount> {
  const overlap = opts.overlapShare ?? DEFAULT_OVERLAP_SHARE
  const families = new FamilyEmails(opts.familyShare ?? DEFAULT_FAMILY_SHARE)
  const from = opts.from ?? Date.UTC(2023, 0, 1)
  const to = opts.to ?? Date.UTC(2025, 0, 1)
  const emails = new EmailRegistry()
  const unique = new UniqueIdentities()
  for (let person = 1; person <= opts.people; person++) {
    const rng = new Rng(`${opts.seed}|overlap|${person}`)
    const p = drawProfile(rng, { customerId: person, referenceYear: 2025, dirty: rng.chance(0.3), emails })
    unique.claim(rng, p)
    const email = families.emailOf(rng, person, p.lastName, p.email)
    const firstSeenAt = from + Math.floor(rng.next() * (to - from))
    yield { customerId: person, personId: person, source: 'commerce_platform', email, phone: p.phone, national_id: p.nationalId, firstSeenAt }
    if (!rng.chance(overlap)) continue
    yield {
      customerId: MARKETPLACE_ID_OFFSET + person,
      personId: person,
      source: 'marketplace',
      ...marketplaceIdentifiers(rng, email, p.truth),
      firstSeenAt: firstSeenAt + Math.floor(rng.next() * 200 * 86_400_000),
    }
  }
}
