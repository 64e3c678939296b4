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
 */
import { cuilFor, EmailRegistry, formatCuil, formatDni, formatPhone, mobilePhone, type PhoneStyle } from './identity.ts'
import { drawProfile } from './profile.ts'
import { Rng } from './random.ts'

export interface SourceAccount {
  customerId: number
  /** Ground truth: the person behind the account. */
  personId: number
  source: 'commerce_platform' | 'marketplace'
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

export function* overlappingAccounts(opts: OverlapOptions): Generator<SourceAccount> {
  const overlap = opts.overlapShare ?? 0.4
  const familyShare = opts.familyShare ?? 0.02
  const from = opts.from ?? Date.UTC(2023, 0, 1)
  const to = opts.to ?? Date.UTC(2025, 0, 1)
  const emails = new EmailRegistry()
  const usedDni = new Set<number>()
  const usedPhone = new Set<string>()
  let family: { email: string; left: number } | null = null
  for (let person = 1; person <= opts.people; person++) {
    const rng = new Rng(`${opts.seed}|overlap|${person}`)
    const p = drawProfile(rng, { customerId: person, referenceYear: 2025, dirty: rng.chance(0.3), emails })
    // Real DNIs and phone lines belong to one person; the generator draws them at random, so a
    // drawn one already taken is moved to the next free number (and written again).
    if (usedDni.has(p.truth.dni)) {
      let dni = p.truth.dni
      while (usedDni.has(dni)) dni++
      const cuil = cuilFor(dni, p.sex)
      if (p.nationalId !== null) p.nationalId = p.nationalId.replace(/\D/g, '').length === 11 ? formatCuil(cuil, true) : String(dni)
      p.truth = { ...p.truth, dni, cuil }
    }
    usedDni.add(p.truth.dni)
    if (p.truth.phone !== null) {
      let phone = p.truth.phone
      while (usedPhone.has(phone.areaCode + phone.subscriber)) phone = mobilePhone(rng, phone.areaCode)
      if (phone !== p.truth.phone) {
        p.truth = { ...p.truth, phone }
        if (p.phone !== null) p.phone = formatPhone(phone, 'international')
      }
      usedPhone.add(phone.areaCode + phone.subscriber)
    }
    // Families: the next 4 to 7 people share one address (each keeps its own phone and DNI).
    if (!family && rng.chance(familyShare / 5)) family = { email: `familia.${p.lastName.toLowerCase().replace(/[^a-z]/g, '') || 'x'}${person}@gmail.com`, left: rng.int(4, 7) }
    let email = p.email
    if (family) {
      email = family.email
      if (--family.left === 0) family = null
    }
    const firstSeenAt = from + Math.floor(rng.next() * (to - from))
    yield { customerId: person, personId: person, source: 'commerce_platform', email, phone: p.phone, national_id: p.nationalId, firstSeenAt }
    if (!rng.chance(overlap)) continue
    const other = rng.next()
    const mEmail = email === null ? null : other < MISSING.email ? null : other < MISSING.email + ANOTHER_EMAIL ? `${email.split('@')[0]}.mp@hotmail.com` : respell(rng, email)
    const mPhone = p.truth.phone === null || rng.chance(MISSING.phone) ? null : formatPhone(p.truth.phone, rng.pick(PHONE_STYLES))
    const mNationalId = rng.chance(MISSING.national_id) ? null : rng.weighted([String(p.truth.dni), formatDni(p.truth.dni, true), formatCuil(p.truth.cuil, true), p.truth.cuil], [0.3, 0.2, 0.3, 0.2])
    yield {
      customerId: MARKETPLACE_ID_OFFSET + person,
      personId: person,
      source: 'marketplace',
      email: mEmail,
      phone: mPhone,
      national_id: mNationalId,
      firstSeenAt: firstSeenAt + Math.floor(rng.next() * 200 * 86_400_000),
    }
  }
}
