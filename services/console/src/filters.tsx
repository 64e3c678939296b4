import { useState } from 'preact/hooks'
import type { Query } from './api.ts'
import { href, navigate, type Place } from './router.ts'

export const SEGMENTS = ['Champions', 'Loyal Customers', 'Potential Loyalists', 'Recent Customers', 'Promising', 'Need Attention', 'About to Sleep', 'At Risk', 'Cannot Lose Them', 'Hibernating', 'Lost'] as const

/** The shared filters every analytics endpoint takes, as the URL holds them. */
const FILTER_KEYS = ['segments', 'min_value', 'max_value', 'date_from', 'date_to'] as const

export function filtersOf(place: Place): Query {
  const q: Query = {}
  const segs = place.query.getAll('segments').filter(Boolean)
  if (segs.length) q.segments = segs
  for (const k of FILTER_KEYS) if (k !== 'segments' && place.query.get(k)) q[k] = place.query.get(k)!
  return q
}

/** Every query parameter of the place but `drop`, as href() takes them. */
export function keep(place: Place, drop: string[] = []): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  for (const k of new Set(place.query.keys())) if (!drop.includes(k)) out[k] = place.query.getAll(k).length > 1 ? place.query.getAll(k) : place.query.get(k)!
  return out
}

/**
 * The filter bar: segments, value range, dates (`dates: false` where the endpoint has its own
 * period); applying writes them into the URL. It starts again from the URL whenever the URL's
 * query changes (back, forward, a link).
 */
export function Filters({ place, dates = true }: { place: Place; dates?: boolean }) {
  return <FilterForm key={place.query.toString()} place={place} dates={dates} />
}

function FilterForm({ place, dates }: { place: Place; dates: boolean }) {
  const [segments, setSegments] = useState<string[]>(place.query.getAll('segments'))
  const [min, setMin] = useState(place.query.get('min_value') ?? '')
  const [max, setMax] = useState(place.query.get('max_value') ?? '')
  const [from, setFrom] = useState(place.query.get('date_from') ?? '')
  const [to, setTo] = useState(place.query.get('date_to') ?? '')
  const apply = (e: Event) => {
    e.preventDefault()
    navigate(href(place.path, { ...keep(place, [...FILTER_KEYS, 'offset']), segments, min_value: min, max_value: max, date_from: from, date_to: to }))
  }
  const clear = () => {
    setSegments([]), setMin(''), setMax(''), setFrom(''), setTo('')
    navigate(href(place.path, keep(place, [...FILTER_KEYS, 'offset'])))
  }
  const active = FILTER_KEYS.some((k) => place.query.getAll(k).length > 0)
  return (
    <details class="filters" open={active}>
      <summary>Filters{active ? ' (active)' : ''}</summary>
      <form onSubmit={apply}>
        <fieldset>
          <legend>Segments</legend>
          <div class="chips">
            {SEGMENTS.map((s) => (
              <label class="chip">
                <input type="checkbox" checked={segments.includes(s)} onChange={(e) => setSegments((cur) => ((e.target as HTMLInputElement).checked ? [...cur, s] : cur.filter((x) => x !== s)))} />
                {s}
              </label>
            ))}
          </div>
        </fieldset>
        <div class="row">
          <label>
            Min. value <input type="number" min="0" step="any" value={min} onInput={(e) => setMin((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Max. value <input type="number" min="0" step="any" value={max} onInput={(e) => setMax((e.target as HTMLInputElement).value)} />
          </label>
          {dates && (
            <>
              <label>
                From <input type="date" value={from} onInput={(e) => setFrom((e.target as HTMLInputElement).value)} />
              </label>
              <label>
                To <input type="date" value={to} onInput={(e) => setTo((e.target as HTMLInputElement).value)} />
              </label>
            </>
          )}
          <button type="submit">Apply</button>
          <button type="button" class="secondary" onClick={clear}>
            Clear
          </button>
        </div>
      </form>
    </details>
  )
}
