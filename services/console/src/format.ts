const locale = undefined // the browser's

export const num = (v: number | null | undefined, digits = 0) => (v === null || v === undefined || Number.isNaN(v) ? '—' : v.toLocaleString(locale, { maximumFractionDigits: digits, minimumFractionDigits: 0 }))
export const money = (v: number | null | undefined) => (v === null || v === undefined ? '—' : v.toLocaleString(locale, { maximumFractionDigits: 2, minimumFractionDigits: 2 }))
/** A fraction (0.25) as a percentage. */
export const fraction = (v: number | null | undefined, digits = 1) => (v === null || v === undefined ? '—' : `${(v * 100).toLocaleString(locale, { maximumFractionDigits: digits })} %`)
/** A number already in percent (25.3). */
export const percent = (v: number | null | undefined, digits = 1) => (v === null || v === undefined ? '—' : `${v.toLocaleString(locale, { maximumFractionDigits: digits })} %`)
export const date = (v: string | null | undefined) => (v ? v.slice(0, 10) : '—')
export const dateTime = (v: string | null | undefined) => (v ? new Date(v).toLocaleString(locale) : '—')

/** Cell text on a light cell, and on a deep one. */
export const CELL_DARK_TEXT = '#10223a'
export const CELL_LIGHT_TEXT = '#fff'

/**
 * A retention percentage as a heatmap cell's colour: lightness 96 % for none down to 36 % for all,
 * on one blue. Between 48 % and 57 % neither text colour reaches WCAG AA's 4.5:1 on that blue, so
 * lightness steps over the band (to its nearer edge); dark text from 57 % up, white below.
 */
export function shade(v: number | null): { background?: string; color?: string } {
  if (v === null || Number.isNaN(v)) return {}
  let l = 96 - Math.min(100, Math.max(0, v)) * 0.6
  if (l > 48 && l < 57) l = l >= 52.5 ? 57 : 48
  return { background: `hsl(212 70% ${l}%)`, color: l >= 57 ? CELL_DARK_TEXT : CELL_LIGHT_TEXT }
}
