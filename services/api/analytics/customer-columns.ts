import { unescapeTsv } from '../../../common/store/tsv.ts'
import type { Store } from '../../../common/store/clickhouse.ts'
import { SEGMENTS } from '../../../pipelines/features/segments.ts'
import type { CommonOptions } from './options.ts'
import { resolveWindow } from './options.ts'

/**
 * The customer columns of a tenant summary (summary.ts): every customer of the tenant's
 * `customer_features` (FINAL), one typed-array column per field the filtered answers aggregate,
 * read in one scan when the summary is refreshed. A filtered request whose sub-query has a
 * columnar twin is answered from them in memory, as of the summary, instead of scanning a
 * million rows in ClickHouse per request (docs/analytics-performance.md, "Filtered answers").
 *
 * Nulls: NaN in a number column, code 0 in a dictionary column.
 */
export interface CustomerColumns extends Record<Exclude<NumberName, 'segment'>, Float64Array>, Record<DictName, DictColumn> {
  size: number
  /** 0 = no segment; else 1 + index in SEGMENTS. */
  segment: Uint32Array
  /** Customer i's counting orders are orderTimes / orderCents [orderStart[i], orderStart[i + 1]): its order history, ascending. */
  orderStart: Float64Array
  orderTimes: Float64Array
  orderCents: Float64Array
  /** Indexes in ascending customer id (for indexOfCustomer). */
  byId: Uint32Array
  /**
   * Every customer's e-mail, one after the other as UTF-16 code units in shared memory (no object
   * for the collector, and the analytics workers read them without a copy): customer i's is
   * emailCodes[emailStart[i], emailStart[i + 1]) (emailOf).
   */
  emailCodes: Uint16Array
  emailStart: Uint32Array
}

/** A string column as codes into its distinct values (`values[code]`); code 0 is null. */
export class DictColumn {
  readonly codes: Uint32Array
  private readonly index: Map<string, number>
  constructor(
    size: number | Uint32Array,
    readonly values: readonly (string | null)[],
  ) {
    this.codes = typeof size === 'number' ? sharedUint32(size) : size
    this.index = new Map(values.slice(1).map((v, i) => [v!, i + 1]))
  }
  /** The code of a value, or -1 when no customer has it. */
  code(v: string): number {
    return this.index.get(v) ?? -1
  }
  get(i: number): string | null {
    return this.values[this.codes[i]!]!
  }
}

/** Each dictionary column: the SQL of its value per customer (over the joined row). */
const DICTS = {
  registrationSource: 'r.registration_source',
  province: 'd.province',
  ageSegment: 'd.age_segment',
  generation: 'd.generation',
  gender: 'd.gender',
  clvTier: 'f.clv_tier',
  churnRisk: 'f.churn_risk',
  // The part after the last '@' of lower(email) (what the email_domain filter matches), null without an '@'.
  emailDomain: "if(position(lower(f.email), '@') > 0, arrayElement(splitByChar('@', lower(f.email)), -1), NULL)",
  recommendedAction: 'f.recommended_action',
} as const
type DictName = keyof typeof DICTS

/** Each number column: its SQL (read as Float64, NaN for null). */
const NUMBERS = {
  customerId: 'f.customer_id',
  /** 0 = no segment; else 1 + index in SEGMENTS. */
  segment: "indexOf({segments:Array(String)}, ifNull(f.segment, ''))",
  /** Net spend in integer cents (the Decimal(15,2) exactly). */
  monetaryCents: 'toInt64(f.monetary * 100)',
  recencyDays: 'f.recency_days',
  frequency: 'f.frequency',
  lastOrderMs: 'toUnixTimestamp64Milli(f.last_order_at)',
  /** Counting orders (the length of the order history). */
  orders: 'length(f.order_times)',
  age: 'd.age',
  totalClv: 'f.total_clv',
  predictedValue: 'f.predicted_value',
  historicalCents: 'toInt64(f.historical_value * 100)',
  churnProbability: 'f.churn_probability',
  potentialLoss: 'f.potential_loss',
  // What a row of the filtered lists shows besides the above (their pages are built from the columns).
  orderFrequencyDays: 'f.order_frequency_days',
  /** Days since 1970-01-01. */
  expectedOrderDay: "dateDiff('day', toDate('1970-01-01'), f.expected_order_date)",
  daysOverdue: 'f.days_overdue',
  avgOrderValue: 'f.avg_order_value',
  firstOrderMs: 'toUnixTimestamp64Milli(f.first_order_at)',
} as const
type NumberName = keyof typeof NUMBERS

const FROM = `customer_features AS f FINAL
LEFT JOIN (SELECT customer_id, corrected_province AS province, age_segment, generation, gender, estimated_age AS age
           FROM customer_demographics FINAL WHERE tenant_id = {tenant_id:UInt64}) AS d ON d.customer_id = f.customer_id
LEFT JOIN (SELECT customer_id, registration_source FROM customers FINAL WHERE tenant_id = {tenant_id:UInt64}) AS r ON r.customer_id = f.customer_id
WHERE f.tenant_id = {tenant_id:UInt64}
SETTINGS join_use_nulls = 1`

/**
 * Reads a tenant's customer columns: one query for the distinct values of the dictionary
 * columns, then one scan as tab-separated numbers (the dictionary columns as codes), parsed line
 * by line straight into the typed arrays: no row is ever held as an object.
 */
export async function loadCustomerColumns(store: Store, tenantId: number): Promise<CustomerColumns> {
  const dictNames = Object.keys(DICTS) as DictName[]
  const [distinct] = await (
    await store.query({
      query: `SELECT count() AS n, sum(length(f.order_times)) AS orders_total, ${dictNames.map((d) => `arraySort(groupUniqArray(${DICTS[d]})) AS ${d}`).join(', ')} FROM ${FROM}`,
      query_params: { tenant_id: tenantId },
      format: 'JSONEachRow',
    })
  ).json<Record<DictName, string[]> & { n: number | string; orders_total: number | string }>()
  const cap = Number(distinct?.n ?? 0) + 1024 // rows written between the two queries fit; more are a later refresh's
  const dicts = Object.fromEntries(dictNames.map((d) => [d, new DictColumn(cap, [null, ...(distinct?.[d] ?? [])])])) as Record<DictName, DictColumn>
  const numberNames = Object.keys(NUMBERS) as NumberName[]
  const numbers = Object.fromEntries(numberNames.map((n) => [n, sharedFloat64(cap)])) as Record<NumberName, Float64Array>
  const params: Record<string, unknown> = { tenant_id: tenantId, segments: SEGMENTS }
  for (const d of dictNames) params[`d_${d}`] = distinct?.[d] ?? []
  const rs = await store.query({
    query: `SELECT ${numberNames.map((n) => `ifNull(toFloat64(${NUMBERS[n]}), nan)`).join(', ')},
                   ${dictNames.map((d) => `if(${DICTS[d]} IS NULL, 0, indexOf({d_${d}:Array(String)}, assumeNotNull(${DICTS[d]})))`).join(', ')},
                   f.email, f.order_times, f.order_cents
            FROM ${FROM}`,
    query_params: params,
    format: 'TabSeparated',
  })
  const cols: (Float64Array | Uint32Array)[] = [...numberNames.map((n) => numbers[n]), ...dictNames.map((d) => dicts[d].codes)]
  const orderStart = sharedFloat64(cap + 1)
  let orderTimes = sharedFloat64(Number(distinct?.orders_total ?? 0) + 65_536)
  let orderCents = sharedFloat64(orderTimes.length)
  let o = 0
  let i = 0
  const emails: string[] = []
  const emailStart = sharedUint32(cap + 1)
  let emailLength = 0
  for await (const batch of rs.stream()) {
    for (const row of batch as unknown as { text: string }[]) {
      if (i >= cap) break
      const line = row.text
      let start = 0
      for (let col = 0; col < cols.length; col++) {
        const end = line.indexOf('\t', start)
        cols[col]![i] = Number(line.slice(start, end)) // 'nan' → NaN
        start = end + 1
      }
      const emailEnd = line.indexOf('\t', start)
      const email = unescapeTsv(line.slice(start, emailEnd))
      emails.push(email)
      emailStart[i] = emailLength
      emailLength += email.length
      start = emailEnd + 1
      // Two arrays of integers of the same length: '[t1,t2,…]\t[c1,c2,…]'.
      const split = line.indexOf('\t', start)
      const count = countItems(line, start, split)
      if (o + count > orderTimes.length) {
        const grown = Math.max(orderTimes.length * 2, o + count)
        orderTimes = copyInto(sharedFloat64(grown), orderTimes)
        orderCents = copyInto(sharedFloat64(grown), orderCents)
      }
      parseIntegers(line, start, split, orderTimes, o)
      parseIntegers(line, split + 1, line.length, orderCents, o)
      o += count
      orderStart[++i] = o
    }
  }
  const ids = numbers.customerId
  const byId = sharedUint32(i)
  for (let k = 0; k < i; k++) byId[k] = k
  let sorted = true
  for (let k = 1; k < i && sorted; k++) sorted = ids[k - 1]! < ids[k]!
  if (!sorted) byId.sort((a, b) => ids[a]! - ids[b]!)
  emailStart[i] = emailLength
  const segment = sharedUint32(cap)
  segment.set(numbers.segment)
  const emailCodes = new Uint16Array(new SharedArrayBuffer(emailLength * 2))
  for (let k = 0, at = 0; k < emails.length; k++) {
    const e = emails[k]!
    for (let j = 0; j < e.length; j++) emailCodes[at++] = e.charCodeAt(j)
  }
  return { size: i, ...numbers, segment, ...dicts, orderStart, orderTimes, orderCents, byId, emailCodes, emailStart }
}

// The columns live in shared memory, so the analytics workers (body-workers.ts) read the same
// arrays as the main thread, without a copy.
const sharedFloat64 = (n: number) => new Float64Array(new SharedArrayBuffer(n * 8))
const sharedUint32 = (n: number) => new Uint32Array(new SharedArrayBuffer(n * 4))

/**
 * The columns as a message for another thread (postMessage): the arrays' shared memory travels as
 * it is; a dictionary column as its codes and values. columnsOfMessage rebuilds them there.
 */
export function columnsMessage(c: CustomerColumns): Record<string, unknown> {
  return Object.fromEntries(Object.entries(c).map(([k, v]) => [k, v instanceof DictColumn ? { dict: v.codes, values: v.values } : v]))
}

export function columnsOfMessage(m: Record<string, unknown>): CustomerColumns {
  return Object.fromEntries(
    Object.entries(m).map(([k, v]) => {
      const d = v as { dict?: Uint32Array; values?: (string | null)[] }
      return [k, d && typeof d === 'object' && d.dict instanceof Uint32Array ? new DictColumn(d.dict, d.values!) : v]
    }),
  ) as unknown as CustomerColumns
}

/** A number column's value, null for NaN (how the columns hold null). */
export const orNull = (v: number): number | null => (v === v ? v : null)
/** The UTC day of an instant as YYYY-MM-DD (ClickHouse's toString(toDate(…))). */
export const isoDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

/** Customer i's e-mail. */
export function emailOf(c: CustomerColumns, i: number): string {
  let out = ''
  // In slices: a call's arguments are bounded (an e-mail is far shorter than one slice).
  for (let a = c.emailStart[i]!, b = c.emailStart[i + 1]!; a < b; a += 4096) {
    out += String.fromCharCode.apply(null, c.emailCodes.subarray(a, Math.min(b, a + 4096)) as unknown as number[])
  }
  return out
}

/** The index of a customer in the columns, or -1. */
export function indexOfCustomer(c: CustomerColumns, customerId: number): number {
  let lo = 0
  let hi = c.size
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (c.customerId[c.byId[mid]!]! < customerId) lo = mid + 1
    else hi = mid
  }
  return lo < c.size && c.customerId[c.byId[lo]!] === customerId ? c.byId[lo]! : -1
}

const copyInto = <T extends Float64Array>(to: T, from: Float64Array): T => (to.set(from), to)

/** The number of items of the array literal line[from, to): '[]' has none. */
function countItems(line: string, from: number, to: number): number {
  if (to - from <= 2) return 0
  let n = 1
  for (let k = from; k < to; k++) if (line.charCodeAt(k) === 44) n++
  return n
}

/** Parses the integers of the array literal line[from, to) into out from `at`. */
function parseIntegers(line: string, from: number, to: number, out: Float64Array, at: number): void {
  let v = 0
  let sign = 1
  let digits = false
  for (let k = from + 1; k < to; k++) {
    const ch = line.charCodeAt(k)
    if (ch >= 48 && ch <= 57) {
      v = v * 10 + (ch - 48)
      digits = true
    } else if (ch === 45) sign = -1
    else if (digits) {
      out[at++] = sign * v
      v = 0
      sign = 1
      digits = false
    }
  }
}

/** The first position in [from, to) of an ascending array whose value is ≥ x (to when none). */
export function lowerBound(a: Float64Array, from: number, to: number, x: number): number {
  while (from < to) {
    const mid = (from + to) >>> 1
    if (a[mid]! < x) from = mid + 1
    else to = mid
  }
  return from
}

/** The first position in [from, to) of an ascending array whose value is > x (to when none). */
export function upperBound(a: Float64Array, from: number, to: number, x: number): number {
  while (from < to) {
    const mid = (from + to) >>> 1
    if (a[mid]! <= x) from = mid + 1
    else to = mid
  }
  return from
}

/**
 * A condition of an endpoint's own (the twin of a condition its SQL adds to the shared filter),
 * on one column: not null (`present`), not code 0 (`nonzero`), one of some codes (`oneOf`), or
 * at least / at most a value (null fails both, as in SQL).
 */
export type Condition =
  | { present: Float64Array }
  | { nonzero: Uint32Array }
  | { oneOf: Uint32Array; codes: readonly number[] }
  | { atLeast: Float64Array; value: number }
  | { atMost: Float64Array; value: number }

/**
 * The customers `customerFilter` (filters.ts) selects, as indexes into the columns, in load order
 * — the same options with the same meaning, evaluated in memory — and the endpoint's own
 * `conditions`. Options listed in `drop` are ignored, as customerScope drops them. Null when the
 * request cannot be answered from the columns (`as_of`, an e-mail domain with an '@'): run the SQL.
 */
export function selectCustomers(c: CustomerColumns, o: CommonOptions, nowMs: number, conditions: readonly Condition[] = [], drop: readonly (keyof CommonOptions)[] = []): Uint32Array | null {
  const keep = selectMask(c, o, nowMs, conditions, drop)
  return keep && rowsOf(keep)
}

/** The indexes marked in `keep`, ascending (an array of their own). */
export function rowsOf(keep: Uint8Array): Uint32Array {
  return indexesMarked(keep, 1).slice()
}

let indexScratch = new Uint32Array(0)
/**
 * The indexes whose mark is `want`, ascending, in a buffer the next call overwrites (read it
 * before anything else can run). Built without a branch per customer: where the marks fall is
 * unpredictable, and a mispredicted branch costs more than the work (5 ms against 0.5 ms at a
 * million customers). The aggregates then walk these indexes instead of testing every mark.
 */
export function indexesMarked(keep: Uint8Array, want: 0 | 1): Uint32Array {
  const n = keep.length
  if (indexScratch.length < n) indexScratch = new Uint32Array(n)
  const out = indexScratch
  let j = 0
  if (want === 1) {
    for (let i = 0; i < n; i++) {
      out[j] = i
      j += keep[i]!
    }
  } else {
    for (let i = 0; i < n; i++) {
      out[j] = i
      j += 1 - keep[i]!
    }
  }
  return out.subarray(0, j)
}

/**
 * An endpoint's population (the customers its query counts: the scored, those with a CLV…) as
 * marks whose buffer ends on a 4-byte boundary with zeros, so smallerSide reads four customers
 * per step.
 */
export class Population {
  readonly marks: Uint8Array
  readonly words: Uint32Array
  readonly size: number
  constructor(n: number, member: (i: number) => boolean) {
    this.words = new Uint32Array(Math.ceil(n / 4))
    this.marks = new Uint8Array(this.words.buffer, 0, n)
    let size = 0
    for (let i = 0; i < n; i++) if (member(i)) (this.marks[i] = 1), size++
    this.size = size
  }
}

/** How many members of `population` are marked in `keep` (same buffer rules as smallerSide). */
export function countIn(keep: Uint8Array, population: Population): number {
  const pw = population.words
  const kw = new Uint32Array(keep.buffer, keep.byteOffset, pw.length)
  let kept = 0
  for (let w = 0; w < pw.length; w++) kept += Math.imul(kw[w]! & pw[w]!, 0x01010101) >>> 24
  return kept
}

// The four-at-a-time reads take byte 0 of a word as its lowest bits: little-endian only.
if (new Uint8Array(new Uint32Array([1]).buffer)[0] !== 1) throw new Error('customer columns need a little-endian machine')

let sideScratch = new Uint32Array(0)
/**
 * The smaller side of a selection within an endpoint's population, for sums that can be taken
 * either way: the selected members to add (sign 1), or, when most members are selected, the
 * members left out, to subtract from the sums over every member (sign -1); and how many members
 * are selected. Reads the marks four at a time and skips groups of four with nothing to list,
 * without a branch per customer. `keep` must come from selectMask or keptMarks (their buffers
 * end on a 4-byte boundary). Same buffer rules as indexesMarked.
 */
export function smallerSide(keep: Uint8Array, population: Population): { rows: Uint32Array; sign: 1 | -1; kept: number } {
  const pw = population.words
  const W = pw.length
  const kw = new Uint32Array(keep.buffer, keep.byteOffset, W)
  const kept = countIn(keep, population)
  if (sideScratch.length < 4 * W + 4) sideScratch = new Uint32Array(4 * W + 4)
  const out = sideScratch
  const most = kept * 2 > population.size
  let j = 0
  for (let w = 0; w < W; w++) {
    const x = most ? pw[w]! & ~kw[w]! : kw[w]! & pw[w]!
    if (x === 0) continue
    const i = 4 * w
    out[j] = i
    j += x & 1
    out[j] = i + 1
    j += (x >>> 8) & 1
    out[j] = i + 2
    j += (x >>> 16) & 1
    out[j] = i + 3
    j += x >>> 24
  }
  return { rows: out.subarray(0, j), sign: most ? -1 : 1, kept }
}

/** A byte buffer of n bytes whose memory ends on a 4-byte boundary (zeros beyond n). */
const wordAligned = (n: number) => new Uint8Array(new ArrayBuffer(Math.ceil(n / 4) * 4), 0, n)

/** How many are marked in `keep`. */
export function countMarked(keep: Uint8Array): number {
  let m = 0
  for (let i = 0, n = keep.length; i < n; i++) m += keep[i]!
  return m
}

/**
 * A selection a request's sub-queries share (they run across awaits, so the marks are its own
 * copy, from keptMarks).
 */
export interface Selection {
  keep: Uint8Array
}

export function selection(c: CustomerColumns, o: CommonOptions, nowMs: number, conditions: readonly Condition[] = [], drop: readonly (keyof CommonOptions)[] = []): Selection | null {
  const keep = selectMask(c, o, nowMs, conditions, drop)
  return keep && { keep: keptMarks(keep) }
}

const spareMarks: Uint8Array[] = []
/**
 * A copy of marks that a request keeps across awaits, in a buffer reused from an earlier request
 * when one was given back (`releaseMarks`): a fresh megabyte per filtered request at a million
 * customers made V8 run a full collection every few hundred milliseconds under load.
 */
export function keptMarks(keep: Uint8Array): Uint8Array {
  let b = spareMarks.pop()
  while (b && b.length !== keep.length) b = spareMarks.pop()
  b ??= wordAligned(keep.length)
  b.set(keep)
  return b
}

/** Gives marks back for reuse, once nothing reads them any more (never while a sub-query may still run). */
export function releaseMarks(keep: Uint8Array | null | undefined): void {
  if (keep && spareMarks.length < 16) spareMarks.push(keep)
}

/**
 * The same selection as a mark per customer (1 = selected), in a buffer that the next call
 * overwrites: read it before anything else can run (no await in between). An aggregate that walks
 * every customer reads it directly, without building the index list (a 4 MB array per request at
 * a million customers, and the garbage collection it brings).
 */
export function selectMask(c: CustomerColumns, o: CommonOptions, nowMs: number, conditions: readonly Condition[] = [], drop: readonly (keyof CommonOptions)[] = []): Uint8Array | null {
  if (o.as_of) return null
  const q: CommonOptions = { ...o }
  for (const k of drop) delete q[k]
  const n = c.size
  // One tight, monomorphic pass per condition over its own column, clearing what fails it. The
  // marks live in one buffer reused by every call (synchronous, so never shared between two):
  // a fresh megabyte per filtered request at a million customers fed the garbage collector.
  const keep = keepBuffer(n)
  const segmentCodes = (names: readonly string[]) => names.map((s) => SEGMENTS.indexOf(s as (typeof SEGMENTS)[number]) + 1)
  if (q.segments?.length) keepCodes(keep, c.segment, SEGMENTS.length + 1, segmentCodes(q.segments), true)
  if (q.exclude_segments?.length) keepCodes(keep, c.segment, SEGMENTS.length + 1, segmentCodes(q.exclude_segments), false)
  // monetary is Decimal(15,2), compared as Float64: cents / 100 is that Float64 exactly.
  if (q.min_value !== undefined || q.max_value !== undefined) {
    const cents = narrowCents(c)
    if (q.min_value !== undefined) (cents ? keepAtLeastInt(keep, cents, centsAtLeast(q.min_value)) : keepAtLeast(keep, c.monetaryCents, centsAtLeast(q.min_value)))
    if (q.max_value !== undefined) (cents ? keepAtMostInt(keep, cents, centsAtMost(q.max_value)) : keepAtMost(keep, c.monetaryCents, centsAtMost(q.max_value)))
  }
  if (q.customer_ids?.length) keepIds(keep, c, q.customer_ids)
  if (q.email_domain) {
    const domain = q.email_domain.toLowerCase().replace(/^@/, '')
    if (domain.includes('@')) return null
    keepCodes(keep, c.emailDomain.codes, c.emailDomain.values.length, [c.emailDomain.code(domain)], true)
  }
  if (q.registration_source) keepCodes(keep, c.registrationSource.codes, c.registrationSource.values.length, [c.registrationSource.code(q.registration_source)], true)
  const w = resolveWindow(q, nowMs)
  if (w) {
    keepAtLeast(keep, c.lastOrderMs, w.from) // NaN (no order) fails
    keepBelow(keep, c.lastOrderMs, w.to)
  }
  for (const k of conditions) {
    if ('present' in k) keepPresent(keep, k.present)
    else if ('nonzero' in k) keepCodes(keep, k.nonzero, codeBound(k.nonzero, n), [0], false)
    else if ('oneOf' in k) keepCodes(keep, k.oneOf, codeBound(k.oneOf, n), k.codes, true)
    else if ('atLeast' in k) {
      // On a column of whole numbers (days, counts) the pass reads half the memory: x >= v is
      // x >= ceil(v) there, and a missing value (the lowest Int32) fails every bound it can meet.
      const ints = wholeNumbers(k.atLeast)
      const bound = Math.ceil(k.value)
      if (ints && bound > INT32_MIN) keepAtLeastInt(keep, ints, bound)
      else keepAtLeast(keep, k.atLeast, k.value)
    } else keepAtMost(keep, k.atMost, k.value)
  }
  return keep
}

let keepScratch = new Uint8Array(0)
/** The reused marks of selectCustomers: the first n bytes, all set. */
function keepBuffer(n: number): Uint8Array {
  if (keepScratch.length < n) keepScratch = wordAligned(Math.max(n, Math.ceil(keepScratch.length * 1.5)))
  const keep = keepScratch.subarray(0, n)
  keep.fill(1)
  return keep
}

/** A function of the columns computed once per columns object (the sub-queries of one request share a selection). */
export function once<T>(f: (c: CustomerColumns) => T): (c: CustomerColumns) => T {
  // Per columns object (every tenant's summary keeps its own, and a refresh prepares the next while requests read the last).
  const values = new WeakMap<CustomerColumns, { v: T }>()
  return (c) => {
    let hit = values.get(c)
    if (!hit) values.set(c, (hit = { v: f(c) }))
    return hit.v
  }
}

// The passes of selectMask: each over one kind of array only, so V8 keeps them monomorphic, and
// without a branch per customer (`keep[i] &= +test`): which customers fail a test is
// unpredictable, and a mispredicted branch per customer made a pass four times slower. Each pass
// clears four marks with one word (`kw[w] &= t0 | t1 << 8 | t2 << 16 | t3 << 24`): one load and
// store for four customers instead of four, 3.4 → 1.9 ms a pass at a million customers.

/** The marks as words of four, over the whole words (the marks' buffer starts on a 4-byte boundary: keepBuffer). */
function wordsOf(keep: Uint8Array): Uint32Array {
  if (keep.byteOffset & 3) throw new Error('marks must start on a 4-byte boundary')
  return new Uint32Array(keep.buffer, keep.byteOffset, keep.length >>> 2)
}

/** Keeps the customers whose code is (wanted) or is not (!wanted) one of `allowed`; every code is below `bound`. */
function keepCodes(keep: Uint8Array, codes: Uint32Array, bound: number, allowed: readonly number[], wanted: boolean): void {
  const table = new Uint8Array(bound).fill(wanted ? 0 : 1)
  for (const a of allowed) if (a >= 0 && a < bound) table[a] = wanted ? 1 : 0
  const kw = wordsOf(keep)
  for (let w = 0, W = kw.length; w < W; w++) {
    const i = w << 2
    kw[w]! &= table[codes[i]!]! | (table[codes[i + 1]!]! << 8) | (table[codes[i + 2]!]! << 16) | (table[codes[i + 3]!]! << 24)
  }
  for (let i = kw.length << 2, n = keep.length; i < n; i++) keep[i]! &= table[codes[i]!]!
}

const codeBounds = new WeakMap<Uint32Array, number>()
/** One more than the largest of the first n codes (cached per column). */
function codeBound(codes: Uint32Array, n: number): number {
  let b = codeBounds.get(codes)
  if (b === undefined) {
    let max = 0
    for (let i = 0; i < n; i++) if (codes[i]! > max) max = codes[i]!
    codeBounds.set(codes, (b = max + 1))
  }
  return b
}

/** Keeps the customers among `ids` (each found by binary search, not a set lookup per customer). */
function keepIds(keep: Uint8Array, c: CustomerColumns, ids: readonly number[]): void {
  const listed = new Uint8Array(keep.length)
  for (const id of ids) {
    const i = indexOfCustomer(c, id)
    if (i >= 0 && i < keep.length) listed[i] = 1
  }
  for (let i = 0, n = keep.length; i < n; i++) keep[i]! &= listed[i]!
}
function keepAtLeastInt(keep: Uint8Array, col: Int32Array, v: number): void {
  const kw = wordsOf(keep)
  for (let w = 0, W = kw.length; w < W; w++) {
    const i = w << 2
    kw[w]! &= +(col[i]! >= v) | (+(col[i + 1]! >= v) << 8) | (+(col[i + 2]! >= v) << 16) | (+(col[i + 3]! >= v) << 24)
  }
  for (let i = kw.length << 2, n = keep.length; i < n; i++) keep[i]! &= +(col[i]! >= v)
}
function keepAtMostInt(keep: Uint8Array, col: Int32Array, v: number): void {
  const kw = wordsOf(keep)
  for (let w = 0, W = kw.length; w < W; w++) {
    const i = w << 2
    kw[w]! &= +(col[i]! <= v) | (+(col[i + 1]! <= v) << 8) | (+(col[i + 2]! <= v) << 16) | (+(col[i + 3]! <= v) << 24)
  }
  for (let i = kw.length << 2, n = keep.length; i < n; i++) keep[i]! &= +(col[i]! <= v)
}

/** What selectMask reads besides the columns themselves, worked out when a summary loads them. */
export function prepareSelection(c: CustomerColumns): void {
  narrowCents(c)
  wholeNumbers(c.recencyDays)
}

const INT32_MIN = -0x80000000
const wholes = new WeakMap<Float64Array, Int32Array | null>()
/**
 * A column as 32-bit integers, missing values (NaN) as the lowest Int32, when every value is a
 * whole number above it and within Int32; else null. Worked out once per column object.
 */
export function wholeNumbers(col: Float64Array): Int32Array | null {
  let v = wholes.get(col)
  if (v === undefined) {
    const out = new Int32Array(col.length)
    let fits = true
    for (let i = 0; i < col.length && fits; i++) {
      const x = col[i]!
      if (x !== x) out[i] = INT32_MIN
      else {
        fits = Number.isInteger(x) && x > INT32_MIN && x <= 0x7fffffff
        out[i] = x
      }
    }
    wholes.set(col, (v = fits ? out : null))
  }
  return v
}

const narrowed = new WeakMap<CustomerColumns, Int32Array | null>()
/**
 * Net spend in cents as 32-bit integers when every customer's fits (below 21 million in the
 * currency's units): the value filters then read half the memory. Null (the Float64 column is
 * read) when one does not.
 */
function narrowCents(c: CustomerColumns): Int32Array | null {
  let v = narrowed.get(c)
  if (v === undefined) {
    const out = new Int32Array(c.size)
    let fits = true
    for (let i = 0; i < c.size && fits; i++) {
      const x = c.monetaryCents[i]!
      fits = Number.isInteger(x) && x >= -0x80000000 && x <= 0x7fffffff
      out[i] = x
    }
    narrowed.set(c, (v = fits ? out : null))
  }
  return v
}
function keepAtLeast(keep: Uint8Array, col: Float64Array, v: number): void {
  const kw = wordsOf(keep)
  for (let w = 0, W = kw.length; w < W; w++) {
    const i = w << 2
    kw[w]! &= +(col[i]! >= v) | (+(col[i + 1]! >= v) << 8) | (+(col[i + 2]! >= v) << 16) | (+(col[i + 3]! >= v) << 24)
  }
  for (let i = kw.length << 2, n = keep.length; i < n; i++) keep[i]! &= +(col[i]! >= v)
}
function keepAtMost(keep: Uint8Array, col: Float64Array, v: number): void {
  const kw = wordsOf(keep)
  for (let w = 0, W = kw.length; w < W; w++) {
    const i = w << 2
    kw[w]! &= +(col[i]! <= v) | (+(col[i + 1]! <= v) << 8) | (+(col[i + 2]! <= v) << 16) | (+(col[i + 3]! <= v) << 24)
  }
  for (let i = kw.length << 2, n = keep.length; i < n; i++) keep[i]! &= +(col[i]! <= v)
}
function keepBelow(keep: Uint8Array, col: Float64Array, v: number): void {
  const kw = wordsOf(keep)
  for (let w = 0, W = kw.length; w < W; w++) {
    const i = w << 2
    kw[w]! &= +(col[i]! < v) | (+(col[i + 1]! < v) << 8) | (+(col[i + 2]! < v) << 16) | (+(col[i + 3]! < v) << 24)
  }
  for (let i = kw.length << 2, n = keep.length; i < n; i++) keep[i]! &= +(col[i]! < v)
}
function keepPresent(keep: Uint8Array, col: Float64Array): void {
  const kw = wordsOf(keep)
  for (let w = 0, W = kw.length; w < W; w++) {
    const i = w << 2
    kw[w]! &= +(col[i] === col[i]) | (+(col[i + 1] === col[i + 1]) << 8) | (+(col[i + 2] === col[i + 2]) << 16) | (+(col[i + 3] === col[i + 3]) << 24)
  }
  for (let i = kw.length << 2, n = keep.length; i < n; i++) keep[i]! &= +(col[i] === col[i])
}

/**
 * The integer cents bounds of a Decimal(15,2) compared as Float64 (`cents / 100 >= v`), so the
 * passes compare cents without a division per customer (a division made a pass eight times
 * slower): the least integer c with c / 100 >= v, and the greatest with c / 100 <= v.
 */
// Beyond 2^53 / 100, v · 100 has no integer neighbours to step between (and no Decimal(15,2) gets there).
const CENTS_BOUND = 2 ** 53 / 100
export function centsAtLeast(v: number): number {
  if (!(Math.abs(v) < CENTS_BOUND)) return v > 0 ? Infinity : -Infinity // beyond every Decimal(15,2)
  let c = Math.ceil(v * 100)
  while ((c - 1) / 100 >= v) c--
  while (!(c / 100 >= v)) c++
  return c
}
export function centsAtMost(v: number): number {
  if (!(Math.abs(v) < CENTS_BOUND)) return v > 0 ? Infinity : -Infinity
  let c = Math.floor(v * 100)
  while ((c + 1) / 100 <= v) c++
  while (!(c / 100 <= v)) c--
  return c
}

/**
 * The first `limit` indexes after `offset` of `rows` in the order `before` (a strict total
 * order): one pass keeping the best offset + limit, without sorting the whole selection.
 */
export function topRows(rows: Uint32Array, before: (a: number, b: number) => boolean, limit: number, offset: number): number[] {
  const k = offset + limit
  const best: number[] = []
  for (let j = 0; j < rows.length; j++) {
    const i = rows[j]!
    if (best.length === k && !before(i, best[k - 1]!)) continue
    let lo = 0
    let hi = best.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (before(best[mid]!, i)) lo = mid + 1
      else hi = mid
    }
    best.splice(lo, 0, i)
    if (best.length > k) best.pop()
  }
  return best.slice(offset)
}


const descending = new WeakMap<CustomerColumns, Map<Float64Array, Map<number, Uint32Array>>>()

/**
 * Every index ordered by `key` descending (null, NaN, as `nullAs`), ties by customer id
 * ascending: sorted once per columns and key, then shared by every request (pages and order
 * statistics walk it instead of sorting the selection).
 */
export function descendingBy(c: CustomerColumns, key: Float64Array, nullAs = Number.NEGATIVE_INFINITY): Uint32Array {
  let byKey = descending.get(c)
  if (!byKey) descending.set(c, (byKey = new Map()))
  let byNull = byKey.get(key)
  if (!byNull) byKey.set(key, (byNull = new Map()))
  let order = byNull.get(nullAs)
  if (!order) {
    const v = (i: number) => (key[i] === key[i] ? key[i]! : nullAs)
    const ids = c.customerId
    order = Uint32Array.from({ length: c.size }, (_, i) => i).sort((a, b) => v(b) - v(a) || ids[a]! - ids[b]!)
    byNull.set(nullAs, order)
  }
  return order
}

/** The selected rows as a membership table over every index. */
export function maskOf(c: CustomerColumns, rows: Uint32Array): Uint8Array {
  const keep = new Uint8Array(c.size)
  for (let j = 0; j < rows.length; j++) keep[rows[j]!] = 1
  return keep
}

/** The `limit` selected indexes after `offset` in `order`. */
export function pageInOrder(order: Uint32Array, keep: Uint8Array, limit: number, offset: number): number[] {
  const out: number[] = []
  for (let p = 0, seen = 0; p < order.length && out.length < limit; p++) {
    const i = order[p]!
    if (!keep[i]) continue
    if (seen++ >= offset) out.push(i)
  }
  return out
}
