import { ForbiddenError } from './domain-errors.ts'

/**
 * Whose data a caller may read and change: one tenant (a tenant API key) or every tenant (the
 * admin token, and the process itself: the CLI, the demo). Services take it with every call and
 * refuse (ForbiddenError) what it does not reach.
 */
export type TenantScope = { readonly kind: 'all' } | { readonly kind: 'tenant'; readonly tenantId: number }

export const ALL_TENANTS: TenantScope = Object.freeze({ kind: 'all' })

export const tenantOnly = (tenantId: number): TenantScope => ({ kind: 'tenant', tenantId })

/** The tenant a listing across tenants is limited to; null for every tenant. */
export const scopedTenant = (scope: TenantScope): number | null => (scope.kind === 'all' ? null : scope.tenantId)

/** Throws ForbiddenError unless the scope reaches `tenantId`. */
export function assertTenantAccess(scope: TenantScope, tenantId: number): void {
  if (scope.kind === 'tenant' && scope.tenantId !== tenantId) {
    throw new ForbiddenError(`this key belongs to tenant ${scope.tenantId} and cannot access another tenant`)
  }
}
