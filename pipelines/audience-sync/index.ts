/**
 * The audience-sync lane's public surface (docs/architecture.md): the ads-platform client (the
 * connectors lane tests social-ads credentials with it).
 */
export * from './ads-platform/index.ts'
