/**
 * The ways real shop records deviate from the canonical form: province aliases, city names in
 * odd case or without accents, wrong or oddly written postal codes, national ids with dots,
 * dashes or a "DNI" label, phones in local spellings. Downstream normalisation is tested on these.
 */
import { JURISDICTIONS, type City, type Jurisdiction } from './argentina.ts'
import type { Rng } from './random.ts'

export function stripAccents(text: string): string {
  return text.normalize('NFD').replace(/[\u0300-\u036f]/g, '').normalize('NFC')
}

/** A free-typed variant of a name: lowercase, uppercase, accents dropped, stray spaces. */
export function sloppyCase(rng: Rng, text: string): string {
  return rng.weighted(
    [
      text.toLowerCase(),
      text.toUpperCase(),
      stripAccents(text),
      stripAccents(text).toLowerCase(),
      stripAccents(text).toUpperCase(),
      `${text} `,
    ],
    [0.3, 0.15, 0.25, 0.15, 0.1, 0.05],
  )
}

export function messyProvince(rng: Rng, jurisdiction: Jurisdiction): string {
  if (rng.chance(0.65)) return rng.pick(jurisdiction.aliases)
  return sloppyCase(rng, jurisdiction.name)
}

export function messyCity(rng: Rng, jurisdiction: Jurisdiction, city: City): string {
  if (jurisdiction.letter === 'C' && rng.chance(0.5)) {
    // Many CABA customers type the city instead of the barrio.
    return rng.pick(['Capital Federal', 'CABA', 'Buenos Aires', 'Ciudad Autónoma de Buenos Aires', 'capital'])
  }
  if (city.alias !== undefined && rng.chance(0.5)) return city.alias
  return sloppyCase(rng, city.name)
}

/** Postal codes as typed: wrong ones (another city's, transposed, truncated) and odd spellings. */
export function messyPostalCode(rng: Rng, jurisdiction: Jurisdiction, city: City): string {
  const cp = city.postalCode
  const kind = rng.weighted(
    ['otherCity', 'transposed', 'truncated', 'wrongLetter', 'labelled', 'spaced'] as const,
    [0.25, 0.15, 0.1, 0.1, 0.25, 0.15],
  )
  switch (kind) {
    case 'otherCity': {
      const other = rng.pick(rng.pick(JURISDICTIONS).cities)
      return other.postalCode
    }
    case 'transposed': {
      const i = rng.int(0, 2)
      const swapped = cp.slice(0, i) + cp.charAt(i + 1) + cp.charAt(i) + cp.slice(i + 2)
      return swapped === cp ? `${cp.slice(0, 3)}${(Number(cp.charAt(3)) + 1) % 10}` : swapped
    }
    case 'truncated':
      return cp.slice(1)
    case 'wrongLetter': {
      const other = rng.pick(JURISDICTIONS.filter((j) => j.letter !== jurisdiction.letter))
      return `${other.letter}${cp}`
    }
    case 'labelled':
      return `CP ${cp}`
    case 'spaced':
      return `${jurisdiction.letter} ${cp}`
  }
}
