/**
 * The 24 Argentine jurisdictions: CPA letter (= ISO 3166-2:AR suffix), canonical name, region.
 *
 * Regions: the spec's table ("Demographic reference data") places 18 jurisdictions; the other
 * eight are placed so the set of regions stays the spec's five (its `region` filter is closed):
 * - Catamarca, La Rioja → Norte: both are in the Noroeste (INDEC); La Rioja's membership of the
 *   political Nuevo Cuyo region was a treaty, not geography or how people see it.
 * - Misiones, Corrientes, Chaco, Formosa → Norte: the Noreste, which with the Noroeste forms the
 *   Norte Grande Argentino region (1999 treaty).
 * - La Pampa, Tierra del Fuego → Patagonia: Ley 23.272 (1985) and the 1996 Tratado Fundacional
 *   de la Región de la Patagonia include both.
 */

export const REGIONS = ['Región Metropolitana', 'Región Centro', 'Región Cuyo', 'Región Norte', 'Región Patagonia'] as const
export type Region = (typeof REGIONS)[number]

/** The spec's short filter labels (`region=Metropolitana`) → canonical region. */
export const REGION_ALIASES: Readonly<Record<string, Region>> = {
  Metropolitana: 'Región Metropolitana',
  Centro: 'Región Centro',
  Cuyo: 'Región Cuyo',
  Norte: 'Región Norte',
  Patagonia: 'Región Patagonia',
}

/** CPA province letters: every capital letter but I and O. */
export type ProvinceLetter =
  | 'A' | 'B' | 'C' | 'D' | 'E' | 'F' | 'G' | 'H' | 'J' | 'K' | 'L' | 'M'
  | 'N' | 'P' | 'Q' | 'R' | 'S' | 'T' | 'U' | 'V' | 'W' | 'X' | 'Y' | 'Z'

export interface Jurisdiction {
  letter: ProvinceLetter
  /** Canonical name, as the spec writes provinces (CABA in full). */
  name: string
  region: Region
}

export const JURISDICTIONS: readonly Jurisdiction[] = [
  { letter: 'C', name: 'Ciudad Autónoma de Buenos Aires', region: 'Región Metropolitana' },
  { letter: 'B', name: 'Buenos Aires', region: 'Región Metropolitana' },
  { letter: 'X', name: 'Córdoba', region: 'Región Centro' },
  { letter: 'S', name: 'Santa Fe', region: 'Región Centro' },
  { letter: 'E', name: 'Entre Ríos', region: 'Región Centro' },
  { letter: 'M', name: 'Mendoza', region: 'Región Cuyo' },
  { letter: 'J', name: 'San Juan', region: 'Región Cuyo' },
  { letter: 'D', name: 'San Luis', region: 'Región Cuyo' },
  { letter: 'A', name: 'Salta', region: 'Región Norte' },
  { letter: 'T', name: 'Tucumán', region: 'Región Norte' },
  { letter: 'Y', name: 'Jujuy', region: 'Región Norte' },
  { letter: 'G', name: 'Santiago del Estero', region: 'Región Norte' },
  { letter: 'K', name: 'Catamarca', region: 'Región Norte' },
  { letter: 'F', name: 'La Rioja', region: 'Región Norte' },
  { letter: 'N', name: 'Misiones', region: 'Región Norte' },
  { letter: 'W', name: 'Corrientes', region: 'Región Norte' },
  { letter: 'H', name: 'Chaco', region: 'Región Norte' },
  { letter: 'P', name: 'Formosa', region: 'Región Norte' },
  { letter: 'Q', name: 'Neuquén', region: 'Región Patagonia' },
  { letter: 'R', name: 'Río Negro', region: 'Región Patagonia' },
  { letter: 'U', name: 'Chubut', region: 'Región Patagonia' },
  { letter: 'Z', name: 'Santa Cruz', region: 'Región Patagonia' },
  { letter: 'L', name: 'La Pampa', region: 'Región Patagonia' },
  { letter: 'V', name: 'Tierra del Fuego', region: 'Región Patagonia' },
]

export const PROVINCE_LETTERS: readonly ProvinceLetter[] = JURISDICTIONS.map((j) => j.letter)

export function isProvinceLetter(s: string): s is ProvinceLetter {
  return s.length === 1 && s >= 'A' && s <= 'Z' && s !== 'I' && s !== 'O'
}
