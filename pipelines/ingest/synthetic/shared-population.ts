/**
 * One shop's buyers on two platforms, with their orders and the ground truth of who is who
 * (docs/integrations.md, "Simulators"). Every person is one of the generator's customers and has a
 * commerce-platform account; a share of them also has a marketplace account, whose identifiers
 * are written another way (overlap.ts: the e-mail respelled, another address or none; the phone in
 * another spelling or none; the CUIL for the DNI or the other way round, or none; the same names
 * and address), and places about half of their orders there instead. A few families share one
 * e-mail address (different persons). DNIs and phone lines are one person's each.
 *
 * `cdp generate --overlap` writes both sides' events; the commerce-platform and marketplace
 * simulators each serve one side (services/simulators/commerce-platform/shared-population.ts).
 * Deterministic for a seed; one person at a time, so memory stays bounded.
 */
import { customerKey, type CustomerUpserted, type OrderEvent } from '../../../common/events.ts'
import { generateCustomers, type GeneratedEvent } from './generate.ts'
import { DEFAULT_FAMILY_SHARE, DEFAULT_OVERLAP_SHARE, FamilyEmails, MARKETPLACE_ID_OFFSET, marketplaceIdentifiers, UniqueIdentities, type Identifiers, type SourceName } from './overlap.ts'
import { Rng } from './random.ts'

export interface SharedPopulationOptions {
  tenantId: number
  people: number
  seed: string | number
  start: Date
  end: Date
  /** Share of people who also buy on the marketplace; default 0.4. */
  overlapShare?: number
  /** Share of people in a family that shares one e-mail; default 0.02. */
  familyShare?: number
  /** Share of such a person's orders placed on the marketplace; default 0.5. */
  marketplaceOrderShare?: number
}

/** Ground truth: the person behind one source customer. */
export interface AccountTruth {
  source: SourceName
  customer_id: number
  person_id: number
}

export interface SharedPerson {
  personId: number
  /** The commerce-platform account's upsert and the orders placed there, in time order. */
  commerce: GeneratedEvent[]
  /** The marketplace account's upsert and orders, in time order; [] for a person who has none. */
  marketplace: GeneratedEvent[]
  /** The marketplace account's identifiers as the person typed them (its upsert has the e-mail trimmed); null without one. */
  typed: Identifiers | null
  truth: AccountTruth[]
}

export const COMMERCE_SOURCE: SourceName = 'commerce_platform'
export const MARKETPLACE_SOURCE: SourceName = 'marketplace'

const DAY = 86_400_000

function checkShare(name: string, v: number): number {
  if (!(v >= 0 && v <= 1)) throw new RangeError(`${name} must be in [0, 1], got ${v}`)
  return v
}

/**
 * The population, person by person. A person's commerce customer id is their number (the
 * generator's customer id), their marketplace one MARKETPLACE_ID_OFFSET + that number; each
 * account's `source_ids` names only its own source. Order ids are the generator's: an order is on
 * exactly one platform. E-mails in the events are trimmed, as an ingest or a connector stores them.
 */
export function* sharedPopulation(opts: SharedPopulationOptions): Generator<SharedPerson> {
  const overlap = checkShare('overlapShare', opts.overlapShare ?? DEFAULT_OVERLAP_SHARE)
  const orderShare = checkShare('marketplaceOrderShare', opts.marketplaceOrderShare ?? 0.5)
  const families = new FamilyEmails(checkShare('familyShare', opts.familyShare ?? DEFAULT_FAMILY_SHARE))
  const unique = new UniqueIdentities()
  const { tenantId } = opts
  const endMs = opts.end.getTime()
  const customers = generateCustomers({ tenantId, customers: opts.people, seed: opts.seed, start: opts.start, end: opts.end, source: COMMERCE_SOURCE })
  for (const { customerId: person, profile, events } of customers) {
    // Its own stream, so the generator's draws (and so the orders) stay those of the plain dataset.
    const rng = new Rng(`${opts.seed}|shared|${person}`)
    unique.claim(rng, profile)
    const email = families.emailOf(rng, person, profile.lastName, profile.email)
    const own: CustomerUpserted = {
      ...(events.find((e) => e.topic === 'customers')!.value as CustomerUpserted),
      email,
      phone: profile.phone,
      national_id: profile.nationalId,
      source_ids: [{ source: COMMERCE_SOURCE, id: String(person) }],
    }
    const truth: AccountTruth[] = [{ source: COMMERCE_SOURCE, customer_id: person, person_id: person }]
    const withOwn = (e: GeneratedEvent): GeneratedEvent => (e.topic === 'customers' ? { ...e, value: own } : e)
    if (!rng.chance(overlap)) {
      yield { personId: person, commerce: events.map(withOwn), marketplace: [], typed: null, truth }
      continue
    }

    const ids = marketplaceIdentifiers(rng, email, profile.truth)
    const orderIds = [...new Set(events.filter((e) => e.topic === 'orders').map((e) => (e.value as OrderEvent).order_id))]
    const elsewhere = new Set(orderIds.filter(() => rng.chance(orderShare)))
    const onMarketplace = (e: GeneratedEvent) => e.topic === 'orders' && elsewhere.has((e.value as OrderEvent).order_id)
    const customerId = MARKETPLACE_ID_OFFSET + person
    const key = customerKey(tenantId, customerId)
    const orders = events.filter(onMarketplace).map((e): GeneratedEvent => ({ topic: 'orders', key, value: { ...(e.value as OrderEvent), source: MARKETPLACE_SOURCE, customer_id: customerId } }))
    // People sign up on the marketplace when they first buy there (or some time after the shop).
    const registeredAt = orders[0]?.value.occurred_at ?? Math.min(endMs - 1, (own.created_at ?? own.occurred_at) + Math.floor(rng.next() * 200 * DAY))
    const account: CustomerUpserted = {
      ...own,
      event_id: rng.uuid(),
      occurred_at: registeredAt,
      source: MARKETPLACE_SOURCE,
      customer_id: customerId,
      ...ids,
      email: ids.email?.trim() ?? null,
      registration_source: MARKETPLACE_SOURCE,
      created_at: registeredAt,
      source_ids: [{ source: MARKETPLACE_SOURCE, id: String(customerId) }],
    }
    truth.push({ source: MARKETPLACE_SOURCE, customer_id: customerId, person_id: person })
    yield {
      personId: person,
      commerce: events.filter((e) => !onMarketplace(e)).map(withOwn),
      marketplace: [{ topic: 'customers', key, value: account }, ...orders],
      typed: ids,
      truth,
    }
  }
}

/** sharedPopulation's events, both sources, person by person (each account's upsert before its orders). */
export function* sharedPopulationEvents(opts: SharedPopulationOptions, onTruth?: (t: AccountTruth) => void): Generator<GeneratedEvent> {
  for (const p of sharedPopulation(opts)) {
    if (onTruth) p.truth.forEach(onTruth)
    yield* p.commerce
    yield* p.marketplace
  }
}
