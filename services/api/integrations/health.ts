/**
 * Endpoint 9: totals, per type the syncs of the last 24 hours and their success rate, and an
 * alert per active integration whose last finished sync failed, `since` the first failure of
 * that streak. Pure.
 */
import type { IntegrationStats } from '../../../pipelines/connectors/queue.ts'
import { INTEGRATION_TYPES } from '../../../pipelines/connectors/sources/types.ts'
import type { IntegrationRecord } from '../../../pipelines/connectors/store.ts'

export function healthView(list: IntegrationRecord[], stats: Map<number, IntegrationStats>, failingSince: Map<number, number>) {
  const by_type: Record<string, { total: number; active: number; last_24h_syncs: number; success_rate: number | null }> = {}
  for (const t of INTEGRATION_TYPES) {
    const of = list.filter((i) => i.integration_type === t)
    const n = of.reduce((s, i) => s + (stats.get(i.id)?.last_24h_syncs ?? 0), 0)
    const ok = of.reduce((s, i) => s + (stats.get(i.id)?.last_24h_successes ?? 0), 0)
    by_type[t] = { total: of.length, active: of.filter((i) => i.is_active).length, last_24h_syncs: n, success_rate: n ? Math.round((ok / n) * 10_000) / 10_000 : null }
  }
  const alerts = list
    .filter((i) => i.is_active && stats.get(i.id)?.last_status === 'failed')
    .map((i) => {
      const e = stats.get(i.id)!.last_error
      return {
        integration_id: i.id,
        tenant_id: i.tenant_id,
        type: 'sync_failure' as const,
        message: e ? `${e.error}: ${e.message}` : 'the last sync failed',
        since: new Date(failingSince.get(i.id) ?? stats.get(i.id)!.last_finished_at ?? Date.now()).toISOString(),
        error: e?.error ?? null,
        solution: e?.solution ?? null,
      }
    })
    .sort((a, b) => a.since.localeCompare(b.since))
  return { total_integrations: list.length, active_integrations: list.filter((i) => i.is_active).length, by_type, alerts }
}
