/**
 * What a lane's service throws when it cannot do what was asked: a `kind` the caller maps to its
 * own answer (the API: an HTTP status, services/api/errors.ts; the CLI: a message and an exit
 * code), the short error string (`message`) and structured `details` the caller may show. Never a
 * secret in either. Anything else a service throws is a bug or an outage, not a refusal.
 */
export type DomainErrorKind = 'invalid_input' | 'invalid_credentials' | 'forbidden' | 'not_found' | 'conflict' | 'upstream_unavailable' | 'unreadable_secret'

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    readonly details: unknown = null,
  ) {
    super(message)
    this.name = new.target.name
  }
}

/** One problem with one field of the input: `path` (dotted), a machine `code`, a human `message`. */
export interface FieldProblem {
  path: string
  code: string
  message: string
}

/** The input is well-formed but not acceptable here (e.g. a field the integration's type has not). */
export class InvalidInputError extends DomainError {
  constructor(readonly errors: FieldProblem[]) {
    super('invalid_input', 'Invalid request', { errors })
  }
}

export class NotFoundError extends DomainError {
  constructor(message: string, details: Record<string, unknown>) {
    super('not_found', message, details)
  }
}

/** The request contradicts the current state (already exists, inactive, ...). */
export class ConflictError extends DomainError {
  constructor(message: string, details: Record<string, unknown>) {
    super('conflict', message, details)
  }
}

/** The caller's tenant scope does not reach the resource's tenant. */
export class ForbiddenError extends DomainError {
  constructor(reason: string) {
    super('forbidden', 'Forbidden', reason)
  }
}

/**
 * The external system refused the credentials (or they cannot be right, such as an app key of
 * the wrong form). `reason` is what was wrong, `field` the credential at fault when one is,
 * `solution` what to do; `details` adds the context of the request (account, type, integration).
 */
export class InvalidCredentialsError extends DomainError {
  readonly code: string
  readonly reason: string
  readonly field: string | null
  readonly solution: string | null

  constructor(reason: string, context: Record<string, unknown>, opts: { code?: string; field?: string; solution?: string } = {}) {
    super('invalid_credentials', 'Invalid credentials', { validation_error: reason, ...context, ...(opts.field ? { field: opts.field } : {}) })
    this.code = opts.code ?? 'INVALID_CREDENTIALS'
    this.reason = reason
    this.field = opts.field ?? null
    this.solution = opts.solution ?? null
  }
}

/** The external system could not be asked (down, timing out, or refusing our own application credentials): try again later. */
export class UpstreamUnavailableError extends DomainError {
  constructor(message: string, details: unknown) {
    super('upstream_unavailable', message, details)
  }
}

/** A stored secret does not decrypt with the configured keyring (an operator's problem, not the caller's). */
export class UnreadableSecretError extends DomainError {
  constructor(message: string, details: Record<string, unknown>) {
    super('unreadable_secret', message, details)
  }
}
