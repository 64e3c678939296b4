/**
 * Social-ads credentials are checked through the ads interface's `/debug_token`
 * (../shared/spec/social-ads-audience-interface.md): the application access token is
 * `<app_id>|<app_secret>`, the token to inspect is the tenant's access token, which must be
 * valid, issued to that app, and hold the three permissions the audience sync needs.
 */
import { AdsApiError, AdsClient, AdsNetworkError, RateLimitError, TransientApiError, type TokenInfo } from '../../audience-sync/index.ts'
import { ConnectorError, type HttpOptions } from './http.ts'
import type { SocialAdsCredentials } from './types.ts'

export const REQUIRED_SCOPES = ['ads_management', 'ads_read', 'business_management'] as const

export function socialAdsClient(baseUrl: string, creds: SocialAdsCredentials, version: string | undefined, http: HttpOptions = {}): AdsClient {
  return new AdsClient({
    baseUrl,
    accessToken: creds.access_token,
    appAccessToken: `${creds.app_id}|${creds.app_secret}`,
    version,
    fetch: http.fetch,
    timeoutMs: http.timeoutMs ?? 30_000,
    // A person is waiting for the answer of a validation: no backoff; only a call that got no
    // answer at all (a kept-alive connection the platform had just closed; not a timeout, which would
    // double the wait) is tried once more, at once.
    retry: { policy: { maxAttempts: 2, multiplier: 1, minWaitMs: 0, maxWaitMs: 0 }, shouldRetry: (err) => err instanceof AdsNetworkError && (err.cause as Error | undefined)?.name !== 'TimeoutError' },
  })
}

/** Why the token cannot be used, or null when it can. */
export function tokenProblem(info: TokenInfo, appId: string, now: number): string | null {
  if (!info.is_valid) return 'the access token is invalid or expired'
  if (String(info.app_id) !== appId) return `the access token was issued to app ${info.app_id}, not to app ${appId}`
  if (info.expires_at > 0 && info.expires_at * 1000 <= now) return 'the access token has expired'
  const missing = REQUIRED_SCOPES.filter((s) => !info.scopes.includes(s))
  if (missing.length) return `the access token lacks the permissions ${missing.join(', ')}`
  return null
}

/** Ads client errors as connector errors (messages carry no token: the client keeps queries out of them). */
export function fromAdsError(err: unknown): ConnectorError {
  if (err instanceof ConnectorError) return err
  if (err instanceof RateLimitError) return new ConnectorError('RATE_LIMIT_EXCEEDED', `social ads: ${err.message}`, err.httpStatus, Math.max(1, Math.ceil((err.retryAt - Date.now()) / 1000)))
  if (err instanceof AdsApiError && err.httpStatus === 429) return new ConnectorError('RATE_LIMIT_EXCEEDED', `social ads: ${err.message}`, 429, 60)
  if (err instanceof AdsNetworkError || err instanceof TransientApiError) return new ConnectorError('UNAVAILABLE', `social ads: ${err.message}`, err.httpStatus)
  if (err instanceof AdsApiError) {
    if (err.code === 190 || err.httpStatus === 401) return new ConnectorError('INVALID_CREDENTIALS', `social ads: ${err.message}`, err.httpStatus)
    if (err.code === 200 || err.httpStatus === 403) return new ConnectorError('FORBIDDEN', `social ads: ${err.message}`, err.httpStatus)
    // No such path at the platform: a configured api_version it does not serve (the caller's to fix, not an outage).
    if (err.httpStatus === 404) return new ConnectorError('NOT_FOUND', `social ads: ${err.message}`, 404)
    return new ConnectorError('BAD_RESPONSE', `social ads: ${err.message}`, err.httpStatus)
  }
  return new ConnectorError('UNAVAILABLE', `social ads: ${(err as Error).message}`)
}
