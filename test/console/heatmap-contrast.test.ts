/**
 * The cohort heatmap's cells (services/console/src/format.ts `shade`): every retention from 0 to 100 %
 * gives a cell whose text has WCAG AA contrast (4.5:1) on its background, as axe-core checks it in
 * the browser test (which sees only the values its data happens to have: a value near the old
 * switch between text colours failed there). The background is converted as a browser computes
 * it: CSS hsl() to sRGB, channels rounded to whole numbers.
 */
import { describe, expect, it } from 'vitest'
import { CELL_DARK_TEXT, CELL_LIGHT_TEXT, shade } from '../../services/console/src/format.ts'

/** CSS Color 4's hsl() to sRGB, each channel 0–255 rounded. */
function hslToRgb(h: number, s: number, l: number): [number, number, number] {
  s /= 100
  l /= 100
  const f = (n: number) => {
    const k = (n + h / 30) % 12
    const a = s * Math.min(l, 1 - l)
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))))
  }
  return [f(0), f(8), f(4)]
}

const hex = (c: string): [number, number, number] => {
  const x = c.length === 4 ? c.slice(1).split('').map((d) => d + d).join('') : c.slice(1)
  return [0, 2, 4].map((i) => parseInt(x.slice(i, i + 2), 16)) as [number, number, number]
}

/** WCAG 2 relative luminance and contrast ratio. */
const luminance = ([r, g, b]: [number, number, number]) => {
  const c = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
  return 0.2126 * c(r) + 0.7152 * c(g) + 0.0722 * c(b)
}
const contrast = (a: [number, number, number], b: [number, number, number]) => {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number]
  return (hi + 0.05) / (lo + 0.05)
}

describe('cohort heatmap cells', () => {
  it('have text with at least 4.5:1 contrast at every retention, and shade from light to deep', () => {
    let worst = Infinity
    let previous = Infinity
    for (let i = 0; i <= 2000; i++) {
      const v = i / 20
      const { background, color } = shade(v)
      const m = /^hsl\(212 70% ([\d.]+)%\)$/.exec(background!)
      expect(m, background).not.toBeNull()
      const l = Number(m![1])
      expect(l).toBeLessThanOrEqual(previous) // more retention, deeper colour
      previous = l
      const ratio = contrast(hslToRgb(212, 70, l), hex(color!))
      worst = Math.min(worst, ratio)
      expect(ratio, `retention ${v} %: lightness ${l} %, text ${color}`).toBeGreaterThanOrEqual(4.5)
    }
    expect(worst).toBeGreaterThanOrEqual(4.5)
    expect(shade(0).color).toBe(CELL_DARK_TEXT)
    expect(shade(100).color).toBe(CELL_LIGHT_TEXT)
    expect(shade(null)).toEqual({})
  })
})
