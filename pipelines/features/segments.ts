/**
 * The 11 RFM segments and the map from every score combination '111'..'555' to exactly one of
 * them. Pure data and functions, no I/O. Rules explained in docs/segments.md.
 *
 * The spec's table (cdp-service-interface.md, "RFM segments") is copied below verbatim, in its
 * row order. It has two defects, both resolved here by a rule rather than by hand:
 * - 231 and 241 are listed under both About to Sleep and Hibernating: the first listing in the
 *   table wins (About to Sleep), see {@link SEGMENT_SOURCE}.
 * - 14 combinations are not listed at all: each takes the segment of its nearest listed
 *   combinations ({@link nearestListedSegment}).
 */

export const SEGMENTS = [
  'Champions',
  'Loyal Customers',
  'Potential Loyalists',
  'Recent Customers',
  'Promising',
  'Need Attention',
  'About to Sleep',
  'At Risk',
  'Cannot Lose Them',
  'Hibernating',
  'Lost',
] as const

export type Segment = (typeof SEGMENTS)[number]


/** The spec's "Meaning" column. */
export const SEGMENT_DESCRIPTIONS: Readonly<Record<Segment, string>> = {
  Champions: 'Recent, frequent, high spend',
  'Loyal Customers': 'Good spend, respond to promotions',
  'Potential Loyalists': 'Recent with potential',
  'Recent Customers': 'First purchase recently',
  Promising: 'Recent buyers with growth potential',
  'Need Attention': 'Above average but at risk',
  'About to Sleep': 'Below average on all metrics',
  'At Risk': 'Spent much, long ago',
  'Cannot Lose Them': 'Big buyers who have not returned',
  Hibernating: 'Last purchase long ago',
  Lost: 'Lowest scores on all metrics',
}

/** The spec's table as written (rows and values in its order, duplicates included). */
export const SPEC_SEGMENT_TABLE: ReadonlyArray<readonly [Segment, readonly string[]]> = [
  ['Champions', ['555', '554', '544', '545', '454', '455', '445']],
  ['Loyal Customers', ['543', '444', '435', '355', '354', '345', '344', '335']],
  ['Potential Loyalists', ['553', '551', '552', '541', '542', '533', '532', '531', '452', '451']],
  ['Recent Customers', ['512', '511', '422', '421', '412', '411', '311']],
  ['Promising', ['525', '524', '523', '522', '521', '515', '514', '513', '425', '424', '413', '414', '415', '315', '314', '313']],
  ['Need Attention', ['535', '534', '443', '434', '343', '334', '325', '324']],
  ['About to Sleep', ['331', '321', '312', '221', '213', '231', '241', '251']],
  ['At Risk', ['255', '254', '245', '244', '253', '252', '243', '242', '235', '234', '225', '224', '153', '152', '145', '143', '142', '135', '134', '133', '125', '124']],
  ['Cannot Lose Them', ['155', '154', '144', '214', '215', '115', '114', '113']],
  ['Hibernating', ['332', '322', '231', '241', '151', '141', '131', '121', '112', '122', '123', '132', '211', '212', '222', '223', '232', '233']],
  ['Lost', ['111']],
]

/** Every three-digit score, '111'..'555', ascending. */
export const ALL_SCORES: readonly string[] = (() => {
  const out: string[] = []
  for (let r = 1; r <= 5; r++) for (let f = 1; f <= 5; f++) for (let m = 1; m <= 5; m++) out.push(`${r}${f}${m}`)
  return Object.freeze(out)
})()

/** How a score got its segment. */
export type SegmentSource =
  /** Listed once in the spec's table. */
  | 'listed'
  /** Listed under two segments; the first listing in table order wins. */
  | 'first-listing'
  /** Not listed; the nearest listed combinations decide ({@link nearestListedSegment}). */
  | 'nearest-listed'

/**
 * The spec's listings with duplicates resolved: the first listing in table order wins, so 231
 * and 241 go to About to Sleep (its row precedes Hibernating). That also keeps the R=2, M=1 run
 * 221, 231, 241, 251 in one segment, as the table's own 221 and 251 are About to Sleep.
 */
function resolveListed(): { listed: Map<string, Segment>; twice: Set<string> } {
  const listed = new Map<string, Segment>()
  const twice = new Set<string>()
  for (const [segment, scores] of SPEC_SEGMENT_TABLE) {
    for (const s of scores) {
      if (listed.has(s)) twice.add(s)
      else listed.set(s, segment)
    }
  }
  return { listed, twice }
}

const digits = (s: string): [number, number, number] => [Number(s[0]), Number(s[1]), Number(s[2])]

/**
 * The segment of a combination that the table does not list, decided by its nearest listed
 * combinations. Distance is Manhattan over the three digits (|ΔR| + |ΔF| + |ΔM|); among the
 * listed combinations at the smallest distance:
 * 1. the segment held by the most of them wins (a neighbourhood vote);
 * 2. on a tied vote, the neighbour that differs in the least important dimension wins, with
 *    R more important than F more important than M (compare (|ΔR|, |ΔF|, |ΔM|) lexicographically):
 *    the table is organised by recency first;
 * 3. if two neighbours are still tied (one above, one below in the same dimension), the higher
 *    one wins, like rounding half up.
 * Only listed combinations vote (never another unlisted one), so the result does not depend on
 * the order in which unlisted combinations are resolved.
 */
export function nearestListedSegment(score: string, listed: ReadonlyMap<string, Segment>): Segment {
  const [r, f, m] = digits(score)
  type Candidate = { score: string; segment: Segment; delta: [number, number, number]; distance: number }
  let nearest: Candidate[] = []
  for (const [s, segment] of listed) {
    const [r2, f2, m2] = digits(s)
    const delta: [number, number, number] = [Math.abs(r - r2), Math.abs(f - f2), Math.abs(m - m2)]
    const distance = delta[0] + delta[1] + delta[2]
    if (nearest.length === 0 || distance < nearest[0]!.distance) nearest = [{ score: s, segment, delta, distance }]
    else if (distance === nearest[0]!.distance) nearest.push({ score: s, segment, delta, distance })
  }
  if (nearest.length === 0) throw new RangeError('no listed combinations to vote')

  const votes = new Map<Segment, number>()
  for (const c of nearest) votes.set(c.segment, (votes.get(c.segment) ?? 0) + 1)
  const top = Math.max(...votes.values())
  const finalists = nearest.filter((c) => votes.get(c.segment) === top)
  finalists.sort(
    (a, b) =>
      a.delta[0] - b.delta[0] ||
      a.delta[1] - b.delta[1] ||
      a.delta[2] - b.delta[2] ||
      // higher neighbour first (the digit strings have equal length, so string order is numeric order)
      (a.score < b.score ? 1 : a.score > b.score ? -1 : 0),
  )
  return finalists[0]!.segment
}

function buildMap(): { map: Record<string, Segment>; source: Record<string, SegmentSource> } {
  const { listed, twice } = resolveListed()
  const map: Record<string, Segment> = {}
  const source: Record<string, SegmentSource> = {}
  for (const s of ALL_SCORES) {
    const seg = listed.get(s)
    if (seg) {
      map[s] = seg
      source[s] = twice.has(s) ? 'first-listing' : 'listed'
    } else {
      map[s] = nearestListedSegment(s, listed)
      source[s] = 'nearest-listed'
    }
  }
  return { map: Object.freeze(map), source: Object.freeze(source) }
}

const built = buildMap()

/** All 125 scores '111'..'555' (keys in ascending order) to exactly one segment. */
export const SEGMENT_MAP: Readonly<Record<string, Segment>> = built.map

/** How each score's segment was decided: listed in the spec, first of two listings, or by the nearest-listed rule. */
export const SEGMENT_SOURCE: Readonly<Record<string, SegmentSource>> = built.source

function checkScore(name: string, v: number): void {
  if (!Number.isInteger(v) || v < 1 || v > 5) throw new RangeError(`${name} score must be an integer 1..5, got ${v}`)
}

export function segmentOf(r: number, f: number, m: number): Segment {
  checkScore('r', r)
  checkScore('f', f)
  checkScore('m', m)
  return SEGMENT_MAP[`${r}${f}${m}`]!
}
