/**
 * The ingest lane's public surface (docs/architecture.md): what other lanes and the services use.
 * Decoding and checking a record of the input topics, the semantic rules of an order or a customer,
 * the event id of a re-sent event, and publishing validated events.
 */
export { decodeInputEvent, decodeRecord, type InputEvent } from './input-events.ts'
export { customerSemanticErrors, orderSemanticErrors, deriveEventId, type FieldError } from './validation.ts'
export { publishEvents, type IngestKind } from './publisher.ts'
