/**
 * DNI number → birth year (fractional: 1969.7 is about September 1969), as knots of a monotone
 * piecewise-linear curve. Sources (see docs/demographics.md):
 * - RENAPER numbers people at first registration, in order, nationally; since the DNI replaced the
 *   LE/LC booklets (Ley 17.671, 1968) that is mostly at birth, so the number tracks the cohort.
 * - Public empirical fit year ≈ 1942.5 + DNI / 736,470 (about 0.74 M numbers a year); the knots
 *   below 60 M sit on it every 10 M.
 * - The 59,999,999 series ran out in September 2023 (the fit says 2024.0; the fact wins) and
 *   newborns continue at 70,000,000 (RENAPER, 2023). 60,000,000-69,999,999 is reserved for
 *   foreign residents' provisional numbers (Disposición 4678/2019): no knot, no age.
 * - After 70 M: about 0.46 M births a year (Argentina registered ~0.46 M births in 2023); an
 *   assumption, only ever giving ages under 18.
 */
export type DniAnchor = readonly [dni: number, birthYear: number]

export const DNI_ANCHORS: readonly DniAnchor[] = [
  [1_000_000, 1943.9],
  [10_000_000, 1956.1],
  [20_000_000, 1969.7],
  [30_000_000, 1983.2],
  [40_000_000, 1996.8],
  [50_000_000, 2010.4],
  [59_999_999, 2023.7],
  [70_000_000, 2023.7],
  [70_460_000, 2024.7],
]

/** Numbers that are not birth cohorts: [from, to] inclusive. */
export const FOREIGN_RESIDENT_RANGES: readonly (readonly [number, number])[] = [
  // Disposición RENAPER 4678/2019.
  [60_000_000, 69_999_999],
  // Widely reported as the foreign residents' series; not confirmed by a primary source.
  [90_000_000, 99_999_999],
]
