import type { Store } from './clickhouse.ts'

/**
 * Signed-out console sessions (`console_session_revocations`, services/api/session.ts): the id of
 * a session whose cookie must be refused from now on, until it would have expired anyway.
 */
export class SessionRevocations {
  constructor(private readonly store: Store) {}

  async revoke(sessionId: string, expiresAt: number, now = Date.now()): Promise<void> {
    await this.store.insert({ table: 'console_session_revocations', values: [{ session_id: sessionId, revoked_at: new Date(now).toISOString(), expires_at: new Date(expiresAt).toISOString() }], format: 'JSONEachRow' })
  }

  async isRevoked(sessionId: string): Promise<boolean> {
    const rs = await this.store.query({
      query: 'SELECT count() AS n FROM console_session_revocations WHERE session_id = {s:String}',
      query_params: { s: sessionId },
      format: 'JSONEachRow',
    })
    const [row] = await rs.json<{ n: string | number }>()
    return Number(row?.n ?? 0) > 0
  }
}
