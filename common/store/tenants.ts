import type { Store } from './clickhouse.ts'

/** A tenant is known once any customer or order of it is stored (there is no tenant table yet). */
export async function tenantExists(store: Store, tenantId: number): Promise<boolean> {
  const rs = await store.query({
    query: `SELECT (SELECT count() FROM (SELECT 1 FROM orders WHERE tenant_id = {t:UInt64} LIMIT 1))
                 + (SELECT count() FROM (SELECT 1 FROM customers WHERE tenant_id = {t:UInt64} LIMIT 1)) AS n`,
    query_params: { t: tenantId },
    format: 'JSONEachRow',
  })
  const [row] = await rs.json<{ n: number }>()
  return Number(row?.n ?? 0) > 0
}
