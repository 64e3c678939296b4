/** Errors the simulator answers, in the spec's error body `{ error: { message, type, code, trace_id } }`. */
import crypto from 'node:crypto'

export class GraphError extends Error {
  constructor(
    readonly httpStatus: number,
    readonly code: number,
    message: string,
    readonly type: string = 'OAuthException',
  ) {
    super(message)
  }

  body(): { error: { message: string; type: string; code: number; trace_id: string } } {
    return { error: { message: this.message, type: this.type, code: this.code, trace_id: traceId() } }
  }
}

/** Graph-like trace ids: 23 url-safe characters. */
export function traceId(): string {
  return crypto.randomBytes(17).toString('base64url').slice(0, 23)
}

// The HTTP status of each code is not in the spec; these follow what the real platform answers
// (its rate-limit and token errors come with HTTP 400, permission errors with 403).
export const invalidParameter = (message: string) => new GraphError(400, 100, `(#100) ${message}`)
export const invalidToken = (message: string) => new GraphError(400, 190, message)
export const permissionDenied = (permission: string, what: string) =>
  new GraphError(403, 200, `(#200) Requires ${permission} permission to ${what}`)
export const adAccountNotFound = (id: string) =>
  new GraphError(400, 2650, `(#2650) Ad account ${id} does not exist or is not an ad account id of the form act_<number>`)
export const rateLimited = () =>
  new GraphError(400, 80004, '(#80004) There have been too many calls to this ad-account. Wait a bit and try again.')
export const unknownObject = (id: string, method: string) =>
  invalidParameter(`Unsupported ${method.toLowerCase()} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation`)
