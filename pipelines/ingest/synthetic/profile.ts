/**
 * A synthetic customer's profile: name, sex, age-consistent DNI/CUIL, address, phone and e-mail.
 * Clean records use one canonical spelling per field; a "dirty" record gets free-typed variants in
 * some of its location and id fields, as shop checkouts actually collect them.
 */
import {
  EMAIL_DOMAIN_WEIGHTS,
  EMAIL_DOMAINS,
  GIVEN_NAMES,
  JURISDICTIONS,
  STREETS,
  SURNAMES,
  type City,
  type GivenName,
  type Jurisdiction,
  type NameEra,
  type Sex,
} from './argentina.ts'
import {
  cuilFor,
  dniForBirthYear,
  formatCuil,
  formatDni,
  formatPhone,
  type Phone,
  mobilePhone,
  type EmailRegistry,
} from './identity.ts'
import { messyCity, messyPostalCode, messyProvince } from './messy.ts'
import { WeightedTable, type Rng } from './random.ts'

export const REGISTRATION_SOURCES = ['web', 'app', 'marketplace', 'store'] as const
export type RegistrationSource = (typeof REGISTRATION_SOURCES)[number]
const REGISTRATION_SOURCE_WEIGHTS = [0.5, 0.25, 0.15, 0.1] as const

export interface Profile {
  sex: Sex
  birthYear: number
  firstName: string
  lastName: string
  email: string | null
  phone: string | null
  nationalId: string | null
  street: string | null
  city: string
  province: string
  postalCode: string
  registrationSource: RegistrationSource
  /** The customer's id on the marketplace, when registered there. */
  marketplaceId: string | null
  dirty: boolean
  /** What the formatted fields were made from (the overlap generator writes them again another way). */
  truth: { dni: number; cuil: string; phone: Phone | null }
}

/** Zipf-like weight by rank, tilted towards names typical of the customer's generation. */
function nameTables(): Record<Sex, Record<Exclude<NameEra, 'any'>, WeightedTable<GivenName>>> {
  const table = (sex: Sex, era: Exclude<NameEra, 'any'>) => {
    const names = GIVEN_NAMES.filter((n) => n.sex === sex)
    const weights = names.map((n, rank) => (1 / (rank + 8)) * (n.era === era ? 3 : n.era === 'any' ? 1.5 : 0.4))
    return new WeightedTable(names, weights)
  }
  return {
    F: { old: table('F', 'old'), mid: table('F', 'mid'), young: table('F', 'young') },
    M: { old: table('M', 'old'), mid: table('M', 'mid'), young: table('M', 'young') },
  }
}

const NAMES = nameTables()
const SURNAME_TABLE = new WeightedTable(SURNAMES, SURNAMES.map((_, rank) => 1 / (rank + 5)))
const JURISDICTION_TABLE = new WeightedTable(JURISDICTIONS, JURISDICTIONS.map((j) => j.weight))

function eraOf(birthYear: number): Exclude<NameEra, 'any'> {
  if (birthYear < 1972) return 'old'
  if (birthYear < 1993) return 'mid'
  return 'young'
}

/** Online shoppers: 18+, most between 25 and 45 (age = 18 + Gamma, mean ≈ 37). */
function drawBirthYear(rng: Rng, referenceYear: number): number {
  const age = Math.min(85, 18 + rng.gamma(3, 6.5))
  return referenceYear - Math.floor(age)
}

/** The capital (listed first) gets more customers than the other cities. */
function drawCity(rng: Rng, jurisdiction: Jurisdiction): City {
  return rng.chance(0.45) ? jurisdiction.cities[0]! : rng.pick(jurisdiction.cities)
}

function drawStreet(rng: Rng, jurisdiction: Jurisdiction): string {
  const number = rng.int(10, 4999)
  const base = `${rng.pick(STREETS)} ${number}`
  const flatShare = jurisdiction.letter === 'C' ? 0.7 : 0.25
  if (!rng.chance(flatShare)) return base
  const floor = rng.int(1, 14)
  const unit = rng.pick(['A', 'B', 'C', 'D', 'E', 'F'])
  return rng.chance(0.5) ? `${base}, Piso ${floor} Dto ${unit}` : `${base} ${floor}°${unit}`
}

/** CPA: province letter + 4 digits + 3 letters for the side of the block (no I or O). */
function cpa(rng: Rng, jurisdiction: Jurisdiction, city: City): string {
  const letters = 'ABCDEFGHJKLMNPQRSTUVWXYZ'
  let block = ''
  for (let i = 0; i < 3; i++) block += letters.charAt(rng.int(0, letters.length - 1))
  return `${jurisdiction.letter}${city.postalCode}${block}`
}

export interface ProfileContext {
  customerId: number
  referenceYear: number
  dirty: boolean
  emails: EmailRegistry
}

export function drawProfile(rng: Rng, ctx: ProfileContext): Profile {
  const sex: Sex = rng.chance(0.53) ? 'F' : 'M'
  const birthYear = drawBirthYear(rng, ctx.referenceYear)
  const firstName = NAMES[sex][eraOf(birthYear)].sample(rng).name
  const lastName = rng.chance(0.04)
    ? `${SURNAME_TABLE.sample(rng)} ${SURNAME_TABLE.sample(rng)}`
    : SURNAME_TABLE.sample(rng)
  const registrationSource = rng.weighted(REGISTRATION_SOURCES, REGISTRATION_SOURCE_WEIGHTS)

  const jurisdiction = JURISDICTION_TABLE.sample(rng)
  const city = drawCity(rng, jurisdiction)
  const street = rng.chance(0.92) ? drawStreet(rng, jurisdiction) : null
  const dni = dniForBirthYear(rng, birthYear)
  const cuil = cuilFor(dni, sex)
  const hasNationalId = rng.chance(0.85)
  const useCuil = rng.chance(0.4)
  const phone = rng.chance(0.88) ? mobilePhone(rng, city.areaCode) : null
  // In-store sign-ups often skip the e-mail.
  const hasEmail = registrationSource !== 'store' || rng.chance(0.6)
  const email = hasEmail
    ? ctx.emails.address(rng, ctx.customerId, firstName, lastName, rng.weighted(EMAIL_DOMAINS, EMAIL_DOMAIN_WEIGHTS))
    : null
  const marketplaceId = registrationSource === 'marketplace' ? String(rng.int(100_000_000, 1_999_999_999)) : null

  // Canonical forms.
  let province = jurisdiction.name
  let cityName = city.name
  let postalCode = rng.chance(0.65) ? city.postalCode : cpa(rng, jurisdiction, city)
  let nationalId = hasNationalId ? (useCuil ? cuil : String(dni)) : null
  let phoneText = phone === null ? null : formatPhone(phone, rng.chance(0.7) ? 'international' : 'e164')

  if (ctx.dirty) {
    // Each field independently, but at least one, so "dirty" always means visibly messy.
    const fields = (['province', 'city', 'postalCode', 'nationalId', 'phone'] as const).filter(
      (f) => (f !== 'nationalId' || hasNationalId) && (f !== 'phone' || phone !== null),
    )
    let chosen = fields.filter(() => rng.chance(0.45))
    if (chosen.length === 0) chosen = [rng.pick(fields)]
    for (const field of chosen) {
      switch (field) {
        case 'province':
          province = messyProvince(rng, jurisdiction)
          break
        case 'city':
          cityName = messyCity(rng, jurisdiction, city)
          break
        case 'postalCode':
          postalCode = messyPostalCode(rng, jurisdiction, city)
          break
        case 'nationalId':
          nationalId = rng.weighted(
            [formatDni(dni, true), formatCuil(cuil, true), `DNI ${formatDni(dni, true)}`, ` ${dni} `],
            [0.4, 0.35, 0.15, 0.1],
          )
          break
        case 'phone':
          if (phone !== null) {
            phoneText = formatPhone(phone, rng.weighted(['domestic', 'compact', 'domestic15'] as const, [0.4, 0.4, 0.2]))
          }
          break
      }
    }
  }

  return {
    sex,
    birthYear,
    firstName,
    lastName,
    email,
    phone: phoneText,
    nationalId,
    street,
    city: cityName,
    province,
    postalCode,
    registrationSource,
    marketplaceId,
    dirty: ctx.dirty,
    truth: { dni, cuil, phone },
  }
}
