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

export interface TenantListing {
  tenant_id: number
  /** Its settings' name; null when none was set. */
  tenant_name: string | null
  /** Its customers (profiles) with features, as the analytics count them; 0 before the first is scored. */
  customers: number
}

/**
 * The tenants with data (a customer or an order) or settings, ascending, with their names and
 * customers; `only` narrows to one tenant (a tenant key's own).
 */
export async function listTenants(store: Store, only: number | null = null): Promise<TenantListing[]> {
  const where = only === null ? '' : 'WHERE tenant_id = {t:UInt64}'
  const rs = await store.query({
    query: `SELECT k.tenant_id AS tenant_id, s.tenant_name AS tenant_name, k.customers AS customers
            FROM (
                SELECT tenant_id, max(c) AS customers FROM (
                    SELECT tenant_id, count() AS c FROM customer_features FINAL ${where} GROUP BY tenant_id
                    UNION ALL SELECT DISTINCT tenant_id, toUInt64(0) FROM customers ${where}
                    UNION ALL SELECT DISTINCT tenant_id, toUInt64(0) FROM orders ${where}
                    UNION ALL SELECT DISTINCT tenant_id, toUInt64(0) FROM tenants ${where}
                ) GROUP BY tenant_id
            ) AS k
            LEFT JOIN (SELECT tenant_id, tenant_name FROM tenants FINAL ${where}) AS s ON s.tenant_id = k.tenant_id
            ORDER BY tenant_id
            SETTINGS join_use_nulls = 1`,
    query_params: only === null ? {} : { t: only },
    format: 'JSONEachRow',
  })
  return (await rs.json<{ tenant_id: string | number; tenant_name: string | null; customers: string | number }>()).map((r) => ({ tenant_id: Number(r.tenant_id), tenant_name: r.tenant_name, customers: Number(r.customers) }))
}
