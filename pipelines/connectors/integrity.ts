/**
 * Integrity of what a connector read, before anything is published. Pure. The same semantic
 * checks the consumers run (pipelines/ingest/validation.ts), so nothing a sync publishes ends up
 * dead-lettered: a customer's unusable e-mail or country is dropped (the rest of the profile is
 * worth keeping); an order that fails is not published and is reported.
 */
import type { CustomerUpserted } from '../../common/events.ts'
import { customerSemanticErrors, orderSemanticErrors } from '../ingest/index.ts'
import type { MappedOrder } from './sources/mapping.ts'
import type { JobStats } from './queue.ts'

/** Fields of a profile that are dropped, not fatal, when invalid. */
const DROPPABLE = new Set(['email', 'country'])

export function sanitizeCustomer(e: CustomerUpserted): { ok: true; event: CustomerUpserted } | { ok: false; reason: string } {
  let errors = customerSemanticErrors(e)
  if (errors.length && errors.every((x) => DROPPABLE.has(x.path))) {
    const fixed = { ...e }
    for (const x of errors) (fixed as unknown as Record<string, unknown>)[x.path] = null
    e = fixed
    errors = customerSemanticErrors(e)
  }
  return errors.length ? { ok: false, reason: errors.map((x) => `${x.path}: ${x.message}`).join('; ') } : { ok: true, event: e }
}

/** Why the order cannot be published, or null. */
export function orderProblem(o: MappedOrder, now: number): string | null {
  for (const e of o.events) {
    const errors = orderSemanticErrors(e, now)
    if (errors.length) return `${e.event_type}: ${errors.map((x) => `${x.path}: ${x.message}`).join('; ')}`
  }
  return null
}

const SAMPLES = 10

/** Adds a sample (up to ten per kind): the ids a person needs to look the records up at the platform. */
export function sample<K extends keyof JobStats['integrity']['samples']>(stats: JobStats, kind: K, value: JobStats['integrity']['samples'][K][number]): void {
  const list = stats.integrity.samples[kind] as unknown[]
  if (list.length < SAMPLES) list.push(value)
}
