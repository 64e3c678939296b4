/**
 * What every connector shares: the integration types of the spec, the credential fields each
 * needs (spec "Integration", required credential fields per type), which of them are secrets,
 * the entities a sync can fetch, and the base URLs of the external systems.
 */
export const INTEGRATION_TYPES = ['commerce_platform', 'marketplace', 'search_ads', 'social_ads'] as const
export type IntegrationType = (typeof INTEGRATION_TYPES)[number]

export const CREDENTIAL_FIELDS = {
  commerce_platform: ['account_name', 'environment', 'app_key', 'app_token'],
  marketplace: ['client_id', 'client_secret', 'redirect_uri'],
  search_ads: ['customer_id', 'developer_token', 'refresh_token'],
  social_ads: ['app_id', 'app_secret', 'access_token'],
} as const satisfies Record<IntegrationType, readonly string[]>

export type CredentialField = (typeof CREDENTIAL_FIELDS)[IntegrationType][number]

/** Credential fields that are secrets: encrypted at rest, masked in every answer, never logged. */
export const SECRET_FIELDS: ReadonlySet<string> = new Set(['app_token', 'client_secret', 'developer_token', 'refresh_token', 'app_secret', 'access_token'])

export type Credentials = Record<string, string>
export type CommerceCredentials = Record<(typeof CREDENTIAL_FIELDS)['commerce_platform'][number], string>
export type MarketplaceCredentials = Record<(typeof CREDENTIAL_FIELDS)['marketplace'][number], string>
export type SearchAdsCredentials = Record<(typeof CREDENTIAL_FIELDS)['search_ads'][number], string>
export type SocialAdsCredentials = Record<(typeof CREDENTIAL_FIELDS)['social_ads'][number], string>

export const ENTITIES = ['products', 'customers', 'orders'] as const
export type Entity = (typeof ENTITIES)[number]

/** Entities each type can sync; the ads platforms are validated and tested, not synced. */
export const SYNCABLE_ENTITIES: Record<IntegrationType, readonly Entity[]> = {
  commerce_platform: ['products', 'customers', 'orders'],
  marketplace: ['customers', 'orders'],
  search_ads: [],
  social_ads: [],
}

/**
 * Base URLs of the external systems (the simulators' URLs in tests and the demo). The commerce
 * platform's may hold `{account_name}` and `{environment}` placeholders (a real platform puts them
 * in the host); without them the client appends `/{account_name}/{environment}`.
 */
export interface ConnectorEndpoints {
  commercePlatform: string
  marketplace: string
  searchAds: string
  socialAds: string
}

/** The platform's description of an account, as endpoint 6 answers it (`account_info`). */
export interface AccountInfo {
  account_name: string
  account_id: string
  is_active: boolean
  hosts: string[]
  apis_available: { catalog: boolean; orders: boolean; masterdata: boolean; payments: boolean }
}

/** `appkey-{account_name}-{hash}`: the form the commerce platform issues app keys in. */
export function appKeyMatches(appKey: string, accountName: string): boolean {
  if (!accountName || !appKey.startsWith(`appkey-${accountName}-`)) return false
  return /^[A-Za-z0-9]{4,64}$/.test(appKey.slice(`appkey-${accountName}-`.length))
}
