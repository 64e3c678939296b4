import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { dlq, ok, RedeliverError, type StepResult } from '../../common/runtime/pipeline.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { RegistryUnavailableError, SchemaMismatchError, UndecodableRecordError } from '../../common/eventlog/wire-format.ts'
import type { LogRecord } from '../../common/eventlog/port.ts'
import type { TenantCurrencies } from '../../common/store/tenant-settings.ts'
import { customerSemanticErrors, orderSemanticErrors, type FieldError } from '../../common/event-rules.ts'

/** An event of the input topics, decoded and checked: what every consumer of them works on. */
export type InputEvent = { kind: 'order'; event: OrderEvent } | { kind: 'customer'; event: CustomerUpserted }

/**
 * Decodes a record of our topics, turning poison into a dead-letter result. Synchronous when the
 * record's schema is known here (EventCodec.decodeSoon): a promise only on the first record of a
 * schema.
 */
export function decodeRecord<T>(record: LogRecord, codec: EventCodec): StepResult<T> | Promise<StepResult<T>> {
  try {
    const v = codec.decodeSoon<T>(record.topic, record.value)
    return v instanceof Promise ? v.then(ok, poison) : ok(v)
  } catch (err) {
    return poison(err)
  }
}

function poison(err: unknown): StepResult<never> {
  // The registry is down or slow: the batch comes again (after the runner's pause) rather than valid records going aside.
  if (err instanceof RegistryUnavailableError) throw new RedeliverError(err.message)
  if (err instanceof UndecodableRecordError) return dlq('decode', 'undecodable', err.message)
  if (err instanceof SchemaMismatchError) return dlq('decode', 'schema_invalid', err.message)
  throw err
}

const invalid = (errors: FieldError[], tenantId: number) => dlq('validate', errors[0]!.code, errors.map((e) => `${e.path}: ${e.message}`).join('; '), tenantId)

/**
 * A record of the orders or customers topic as an InputEvent; undecodable records and
 * semantically invalid events (a negative total, an email that is not one) become dead letters.
 * Synchronous when the schema and the tenant's currency are known here (the usual case), so a
 * consumer's loop awaits nothing per record.
 */
export function decodeInputEvent(record: LogRecord, codec: EventCodec, nowMs: number, currencies?: TenantCurrencies): StepResult<InputEvent> | Promise<StepResult<InputEvent>> {
  const r = decodeRecord<OrderEvent | CustomerUpserted>(record, codec)
  return r instanceof Promise ? r.then((d) => checkInputEvent(record.topic, d, nowMs, currencies)) : checkInputEvent(record.topic, r, nowMs, currencies)
}

function checkInputEvent(topic: string, r: StepResult<OrderEvent | CustomerUpserted>, nowMs: number, currencies?: TenantCurrencies): StepResult<InputEvent> | Promise<StepResult<InputEvent>> {
  if (r.kind !== 'ok') return r
  if (topic === TOPICS.orders.name) {
    const event = r.value as OrderEvent
    const errors = orderSemanticErrors(event, nowMs)
    if (errors.length) return invalid(errors, event.tenant_id)
    // Money of one tenant is in one currency: another is never summed with it.
    const held = currencies ? currencies.settled(event.tenant_id) ?? currencies.of(event.tenant_id, event.currency) : event.currency
    // A tenant's currency that cannot be read now (the store is down) fails the batch, to come again.
    return typeof held === 'string'
      ? currencyChecked(event, held)
      : held.then(
          (h) => currencyChecked(event, h),
          (err: Error) => {
            throw new RedeliverError(`the currency of tenant ${event.tenant_id} could not be read: ${err.message}`)
          },
        )
  }
  const event = r.value as CustomerUpserted
  const errors = customerSemanticErrors(event)
  return errors.length ? invalid(errors, event.tenant_id) : ok({ kind: 'customer', event })
}

function currencyChecked(event: OrderEvent, held: string): StepResult<InputEvent> {
  if (held !== event.currency) {
    return invalid([{ path: 'currency', code: 'currency_mismatch', message: `${event.currency} is not the tenant's currency ${held}` }], event.tenant_id)
  }
  return ok({ kind: 'order', event })
}
