import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { run as runGenerate } from '../../cli/commands/generate.ts'
import { UsageError } from '../../cli/args.ts'
import { customerSemanticErrors, orderSemanticErrors } from '../../pipelines/ingest/validation.ts'
import { generateEvents, type GeneratedEvent } from '../../pipelines/ingest/synthetic/generate.ts'
import { MARKETPLACE_ID_OFFSET } from '../../pipelines/ingest/synthetic/overlap.ts'
import { sharedPopulation, sharedPopulationEvents, type AccountTruth, type SharedPopulationOptions } from '../../pipelines/ingest/synthetic/shared-population.ts'
import { identifiersOf } from '../../pipelines/identity/index.ts'

const WINDOW = { start: new Date('2023-01-01T00:00:00Z'), end: new Date('2025-01-01T00:00:00Z') }
const OPTS: SharedPopulationOptions = { tenantId: 4, people: 600, seed: 'shared-test', ...WINDOW, familyShare: 0.1 }
const people = [...sharedPopulation(OPTS)]
const plain = [...generateEvents({ tenantId: 4, customers: 600, seed: 'shared-test', ...WINDOW })]

const customerOf = (events: GeneratedEvent[]) => events.find((e) => e.topic === 'customers')?.value as CustomerUpserted | undefined
const ordersOf = (events: GeneratedEvent[]) => events.filter((e) => e.topic === 'orders').map((e) => e.value as OrderEvent)
/** The identifiers that can link two source customers (a source id names one source's customer only). */
const linkKeys = (c: CustomerUpserted) => identifiersOf(c).filter((i) => i.kind !== 'source_id').map((i) => `${i.kind}:${i.value}`)

describe('shared population (pipelines/ingest/synthetic/shared-population.ts)', () => {
  it('is deterministic for a seed, and another seed is another population', () => {
    expect(JSON.stringify([...sharedPopulation(OPTS)])).toBe(JSON.stringify(people))
    expect(JSON.stringify([...sharedPopulation({ ...OPTS, people: 50, seed: 'other' })])).not.toBe(JSON.stringify(people.slice(0, 50)))
  })

  it('gives every person a commerce account and about 40% a marketplace account too, each with its own source and ids', () => {
    expect(people.map((p) => p.personId)).toEqual(Array.from({ length: 600 }, (_, i) => i + 1))
    const both = people.filter((p) => p.marketplace.length)
    expect(both.length / people.length).toBeGreaterThan(0.33)
    expect(both.length / people.length).toBeLessThan(0.47)
    for (const p of people) {
      const c = customerOf(p.commerce)!
      expect(c).toMatchObject({ source: 'commerce_platform', customer_id: p.personId, source_ids: [{ source: 'commerce_platform', id: String(p.personId) }] })
      const truth: AccountTruth[] = [{ source: 'commerce_platform', customer_id: p.personId, person_id: p.personId }]
      for (const e of p.commerce) expect([e.key, e.value.source]).toEqual([`4:${p.personId}`, 'commerce_platform'])
      const m = customerOf(p.marketplace)
      if (m) {
        const id = MARKETPLACE_ID_OFFSET + p.personId
        expect(m).toMatchObject({ source: 'marketplace', customer_id: id, registration_source: 'marketplace', source_ids: [{ source: 'marketplace', id: String(id) }] })
        // The same person: the names and the address stay.
        expect([m.first_name, m.last_name, m.street, m.city]).toEqual([c.first_name, c.last_name, c.street, c.city])
        for (const e of p.marketplace) expect([e.key, e.value.source, e.value.customer_id]).toEqual([`4:${id}`, 'marketplace', id])
        // Signed up before (or when) buying there first.
        for (const o of ordersOf(p.marketplace)) expect(o.occurred_at).toBeGreaterThanOrEqual(m.occurred_at)
        expect(p.marketplace[0]!.topic).toBe('customers')
        truth.push({ source: 'marketplace', customer_id: id, person_id: p.personId })
      } else expect(p.typed).toBeNull()
      expect(p.truth).toEqual(truth)
    }
  })

  it('splits the orders: each of the plain generator’s order events on exactly one platform, about half of an overlapping person’s on the marketplace', () => {
    const strip = (o: OrderEvent) => JSON.stringify({ ...o, source: '', customer_id: 0 })
    const plainOrders = plain.filter((e) => e.topic === 'orders').map((e) => e.value as OrderEvent)
    const split = people.flatMap((p) => [...ordersOf(p.commerce), ...ordersOf(p.marketplace)])
    expect(split.map(strip).sort()).toEqual(plainOrders.map(strip).sort())
    // The buyer is the same person on either platform.
    const personOf = new Map(plainOrders.map((o) => [o.order_id, o.customer_id]))
    for (const p of people) for (const o of [...ordersOf(p.commerce), ...ordersOf(p.marketplace)]) expect(personOf.get(o.order_id)).toBe(p.personId)
    // An order's events stay together.
    for (const p of people) {
      const here = new Set(ordersOf(p.commerce).map((o) => o.order_id))
      for (const o of ordersOf(p.marketplace)) expect(here.has(o.order_id)).toBe(false)
    }
    const overlapping = people.filter((p) => p.marketplace.length)
    const placed = (evs: GeneratedEvent[]) => ordersOf(evs).filter((o) => o.event_type === 'placed').length
    const onMarketplace = overlapping.reduce((s, p) => s + placed(p.marketplace), 0)
    const all = overlapping.reduce((s, p) => s + placed(p.marketplace) + placed(p.commerce), 0)
    expect(onMarketplace / all).toBeGreaterThan(0.4)
    expect(onMarketplace / all).toBeLessThan(0.6)
    // Someone on the shop alone keeps the plain generator's orders.
    const alone = people.find((p) => !p.marketplace.length && ordersOf(p.commerce).length > 2)!
    expect(ordersOf(alone.commerce).map((o) => o.event_id)).toEqual(plainOrders.filter((o) => o.customer_id === alone.personId).map((o) => o.event_id))
  })

  it('spells a person’s identifiers otherwise on the marketplace, and the identity normaliser maps them to the same keys', () => {
    const overlapping = people.filter((p) => p.marketplace.length)
    let linked = 0
    let respelled = 0
    const missing = { email: 0, phone: 0, national_id: 0 }
    const emails = { same: 0, other: 0 }
    for (const p of overlapping) {
      const c = customerOf(p.commerce)!
      const m = customerOf(p.marketplace)!
      const own = new Set(linkKeys(c))
      const theirs = linkKeys(m)
      if (theirs.some((k) => own.has(k))) linked++
      // Phone and national id, when the marketplace has them, are the person's own, whatever the spelling.
      for (const k of theirs) {
        const mine = [...own].filter((x) => x.startsWith(`${k.split(':')[0]}:`))
        if (!mine.length) continue
        if (k.startsWith('email:')) emails[mine[0] === k ? 'same' : 'other']++
        else expect(mine).toEqual([k])
      }
      if ((m.email !== c.email || m.phone !== c.phone || m.national_id !== c.national_id) && theirs.some((k) => own.has(k))) respelled++
      for (const f of ['email', 'phone', 'national_id'] as const) if (m[f] === null) missing[f]++
      expect(p.typed!.email?.trim() ?? null).toBe(m.email)
    }
    expect(linked / overlapping.length).toBeGreaterThan(0.9)
    // Another address now and then (4%); else the same one, whatever the capitals and spaces.
    expect(emails.other).toBeGreaterThan(0)
    expect(emails.same / (emails.same + emails.other)).toBeGreaterThan(0.9)
    expect(respelled / overlapping.length).toBeGreaterThan(0.5)
    // Missing fields, as the marketplace leaves them out: the national id most often.
    expect(missing.national_id).toBeGreaterThan(missing.email)
    expect(missing.national_id / overlapping.length).toBeGreaterThan(0.15)
    // Typed with spaces or other capitals, some of them.
    expect(overlapping.some((p) => p.typed!.email !== null && p.typed!.email !== p.typed!.email.trim())).toBe(true)
    expect(overlapping.some((p) => p.typed!.email !== null && p.typed!.email !== p.typed!.email.toLowerCase())).toBe(true)
  })

  it('gives every DNI and phone line to one person; only family e-mails are shared, by different people', () => {
    const personsOf = new Map<string, Set<number>>()
    for (const p of people) {
      for (const events of [p.commerce, p.marketplace]) {
        const c = customerOf(events)
        if (c) for (const k of linkKeys(c)) personsOf.set(k, (personsOf.get(k) ?? new Set()).add(p.personId))
      }
    }
    const shared = [...personsOf].filter(([, ps]) => ps.size > 1)
    expect(shared.length).toBeGreaterThan(0)
    for (const [key, ps] of shared) {
      expect(key).toMatch(/^email:familia\./)
      expect(ps.size).toBeGreaterThanOrEqual(2)
    }
  })

  it('yields events the consumers accept', () => {
    for (const e of sharedPopulationEvents({ ...OPTS, people: 200 })) {
      if (e.topic === 'customers') expect(customerSemanticErrors(e.value as CustomerUpserted)).toEqual([])
      else expect(orderSemanticErrors(e.value as OrderEvent, WINDOW.end.getTime())).toEqual([])
    }
  })
})

describe('cdp generate --overlap', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdp-generate-overlap-'))
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))
  const base = ['--tenant', '5', '--customers', '300', '--seed', 'gen', '--from', '2023-01-01', '--to', '2025-01-01']
  const lines = (file: string) => fs.readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)

  it('writes both sources’ events and the ground truth of every source customer', async () => {
    const out = path.join(dir, 'events.jsonl')
    const truthFile = path.join(dir, 'truth.jsonl')
    expect(await runGenerate([...base, '--overlap', '0.4', '--out', out, '--truth', truthFile])).toBe(0)
    const events = lines(out)
    const truth = lines(truthFile) as unknown as AccountTruth[]
    const customers = events.filter((e) => !('event_type' in e)) as unknown as CustomerUpserted[]
    const orders = events.filter((e) => 'event_type' in e) as unknown as OrderEvent[]
    expect(new Set(customers.map((c) => c.source))).toEqual(new Set(['commerce_platform', 'marketplace']))
    expect(new Set(orders.map((o) => o.source))).toEqual(new Set(['commerce_platform', 'marketplace']))
    // One truth line per source customer, its keys in this order.
    expect(Object.keys(truth[0]!)).toEqual(['customer_id', 'person_id', 'source'])
    expect(truth.map((t) => `${t.source}:${t.customer_id}`).sort()).toEqual(customers.map((c) => `${c.source}:${c.customer_id}`).sort())
    for (const t of truth) expect(t.person_id).toBe(t.source === 'marketplace' ? t.customer_id - MARKETPLACE_ID_OFFSET : t.customer_id)
    expect(truth.filter((t) => t.source === 'commerce_platform')).toHaveLength(300)
    // Orders are under their source's customer: a marketplace order's buyer is a marketplace customer.
    const known = new Set(customers.map((c) => `${c.source}:${c.customer_id}`))
    for (const o of orders) expect(known.has(`${o.source}:${o.customer_id}`)).toBe(true)
    // The same events as the library's, in the same order.
    expect(events).toEqual(JSON.parse(JSON.stringify([...sharedPopulationEvents({ tenantId: 5, people: 300, seed: 'gen', ...WINDOW, overlapShare: 0.4 })].map((e) => e.value))))
  })

  it('without --overlap writes exactly what it always did; --truth alone and a share out of range are usage errors', async () => {
    const out = path.join(dir, 'plain.jsonl')
    expect(await runGenerate([...base, '--out', out])).toBe(0)
    const expected = [...generateEvents({ tenantId: 5, customers: 300, seed: 'gen', ...WINDOW })].map((e) => `${JSON.stringify(e.value)}\n`).join('')
    expect(fs.readFileSync(out, 'utf8')).toBe(expected)
    await expect(runGenerate([...base, '--truth', path.join(dir, 't.jsonl')])).rejects.toThrow(UsageError)
    await expect(runGenerate([...base, '--overlap', '1.5'])).rejects.toThrow(/--overlap/)
  })
})
