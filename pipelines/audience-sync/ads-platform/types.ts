/** The ads platform's resources as the spec names them (field names exact). */
import type { AudienceColumn } from './hashing.ts'

export type AdAccountField = 'id' | 'name' | 'account_status' | 'currency' | 'timezone_name' | 'business'

/** Only `id` is sure to be there; the rest arrive when requested through `fields`. */
export interface AdAccount {
  /** `act_<number>` */
  id: string
  name?: string
  account_status?: number
  currency?: string
  timezone_name?: string
  /** Inner shape not given by the spec. */
  business?: unknown
}

export interface DeliveryStatus {
  code: number
  description: string
}

export type CustomAudienceField =
  | 'id'
  | 'name'
  | 'subtype'
  | 'description'
  | 'customer_file_source'
  | 'approximate_count'
  | 'delivery_status'
  | 'time_created'
  | 'time_updated'

export interface CustomAudience {
  /** Numeric id in string form. */
  id: string
  name?: string
  subtype?: string
  description?: string
  customer_file_source?: string
  approximate_count?: number
  delivery_status?: DeliveryStatus
  /** `YYYY-MM-DDThh:mm:ss+0000` */
  time_created?: string
  time_updated?: string
}

export interface CreateCustomAudienceInput {
  name: string
  description?: string
  /** Default 'CUSTOM', the only value the spec shows. */
  subtype?: string
  /** Default 'USER_PROVIDED_ONLY', the only value the spec shows. */
  customer_file_source?: string
}

export interface CreateCustomAudienceResult {
  id: string
  success: boolean
}

/** The `data` object of `/debug_token`. */
export interface TokenInfo {
  app_id: string
  type: string
  application: string
  /** Unix seconds; 0 when the token does not expire. */
  expires_at: number
  is_valid: boolean
  scopes: string[]
}

/** The `payload` of endpoint 6 (and of the removal DELETE). */
export interface UserPayload {
  schema: AudienceColumn[]
  /** One row per user: a SHA-256 hex digest (or '') per schema column, in schema order. */
  data: string[][]
}

export interface UploadResult {
  audience_id: string
  session_id: string
  num_received: number
  num_invalid_entries: number
  /** Schema column → sample invalid raw strings. */
  invalid_entry_samples: Record<string, string[]>
}

export const DEFAULT_AD_ACCOUNT_FIELDS: readonly AdAccountField[] = ['id', 'name', 'account_status', 'currency', 'timezone_name', 'business']
export const DEFAULT_AUDIENCE_FIELDS: readonly CustomAudienceField[] = ['id', 'name', 'approximate_count', 'delivery_status', 'time_created', 'time_updated']
