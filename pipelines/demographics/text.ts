/**
 * Text keys for matching what people type against reference names. Pure.
 *
 * Matching is accent-, case- and punctuation-insensitive: "Neuquén", "NEUQUEN" and "neuquen." share
 * one key. Two shapes: `wordKey` keeps word boundaries (for names split into given names, or city
 * abbreviations expanded word by word); `compactKey` drops them too, so "Bs.As.", "Bs. As." and
 * "BsAs" meet.
 */

const MARKS = /[\u0300-\u036f]/g
const NON_ALNUM = /[^a-z0-9]+/g
const PLAIN = /^[\x20-\x7e]*$/

/** Lower case without diacritics (ñ → n, ü → u). ASCII input skips the Unicode normalisation. */
export function fold(s: string): string {
  const lower = s.toLowerCase()
  return PLAIN.test(lower) ? lower : lower.normalize('NFD').replace(MARKS, '')
}

/** Folded words joined by one space; anything but letters and digits separates words. */
export function wordKey(s: string): string {
  return fold(s).replace(NON_ALNUM, ' ').trim()
}

/** Folded letters and digits only. */
export function compactKey(s: string): string {
  return fold(s).replace(NON_ALNUM, '')
}

// Spanish particles stay lower case inside a title-cased name.
const PARTICLES = new Set(['de', 'del', 'la', 'las', 'los', 'y', 'e'])

/** "VILLA DE LA CONCEPCION" → "Villa de la Concepcion", for reference names shipped in capitals. */
export function titleCase(s: string): string {
  return s
    .toLowerCase()
    .split(/(\s+)/)
    .map((w, i) => (i > 0 && PARTICLES.has(w) ? w : w.charAt(0).toUpperCase() + w.slice(1)))
    .join('')
}

/** Trimmed, inner whitespace collapsed; null when nothing is left. */
export function clean(s: string | null | undefined): string | null {
  if (typeof s !== 'string') return null
  const t = s.replace(/\s+/g, ' ').trim()
  return t === '' ? null : t
}
