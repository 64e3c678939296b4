/**
 * Gender from the CUIL/CUIT type or the first name. Pure.
 *
 * CUIL type 20 is issued to men and 27 to women; 23, 24 (and 25, 26) to either, so they say
 * nothing. Otherwise the first name decides through the name table:
 * - the whole given-name string is looked up first (a loaded table may list compounds);
 * - then the given names in order, skipping initials and particles ("de", "del", "los"...): the
 *   first name the table knows as M or F decides, so "José María" is M and "María José" F;
 * - a name known as U (used for both) defers to a later given name ("Cruz Martín" is M), and is
 *   the answer when none follows;
 * - no known name gives null (no data), with the reason.
 */
import type { Gender } from './reference.ts'
import { wordKey } from './text.ts'

export type { Gender }
export const GENDERS = ['M', 'F', 'U'] as const

/** The spec's labels ("Demographic reference data"); null is "Sin datos". */
export const GENDER_LABELS: Readonly<Record<Gender, string>> = { M: 'Masculino', F: 'Femenino', U: 'Unisex/Otro' }
export const NO_GENDER_LABEL = 'Sin datos'

export function genderFromCuilPrefix(prefix: number | null): 'M' | 'F' | null {
  if (prefix === 20) return 'M'
  if (prefix === 27) return 'F'
  return null
}

const PARTICLES = new Set(['de', 'del', 'la', 'las', 'los', 'y', 'e', 'da', 'do', 'dos', 'di'])
// Enough given names for any real person; bounds the work on garbage input.
const MAX_WORDS = 6

export interface NameGender {
  gender: Gender | null
  issue: string | null
}

export function genderFromFirstName(names: ReadonlyMap<string, Gender>, raw: unknown): NameGender {
  if (raw === null || raw === undefined) return { gender: null, issue: 'first_name_empty' }
  if (typeof raw !== 'string') return { gender: null, issue: 'first_name_invalid' }
  if (raw.trim() === '') return { gender: null, issue: 'first_name_empty' }
  const key = wordKey(raw.length > 200 ? raw.slice(0, 200) : raw)
  const whole = names.get(key)
  if (whole !== undefined && whole !== 'U') return { gender: whole, issue: null }
  let sawUnisex = whole === 'U'
  let words = 0
  for (const w of key.split(' ')) {
    // Initials, particles and digits are not given names.
    if (w.length < 2 || PARTICLES.has(w) || (w.charCodeAt(0) >= 48 && w.charCodeAt(0) <= 57)) continue
    if (++words > MAX_WORDS) break
    const g = names.get(w)
    if (g === 'M' || g === 'F') return { gender: g, issue: null }
    if (g === 'U') sawUnisex = true
  }
  if (sawUnisex) return { gender: 'U', issue: null }
  return { gender: null, issue: words === 0 ? 'first_name_not_a_name' : 'first_name_unknown' }
}
