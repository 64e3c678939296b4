import { z } from 'zod'
import { ROUTE_GROUPS } from '../../services/api/operations.ts'
import { documentedResponses } from '../../services/api/openapi.ts'
import { ErrorBody } from '../../services/api/errors.ts'
import { pathsOf, type Operation, type ResponseSpec } from '../../services/api/routes.ts'

/**
 * Checks real answers against the OpenAPI document: the operation a request reached (by method
 * and path, as Express matches them), the response documented for its status (its own, or 401 /
 * 429 / a shared one), the media type the answer came in, and for JSON the body against the
 * registered zod schema of that status. Any mismatch throws, naming what was expected.
 */

interface Documented {
  method: string
  path: string
  pattern: RegExp
  /** Path parameters: the fewer, the more specific (`/x/health` before `/x/:id`). */
  params: number
  op: Operation
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

const DOCUMENTED: Documented[] = ROUTE_GROUPS.flatMap((g) =>
  g.operations.flatMap((op) =>
    pathsOf(op).map((path) => ({
      method: op.method.toUpperCase(),
      path,
      // Express matches case-insensitively, a parameter being one non-empty segment; a trailing slash is allowed.
      pattern: new RegExp(`^${path.split(/(:\w+)/).map((part) => (part.startsWith(':') ? '[^/]+' : escape(part))).join('')}/?$`, 'i'),
      params: (path.match(/:\w+/g) ?? []).length,
      op,
    })),
  ),
)

/** The documented operation (and the path it was matched on) a request reaches, or an error saying there is none. */
export function documentedOperation(method: string, url: string): { op: Operation; path: string } {
  const pathname = new URL(url, 'http://localhost').pathname
  const found = DOCUMENTED.filter((d) => d.method === method.toUpperCase() && d.pattern.test(pathname)).sort((a, b) => a.params - b.params)[0]
  if (!found) throw new Error(`${method} ${pathname} is not a documented operation`)
  return { op: found.op, path: found.path }
}

const isJson = (mediaType: string) => mediaType === 'application/json'

/**
 * Throws unless the answer (status, content type, body: parsed JSON, text, or undefined without
 * a body) is one the document describes for this request.
 */
export function expectDocumented(method: string, url: string, status: number, body: unknown, contentType: string | null = 'application/json'): void {
  const { op, path } = documentedOperation(method, url)
  const where = `${method.toUpperCase()} ${path} → ${status}`
  const responses = documentedResponses(op, path)
  const entry = responses[status]
  if (!entry) throw new Error(`${where} is not documented (documented: ${Object.keys(responses).join(', ')})`)
  const spec: ResponseSpec = 'shared' in entry ? { description: entry.shared, content: { 'application/json': ErrorBody } } : entry
  if (body === undefined || body === '') {
    if (spec.content) throw new Error(`${where}: documented with a body (${Object.keys(spec.content).join(', ')}), answered without one`)
    return
  }
  const mediaType = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  const schema = spec.content?.[mediaType]
  if (!schema) throw new Error(`${where}: ${mediaType || 'no content type'} is not documented (documented: ${Object.keys(spec.content ?? {}).join(', ') || 'no body'})`)
  if (!isJson(mediaType)) return
  const parsed = schema.safeParse(body)
  if (!parsed.success) throw new Error(`${where}: the body does not match the documented schema\n${z.prettifyError(parsed.error)}\nbody: ${JSON.stringify(body).slice(0, 2000)}`)
}

/**
 * Reads a fetch answer and checks it (expectDocumented): the body parsed as JSON when it is
 * JSON, text when it is text, bytes otherwise, undefined when there is none.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are checked field by field by the callers
export async function readDocumented(method: string, res: Response): Promise<{ status: number; headers: Headers; body: any }> {
  const contentType = res.headers.get('content-type')
  const mediaType = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  const bytes = Buffer.from(await res.arrayBuffer())
  const body = bytes.length === 0 ? undefined : isJson(mediaType) ? JSON.parse(bytes.toString('utf8')) : mediaType.startsWith('text/') ? bytes.toString('utf8') : bytes
  expectDocumented(method, res.url, res.status, body, contentType)
  return { status: res.status, headers: res.headers, body }
}

/** Throws unless the body is the common error body (for answers of routes that are not operations: 404s, refusals before routing). */
export function expectErrorBody(body: unknown): void {
  const parsed = ErrorBody.safeParse(body)
  if (!parsed.success) throw new Error(`not the common error body\n${z.prettifyError(parsed.error)}\nbody: ${JSON.stringify(body)}`)
}
