/** Epoch milliseconds as ISO 8601 UTC (what our JSON answers carry and ClickHouse parses, best effort); null stays null. */
export function iso(ms: number): string
export function iso(ms: number | null | undefined): string | null
export function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(Number(ms)).toISOString()
}
