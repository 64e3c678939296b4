/**
 * The identity lane's public surface (docs/architecture.md): the profile use cases for the API,
 * the resolver the features role runs, and the pure graph for other lanes.
 */
export { IdentityService, maskIdentifier, type IdentityServiceDeps, type ProfileView } from './service.ts'
export { runIdentity, type RunningIdentity } from './run.ts'
export { INGEST_OVERLAP_MS, resolveTenant, type ProfileChanged, type TenantResolved } from './resolve.ts'
export { resolveProfiles, DEFAULT_IDENTITY_SETTINGS, type IdentitySettings, type Resolution } from './graph.ts'
export { identifiersOf, IDENTIFIER_KINDS, type IdentifierKind } from './identifiers.ts'
