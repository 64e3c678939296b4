import express, { type Router } from 'express'
import { buildOpenApi, type JsonSchema, type OpenApiDocument, type OpenApiOperation } from './openapi.ts'

/**
 * GET /openapi.json (the document) and GET /docs (a readable page rendered from it on the
 * server). The page is self-contained — inline CSS, no scripts, no CDN — so it works offline and
 * under a strict CSP. Every text from the document is HTML-escaped.
 */
export function docsRouter(build: () => OpenApiDocument = buildOpenApi): Router {
  const router = express.Router()
  let doc: OpenApiDocument | undefined
  let html: string | undefined
  const get = () => (doc ??= build())
  router.get('/openapi.json', (_req, res) => {
    res.set('Cache-Control', 'no-cache')
    res.json(get())
  })
  router.get('/docs', (_req, res) => {
    html ??= renderDocsPage(get())
    res.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'")
    res.set('Cache-Control', 'no-cache')
    res.type('html').send(html)
  })
  return router
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
export const escapeHtml = (s: unknown) => String(s ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c]!)

/** Escaped text with `code` spans for backticks (the descriptions use them). */
const inline = (s: unknown) => escapeHtml(s).replace(/`([^`]+)`/g, '<code>$1</code>')

function prose(s: string | undefined): string {
  if (!s) return ''
  return s
    .split(/\n{2,}/)
    .map((para) => `<p>${inline(para)}</p>`)
    .join('')
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const

/** A short type label: integer, string (date), array of string, boolean | string, … */
export function typeLabel(s: JsonSchema | undefined, doc?: OpenApiDocument): string {
  if (!s) return 'any'
  if (typeof s.$ref === 'string') return s.$ref.split('/').at(-1)!
  if (Array.isArray(s.anyOf)) return (s.anyOf as JsonSchema[]).map((a) => typeLabel(a, doc)).join(' | ')
  if ('const' in s) return JSON.stringify(s.const)
  if (s.type === 'array') return `array of ${typeLabel(s.items as JsonSchema | undefined, doc)}`
  const t = Array.isArray(s.type) ? s.type.join(' | ') : typeof s.type === 'string' ? s.type : 'any'
  return s.format ? `${t} (${String(s.format)})` : t
}

function enumOf(s: JsonSchema | undefined): unknown[] | undefined {
  if (!s) return undefined
  if (Array.isArray(s.enum)) return s.enum
  if (s.type === 'array') return enumOf(s.items as JsonSchema | undefined)
  if (Array.isArray(s.anyOf)) {
    const all = (s.anyOf as JsonSchema[]).flatMap((a) => enumOf(a) ?? [])
    return all.length ? all : undefined
  }
  return undefined
}

/** Allowed values: the enum, or the bounds and length limits. */
function allowed(s: JsonSchema | undefined): string {
  const e = enumOf(s)
  if (e) return e.map((v) => `<code>${escapeHtml(v)}</code>`).join(', ')
  if (!s) return ''
  const out: string[] = []
  const min = s.minimum ?? (s.exclusiveMinimum !== undefined ? `> ${String(s.exclusiveMinimum)}` : undefined)
  if (min !== undefined) out.push(typeof min === 'string' ? min : `≥ ${String(min)}`)
  if (s.maximum !== undefined) out.push(`≤ ${String(s.maximum)}`)
  if (s.minLength !== undefined || s.maxLength !== undefined) out.push(`length ${String(s.minLength ?? 0)}..${String(s.maxLength ?? '')}`)
  if (s.minItems !== undefined || s.maxItems !== undefined) out.push(`${String(s.minItems ?? 0)}..${String(s.maxItems ?? '')} items`)
  if (s.pattern !== undefined) out.push(`pattern ${String(s.pattern)}`)
  return escapeHtml(out.join(', '))
}

const dflt = (s: JsonSchema | undefined) => (s && s.default !== undefined ? `<code>${escapeHtml(JSON.stringify(s.default))}</code>` : '')

function resolve(s: JsonSchema | undefined, doc: OpenApiDocument): JsonSchema | undefined {
  if (s && typeof s.$ref === 'string') return doc.components.schemas[s.$ref.split('/').at(-1)!]
  return s
}

/** Table of an object schema's properties (one level; nested object arrays get their own table). */
function schemaTable(schema: JsonSchema | undefined, doc: OpenApiDocument, depth = 0): string {
  const s = resolve(schema, doc)
  const properties = (s?.properties ?? {}) as Record<string, JsonSchema>
  if (!s || !Object.keys(properties).length) return `<p class="muted">${escapeHtml(typeLabel(schema, doc))}</p>`
  const req = new Set((s.required as string[] | undefined) ?? [])
  const rows = Object.entries(properties).map(([name, p]) => {
    const items = p.type === 'array' ? resolve(p.items as JsonSchema | undefined, doc) : undefined
    const nested = depth < 2 && items?.properties ? schemaTable(p.items as JsonSchema, doc, depth + 1) : ''
    return `<tr><td><code>${escapeHtml(name)}</code></td><td>${escapeHtml(typeLabel(p, doc))}</td><td>${req.has(name) ? 'yes' : ''}</td><td>${dflt(p)}</td><td>${allowed(p)}</td><td>${inline(p.description)}${nested}</td></tr>`
  })
  const extra = s.additionalProperties === false ? '<p class="muted">Unknown fields are rejected.</p>' : ''
  return `<table><thead><tr><th>Field</th><th>Type</th><th>Required</th><th>Default</th><th>Allowed values</th><th>Notes</th></tr></thead><tbody>${rows.join('')}</tbody></table>${extra}`
}

function operationHtml(path: string, method: string, op: OpenApiOperation, doc: OpenApiDocument): string {
  const id = escapeHtml(op.operationId)
  const params = op.parameters?.length
    ? `<h4>Parameters</h4><table><thead><tr><th>Name</th><th>In</th><th>Type</th><th>Required</th><th>Default</th><th>Allowed values</th><th>Notes</th></tr></thead><tbody>${op.parameters
        .map(
          (p) =>
            `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${escapeHtml(p.in)}</td><td>${escapeHtml(typeLabel(p.schema, doc))}</td><td>${p.required ? 'yes' : ''}</td><td>${dflt(p.schema)}</td><td>${allowed(p.schema)}</td><td>${inline(p.description)}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : ''
  const body = op.requestBody
    ? `<h4>Request body${op.requestBody.required ? '' : ' (optional)'}</h4>${Object.entries(op.requestBody.content)
        .map(([type, c]) => `<p class="muted">${escapeHtml(type)}</p>${schemaTable(c.schema, doc)}`)
        .join('')}`
    : ''
  const responses = `<h4>Responses</h4><ul class="responses">${Object.entries(op.responses)
    .map(([status, r]) => {
      const rr = r as { $ref?: string; description?: string }
      const resolved = rr.$ref ? (doc.components.responses[rr.$ref.split('/').at(-1)!] as { description?: string } | undefined) : rr
      return `<li><code>${escapeHtml(status)}</code> ${inline(resolved?.description)}</li>`
    })
    .join('')}</ul>`
  const auth = op.security && op.security.length === 0 ? '<span class="badge">no token</span>' : ''
  return `<section class="op" id="${id}"><h3><span class="method ${escapeHtml(method)}">${escapeHtml(method.toUpperCase())}</span> <code class="path">${escapeHtml(path)}</code> ${auth}</h3><p class="summary">${escapeHtml(op.summary)}</p>${prose(op.description)}${params}${body}${responses}</section>`
}

/** The whole page. */
export function renderDocsPage(doc: OpenApiDocument): string {
  const ops: { tag: string; path: string; method: string; op: OpenApiOperation }[] = []
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method]
      if (op) ops.push({ tag: op.tags[0] ?? 'Other', path, method, op })
    }
  }
  const tags = [...doc.tags.map((t) => t.name), ...new Set(ops.map((o) => o.tag))].filter((t, i, a) => a.indexOf(t) === i)
  const toc = tags
    .map((t) => {
      const items = ops.filter((o) => o.tag === t)
      if (!items.length) return ''
      return `<li>${escapeHtml(t)}<ul>${items.map((o) => `<li><a href="#${escapeHtml(o.op.operationId)}">${escapeHtml(o.method.toUpperCase())} ${escapeHtml(o.path)}</a></li>`).join('')}</ul></li>`
    })
    .join('')
  const sections = tags
    .map((t) => {
      const items = ops.filter((o) => o.tag === t)
      if (!items.length) return ''
      const desc = doc.tags.find((x) => x.name === t)?.description
      return `<h2>${escapeHtml(t)}</h2>${prose(desc)}${items.map((o) => operationHtml(o.path, o.method, o.op, doc)).join('')}`
    })
    .join('')
  const schemes = Object.entries(doc.components.securitySchemes)
    .map(([name, s]) => `<li><code>${escapeHtml(name)}</code>: ${escapeHtml((s as { description?: string }).description ?? (s as { type?: string }).type)}</li>`)
    .join('')
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(doc.info.title)} — API reference</title>
<style>
body{font:15px/1.5 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#fafbfc}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{margin:0 0 4px}h2{border-bottom:2px solid #dde3ea;padding-bottom:4px;margin-top:40px}
code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#eef1f5;padding:1px 4px;border-radius:3px}
.op{background:#fff;border:1px solid #dde3ea;border-radius:6px;padding:12px 16px;margin:16px 0}
.op h3{margin:0;font-size:16px}.path{background:none;font-size:15px}.summary{font-weight:600;margin:6px 0}
.method{display:inline-block;min-width:58px;text-align:center;color:#fff;border-radius:4px;padding:1px 6px;font-size:13px}
.get{background:#2f7d32}.post{background:#1565c0}.delete{background:#c62828}.put,.patch{background:#ef6c00}
.badge{font-size:12px;color:#555;border:1px solid #bbb;border-radius:10px;padding:0 6px}
table{border-collapse:collapse;width:100%;margin:6px 0;font-size:14px}th,td{border:1px solid #dde3ea;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f4f8}.muted{color:#667}.responses{margin:4px 0}h4{margin:12px 0 4px}
</style></head>
<body><main>
<h1>${escapeHtml(doc.info.title)}</h1>
<p class="muted">Version ${escapeHtml(doc.info.version)} · OpenAPI ${escapeHtml(doc.openapi)} · machine-readable document: <a href="/openapi.json">/openapi.json</a></p>
${prose(doc.info.description)}
<h2>Authentication</h2><ul>${schemes}</ul>
<h2>Errors</h2>${schemaTable(doc.components.schemas.ErrorBody, doc)}
<h2>Contents</h2><ul>${toc}</ul>
${sections}
</main></body></html>
`
}
