/**
 * A small product catalogue of a general Argentine online shop, with reference prices in ARS, so
 * that an order line's unit price lands on a product that plausibly costs that much.
 */
import type { Rng } from './random.ts'

export interface Product {
  sku: string
  name: string
  /** Typical unit price in pesos. */
  refPrice: number
}

const p = (sku: string, name: string, refPrice: number): Product => ({ sku, name, refPrice })

/** Sorted by reference price (ascending), which productNear relies on. */
export const PRODUCTS: readonly Product[] = [
  p('ALM-0203', 'Yerba mate 1 kg', 4_500),
  p('ACC-0101', 'Funda para celular', 6_000),
  p('IND-0420', 'Medias pack x3', 7_000),
  p('CAL-0502', 'Ojotas', 9_000),
  p('ALM-0220', 'Alfajores x12', 9_500),
  p('LIB-1001', 'Libro de bolsillo', 11_000),
  p('ELE-0825', 'Cargador rápido USB-C', 11_500),
  p('BAZ-0310', 'Mate de calabaza con bombilla', 12_000),
  p('HOG-0702', 'Toallón de algodón', 12_500),
  p('ALM-0210', 'Café en granos 500 g', 13_000),
  p('BEL-0602', 'Protector solar FPS 50', 14_000),
  p('IND-0401', 'Remera de algodón', 15_000),
  p('ELE-0830', 'Mouse inalámbrico', 16_000),
  p('DEP-1105', 'Mat de yoga', 20_000),
  p('JUG-0901', 'Juego de mesa', 25_000),
  p('MAS-1205', 'Cucha para gatos', 26_000),
  p('BEL-0605', 'Set de maquillaje', 28_000),
  p('ELE-0801', 'Auriculares bluetooth', 30_000),
  p('DEP-1101', 'Pelota de fútbol', 32_000),
  p('HOG-0701', 'Juego de sábanas 2 plazas', 35_000),
  p('IND-0402', 'Jean clásico', 38_000),
  p('JUG-0905', 'Bloques de construcción', 40_000),
  p('IND-0405', 'Buzo con capucha', 42_000),
  p('BAZ-0311', 'Termo de acero inoxidable 1 L', 45_000),
  p('MAS-1201', 'Alimento para perros 15 kg', 48_000),
  p('ALM-0215', 'Vino Malbec caja x6', 54_000),
  p('BEL-0601', 'Perfume 100 ml', 55_000),
  p('HOG-0710', 'Cafetera de filtro', 60_000),
  p('IND-0410', 'Campera rompevientos', 65_000),
  p('ELE-0805', 'Parlante portátil', 70_000),
  p('CAL-0501', 'Zapatillas running', 95_000),
  p('ELE-0820', 'Freidora de aire', 110_000),
  p('ELE-0810', 'Smartwatch', 120_000),
  p('CAL-0505', 'Botas de cuero', 140_000),
  p('ELE-0815', 'Tablet 10 pulgadas', 250_000),
  p('DEP-1110', 'Bicicleta rodado 29', 290_000),
]

/** Index of the product whose reference price is closest to `pesos` (binary search). */
function nearestIndex(pesos: number): number {
  let lo = 0
  let hi = PRODUCTS.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (PRODUCTS[mid]!.refPrice < pesos) lo = mid + 1
    else hi = mid
  }
  if (lo > 0 && pesos - PRODUCTS[lo - 1]!.refPrice < PRODUCTS[lo]!.refPrice - pesos) return lo - 1
  return lo
}

/** A product priced about `pesos`, with a little randomness so neighbours get picked too; skips `exclude`d skus. */
export function productNear(rng: Rng, pesos: number, exclude: ReadonlySet<string>): Product {
  const start = Math.min(PRODUCTS.length - 1, Math.max(0, nearestIndex(pesos) + rng.int(-2, 2)))
  for (let step = 0; step < PRODUCTS.length; step++) {
    const product = PRODUCTS[(start + step) % PRODUCTS.length]!
    if (!exclude.has(product.sku)) return product
  }
  return PRODUCTS[start]! // more lines than products: reuse one
}
