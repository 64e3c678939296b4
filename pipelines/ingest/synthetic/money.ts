/**
 * Money as integer cents while computing (sums stay exact), rendered as the decimal strings the
 * Avro contracts carry ("1234.50").
 */

export function centsToDecimal(cents: number): string {
  if (!Number.isSafeInteger(cents)) throw new RangeError(`centsToDecimal: ${cents} is not a whole number of cents`)
  const sign = cents < 0 ? '-' : ''
  const abs = Math.abs(cents)
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`
}

export function decimalToCents(text: string): number {
  const match = /^(-?)(\d+)\.(\d{2})$/.exec(text)
  if (match === null) throw new RangeError(`decimalToCents: "${text}" is not a decimal with 2 places`)
  const cents = Number(match[2]) * 100 + Number(match[3])
  return match[1] === '-' ? -cents : cents
}
