import type { RequestHandler, Router } from 'express'
import type { z } from 'zod'
import type { JsonSchema } from './request-schemas.ts'

/**
 * Routes that document themselves. Each route module declares its operations once, at module
 * level (method, Express path, texts, the zod schemas of the request and of every response by
 * status), exports them as a RouteGroup and mounts each one's handler with `route()`. The
 * OpenAPI document (openapi.ts) is generated from the groups listed in operations.ts, whichever
 * routers a given app mounts; test/api/routes-documented.test.ts checks that the mounted routes
 * and the documented operations are the same set.
 */

export type Method = 'get' | 'post' | 'put' | 'delete'

/** The JSON body parser's limit (app.ts): a larger body is a 413 on every operation that takes one. */
export const JSON_BODY_LIMIT_MB = 20

/** Shared responses of components.responses (their body is the common error body). */
export type SharedResponse = 'Unauthorized' | 'Forbidden' | 'TooManyRequests'

export interface ResponseSpec {
  description: string
  /** Body schema by media type; none: the response has no body. */
  content?: Record<string, z.ZodType>
  /** Response headers worth knowing, name → description (string values). */
  headers?: Record<string, string>
}

export type Responses = Record<number, ResponseSpec | { shared: SharedResponse }>

export interface RequestBodySpec {
  /** What the handler validates the body with. */
  schema: z.ZodType
  required: boolean
  /**
   * The JSON Schema shown for it when the generated one needs shaping (descriptions, defaults,
   * a component): receives the generated input schema (request-schemas.ts `jsonSchema`).
   */
  document?: (generated: JsonSchema) => JsonSchema
  /** A body to show (Swagger UI fills "Try it out" with it). */
  example?: unknown
}

export interface Operation {
  method: Method
  /** Express path (`:param`); the document shows it as `{param}`. */
  path: string
  /** Further paths answering the same (each documented as its own operation, `<operationId>Alias`). */
  aliases?: string[]
  operationId: string
  summary: string
  description?: string
  /** Public: no bearer token (health, docs, the platforms' signed webhooks). */
  public?: boolean
  request?: {
    /** Path parameters as documented (the handlers parse them themselves, into the same refusals). */
    params?: z.ZodObject
    /** What the handler validates the query with (documented as a client sends it: request-schemas.ts). */
    query?: z.ZodObject
    /** A sentence more for some query parameters' descriptions, by name. */
    queryNotes?: Record<string, string>
    headers?: z.ZodObject
    body?: RequestBodySpec
  }
  responses: Responses
}

/** A tag of the document: a route module's operations and the raw schemas they refer to. */
export interface RouteGroup {
  tag: { name: string; description: string }
  operations: Operation[]
  /** JSON Schemas for components.schemas (request shapes a body's `document` refers to). */
  schemas?: () => Record<string, JsonSchema>
}

/** `/a/:id/b` → `/a/{id}/b`. Only named parameters are used in our paths. */
export function openApiPath(expressPath: string): string {
  if (/[*?()[\]]/.test(expressPath)) throw new Error(`${expressPath}: only :name parameters can be documented`)
  return expressPath.replace(/:(\w+)/g, '{$1}')
}

/** Every path an operation answers on: its own first, then its aliases. */
export const pathsOf = (op: Operation): string[] => [op.path, ...(op.aliases ?? [])]

/** Mounts an operation's handlers at its path(s) and method. */
export function route(router: Router, op: Operation, ...handlers: RequestHandler[]): void {
  const paths = pathsOf(op)
  router[op.method](paths.length === 1 ? paths[0]! : paths, ...handlers)
}

/** A JSON response. */
export const json = (description: string, schema: z.ZodType, headers?: ResponseSpec['headers']): ResponseSpec => ({ description, content: { 'application/json': schema }, ...(headers ? { headers } : {}) })
export const shared = (name: SharedResponse) => ({ shared: name }) as const
