/** Tenant integrations: the router of the nine endpoints, the store of integrations and its key rotation. */
export { integrationsRouter, BASE as INTEGRATIONS_BASE, type IntegrationsDeps } from './router.ts'
export { IntegrationStore, rotateIntegrationCredentials, type IntegrationRecord } from '../../../pipelines/connectors/store.ts'
