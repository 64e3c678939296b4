/**
 * A tenant's data version: when its stored orders or customers last changed (the projection
 * pipeline marks it after each batch's rows are written) and the version of its settings (a new
 * reference date changes every answer). Two runs that saw the same data version computed from
 * the same input. schemas/clickhouse/010_data_changes.sql.
 */
import type { Store } from './clickhouse.ts'
import { nextSeq } from './versions.ts'

/** Marks the tenants' data as changed now. Call after their rows are written. */
export async function markTenantsChanged(store: Store, tenantIds: Iterable<number>): Promise<void> {
  const at = new Date(nextSeq()).toISOString()
  const values = [...new Set(tenantIds)].map((tenant_id) => ({ tenant_id, changed_at: at }))
  if (values.length) await store.insert({ table: 'tenant_data_changes', format: 'JSONEachRow', values })
}

/** `<last data change ms>:<settings version>`; '0:0' for a tenant with neither. */
export async function tenantDataVersion(store: Store, tenantId: number): Promise<string> {
  const rs = await store.query({
    query: `SELECT (SELECT toUnixTimestamp64Milli(max(changed_at)) FROM tenant_data_changes WHERE tenant_id = {t:UInt64}) AS changed,
                   (SELECT max(version) FROM tenants WHERE tenant_id = {t:UInt64}) AS settings`,
    query_params: { t: tenantId },
    format: 'JSONEachRow',
  })
  const [row] = await rs.json<{ changed: string | number | null; settings: string | number | null }>()
  return `${row?.changed ?? 0}:${row?.settings ?? 0}`
}
