import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import { dlq, ok, type StepResult } from '../../common/runtime/pipeline.ts'
import { SchemaMismatchError, type EventCodec } from '../../common/eventlog/codec.ts'
import { UndecodableRecordError } from '../../common/eventlog/schema-registry.ts'
import type { LogRecord } from '../../common/eventlog/port.ts'
import type { TenantCurrencies } from '../../common/store/tenant-settings.ts'
import { customerSemanticErrors, orderSemanticErrors, type FieldError } from './validation.ts'

/** An event of the input topics, decoded and checked: what every consumer of them works on. */
export type InputEvent = { kind: 'order'; event: OrderEvent } | { kind: 'customer'; event: CustomerUpserted }

/** Decodes a record of our topics, turning poison into a dead-letter result. */
export async function decodeRecord<T>(record: LogRecord, codec: EventCodec): Promise<StepResult<T>> {
  try {
    return ok(await codec.decode<T>(record.topic, record.value))
  } catch (err) {
    if (err instanceof UndecodableRecordError) return dlq('decode', 'undecodable', err.message)
    if (err instanceof SchemaMismatchError) return dlq('decode', 'schema_invalid', err.message)
    throw err
  }
}

const invalid = (errors: FieldError[], tenantId: number) => dlq('validate', errors[0]!.code, errors.map((e) => `${e.path}: ${e.message}`).join('; '), tenantId)

/**
 * A record of the orders or customers topic as an InputEvent; undecodable records and
 * semantically invalid events (a negative total, an email that is not one) become dead letters.
 */
export async function decodeInputEvent(record: LogRecord, codec: EventCodec, nowMs: number, currencies?: TenantCurrencies): Promise<StepResult<InputEvent>> {
  if (record.topic === TOPICS.orders.name) {
    const r = await decodeRecord<OrderEvent>(record, codec)
    if (r.kind !== 'ok') return r
    const errors = orderSemanticErrors(r.value, nowMs)
    if (errors.length) return invalid(errors, r.value.tenant_id)
    // Money of one tenant is in one currency: another is never summed with it.
    const held = currencies ? await currencies.of(r.value.tenant_id, r.value.currency) : r.value.currency
    if (held !== r.value.currency) {
      return invalid([{ path: 'currency', code: 'currency_mismatch', message: `${r.value.currency} is not the tenant's currency ${held}` }], r.value.tenant_id)
    }
    return ok({ kind: 'order', event: r.value })
  }
  const r = await decodeRecord<CustomerUpserted>(record, codec)
  if (r.kind !== 'ok') return r
  const errors = customerSemanticErrors(r.value)
  return errors.length ? invalid(errors, r.value.tenant_id) : ok({ kind: 'customer', event: r.value })
}
