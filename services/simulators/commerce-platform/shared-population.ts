/**
 * One shop's population served by two simulators (pipelines/ingest/synthetic/shared-population.ts):
 * the commerce platform serves every person, with all their orders but those placed on the
 * marketplace; the marketplace serves the share of people who also buy there, their identifiers
 * spelled another way, with those orders. Two simulators started with the same `customers`,
 * `seed`, `overlap` and history period serve the two sides of one population; each answers its
 * side's ground truth on `GET /_sim/truth`. Pure and deterministic for a seed.
 */
import type { GeneratedEvent } from '../../../pipelines/ingest/synthetic/generate.ts'
import { sharedPopulation, type AccountTruth } from '../../../pipelines/ingest/synthetic/shared-population.ts'
import { buildDataset, foldDataset, type Dataset, type DatasetOptions } from './dataset.ts'

export type { AccountTruth }

/** With `overlap`, both simulators default to the same population: 200 people, seed 'shared-population'. */
export const SHARED_DEFAULTS = { customers: 200, seed: 'shared-population' } as const

export interface SharedPopulationOption {
  /**
   * Serve one side of a population shared with the other simulator; the share (0..1) of people
   * who also buy on the marketplace. Off by default. With it `customers` (people) and `seed`
   * default to SHARED_DEFAULTS in both simulators.
   */
  overlap?: number
}

/** The population a simulator serves: its own default one, or with `overlap` the shared one (the same defaults in both simulators). */
export function populationOptions(o: { customers?: number; seed?: string | number } & SharedPopulationOption, defaults: { customers: number; seed: string }) {
  if (o.overlap !== undefined && !(o.overlap >= 0 && o.overlap <= 1)) throw new RangeError(`overlap must be in [0, 1], got ${o.overlap}`)
  const d = o.overlap === undefined ? defaults : SHARED_DEFAULTS
  return { customers: o.customers ?? d.customers, seed: o.seed ?? d.seed, overlap: o.overlap }
}

/** One platform's side: its dataset, and the person behind each of its customers (`customer_id` is the customer's `no`). */
export interface SharedSide {
  data: Dataset
  truth: AccountTruth[]
}

/** A row of `GET /_sim/truth`: a customer by the id the platform's API shows (and the connector keeps in `source_ids`), and its person. */
export interface TruthRow {
  source: AccountTruth['source']
  id: string
  person_id: number
}

export interface SharedPopulationOptions extends DatasetOptions {
  overlap: number
  /** Share of people in a family sharing one e-mail; default 0.02. */
  familyShare?: number
}

/**
 * Both sides. The commerce side's orders have the shipping share asked for, the marketplace's
 * none (as the marketplace simulator's own dataset); a marketplace buyer's e-mail is as typed
 * (other capitals, spaces around it).
 */
export function buildSharedPopulation(opts: SharedPopulationOptions): { commerce: SharedSide; marketplace: SharedSide } {
  const events: Record<'commerce' | 'marketplace', GeneratedEvent[]> = { commerce: [], marketplace: [] }
  const truth: Record<'commerce' | 'marketplace', AccountTruth[]> = { commerce: [], marketplace: [] }
  const typedEmail = new Map<number, string | null>()
  const people = sharedPopulation({ tenantId: 1, people: opts.customers, seed: opts.seed, start: opts.start, end: opts.end, overlapShare: opts.overlap, familyShare: opts.familyShare })
  for (const p of people) {
    events.commerce.push(...p.commerce)
    events.marketplace.push(...p.marketplace)
    for (const t of p.truth) {
      const side = t.source === 'marketplace' ? 'marketplace' : 'commerce'
      truth[side].push(t)
      if (side === 'marketplace') typedEmail.set(t.customer_id, p.typed!.email)
    }
  }
  const marketplace = foldDataset(events.marketplace, { seed: opts.seed, shippingShare: 0 })
  for (const c of marketplace.customers) c.email = typedEmail.get(c.no) ?? null
  return {
    commerce: { data: foldDataset(events.commerce, opts), truth: truth.commerce },
    marketplace: { data: marketplace, truth: truth.marketplace },
  }
}

/** The dataset a simulator serves: the plain one, or with `overlap` its side of the shared population (then with the truth). */
export function datasetOf(side: 'commerce' | 'marketplace', opts: DatasetOptions & SharedPopulationOption): { data: Dataset; truth: AccountTruth[] | null } {
  if (opts.overlap === undefined) return { data: buildDataset(opts), truth: null }
  return buildSharedPopulation({ ...opts, overlap: opts.overlap })[side]
}
