const locale = undefined // the browser's

export const num = (v: number | null | undefined, digits = 0) => (v === null || v === undefined || Number.isNaN(v) ? '—' : v.toLocaleString(locale, { maximumFractionDigits: digits, minimumFractionDigits: 0 }))
export const money = (v: number | null | undefined) => (v === null || v === undefined ? '—' : v.toLocaleString(locale, { maximumFractionDigits: 2, minimumFractionDigits: 2 }))
/** A fraction (0.25) as a percentage. */
export const fraction = (v: number | null | undefined, digits = 1) => (v === null || v === undefined ? '—' : `${(v * 100).toLocaleString(locale, { maximumFractionDigits: digits })} %`)
/** A number already in percent (25.3). */
export const percent = (v: number | null | undefined, digits = 1) => (v === null || v === undefined ? '—' : `${v.toLocaleString(locale, { maximumFractionDigits: digits })} %`)
export const date = (v: string | null | undefined) => (v ? v.slice(0, 10) : '—')
export const dateTime = (v: string | null | undefined) => (v ? new Date(v).toLocaleString(locale) : '—')
