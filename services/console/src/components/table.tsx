import type { ComponentChildren } from 'preact'
import { exportHref, type Query } from '../api.ts'

export interface Column<T> {
  label: string
  cell: (row: T) => ComponentChildren
  /** Right-aligned (numbers). */
  numeric?: boolean
}

/** A data table with a caption; `source` adds the endpoint's exports (csv, excel, json) under it. */
export function Table<T>({ caption, columns, rows, rowKey, source, empty = 'Nothing to show.' }: { caption: string; columns: Column<T>[]; rows: readonly T[]; rowKey: (row: T, i: number) => string | number; source?: { path: string; query: Query }; empty?: string }) {
  return (
    <div class="table-wrap">
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" class={c.numeric ? 'num' : undefined}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 ? (
            <tr>
              <td colSpan={columns.length} class="empty">
                {empty}
              </td>
            </tr>
          ) : (
            rows.map((r, i) => (
              <tr key={rowKey(r, i)}>
                {columns.map((c) => (
                  <td class={c.numeric ? 'num' : undefined}>{c.cell(r)}</td>
                ))}
              </tr>
            ))
          )}
        </tbody>
      </table>
      {source && <Exports path={source.path} query={source.query} what={caption} />}
    </div>
  )
}

/** Download links for an endpoint's export (the API's `format` parameter). */
export function Exports({ path, query, what }: { path: string; query: Query; what: string }) {
  return (
    <p class="exports">
      Export {what.toLowerCase()}:{' '}
      {(['csv', 'excel', 'json'] as const).map((f) => (
        <a href={exportHref(path, query, f)} download aria-label={`Export ${what} as ${f}`}>
          {f}
        </a>
      ))}
    </p>
  )
}

/** A chart's numbers, folded under it: what the chart shows, readable without seeing it. */
export function Numbers({ caption, head, rows }: { caption: string; head: string[]; rows: (string | number)[][] }) {
  return (
    <details class="numbers">
      <summary>The numbers</summary>
      <table>
        <caption class="sr-only">{caption}</caption>
        <thead>
          <tr>
            {head.map((h, i) => (
              <th scope="col" class={i ? 'num' : undefined}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr>
              {r.map((c, i) => (i === 0 ? <th scope="row">{c}</th> : <td class="num">{c}</td>))}
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  )
}

/** Previous / next over an offset-paged list. */
export function Pager({ total, limit, offset, go }: { total: number; limit: number; offset: number; go: (offset: number) => void }) {
  const last = Math.max(0, total - 1)
  const page = Math.floor(offset / limit) + 1
  const pages = Math.max(1, Math.ceil(total / limit))
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={offset === 0} onClick={() => go(Math.max(0, offset - limit))}>
        ← Previous
      </button>
      <span>
        Page {page} of {pages} ({total.toLocaleString()} in all)
      </span>
      <button type="button" disabled={offset + limit > last} onClick={() => go(offset + limit)}>
        Next →
      </button>
    </nav>
  )
}
