import type { RouteGroup } from './routes.ts'
import { ANALYTICS_ROUTES } from './analytics/operations.ts'
import { CUSTOMER_RECORD_ROUTES } from './analytics/customer-record.ts'
import { CLV_VALIDATION_ROUTES } from './analytics/clv-validation.ts'
import { PROFILE_ROUTES } from './profiles-routes.ts'
import { PROCESSING_ROUTES } from './process-operations.ts'
import { INGEST_ROUTES } from './ingest-operations.ts'
import { TENANT_ROUTES } from './tenant-settings-routes.ts'
import { INTEGRATION_ROUTES } from './integrations/operations.ts'
import { AUDIENCE_SYNC_ROUTES } from './audience-sync-operations.ts'
import { WEBHOOK_ROUTES } from './webhooks.ts'
import { API_KEY_ROUTES } from './api-key-routes.ts'
import { SESSION_ROUTES } from './session-routes.ts'
import { OPERATIONS_ROUTES } from './health.ts'
import { DOCS_ROUTES } from './docs-routes.ts'

/**
 * Every route group of the query service, in the document's tag order: what the OpenAPI document
 * is generated from, whether or not an app mounts the optional ones (integrations, audience syncs,
 * webhooks). A route module's new group goes here.
 */
export const ROUTE_GROUPS: readonly RouteGroup[] = [
  ANALYTICS_ROUTES,
  CUSTOMER_RECORD_ROUTES,
  CLV_VALIDATION_ROUTES,
  PROFILE_ROUTES,
  PROCESSING_ROUTES,
  TENANT_ROUTES,
  INGEST_ROUTES,
  INTEGRATION_ROUTES,
  AUDIENCE_SYNC_ROUTES,
  API_KEY_ROUTES,
  SESSION_ROUTES,
  WEBHOOK_ROUTES,
  OPERATIONS_ROUTES,
  DOCS_ROUTES,
]
