/**
 * The demographics lane's public surface (docs/architecture.md): what other lanes use of it. The
 * identity lane reads national ids as this lane does (the DNI inside a CUIL/CUIT).
 */
export { parseNationalId, type ParsedNationalId } from './national-id.ts'
