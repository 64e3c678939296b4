import type avsc from 'avsc'
import { emailIssue, MAX_TIMESTAMP, MIN_TIMESTAMP } from './event-rules.ts'
import { AvroCursor, isLong, isString, nullableIndex, planOf, type Typed } from './avro-cursor.ts'

/**
 * A customer record read straight from its Avro bytes for the feature consumer's decode thread,
 * which needs only its ids, time and email: the other strings (names, address, phone, ids) are
 * skipped, where avsc's decode made each of them a JS string.
 *
 * A fast path, never the judge, as order-event-reader.ts: a record it does not take (`read`
 * returns false) is decoded by avsc and checked by customerSemanticErrors. It takes one only when
 * that way would accept it with the same fields: a writer schema of exactly the contract's fields
 * (any order, ints for longs, either union order), every customer rule holding (the header's
 * required strings starting with a printable ASCII character, positive ids, times within the
 * rules' range, the email by emailIssue itself, a country of two capital letters, source ids
 * non-blank the same quick way), and nothing after the record's last field. Strings it only skips
 * need no check: avsc reads any bytes of them.
 */

// The customer record's fields, as plan codes.
const EVENT_ID = 0
const TENANT_ID = 1
const OCCURRED_AT = 2
const SOURCE = 3
const CUSTOMER_ID = 4
const EMAIL = 5
const COUNTRY = 6
const CREATED_AT = 7
const SOURCE_IDS = 8
/** Nullable strings no rule reads. */
const FREE = 9
const FIELDS = ['event_id', 'tenant_id', 'occurred_at', 'source', 'customer_id', 'email', 'country', 'created_at', 'source_ids']
const FREE_FIELDS = ['first_name', 'last_name', 'phone', 'national_id', 'street', 'city', 'province', 'postal_code', 'registration_source']
const ALL = [...FIELDS, ...FREE_FIELDS]

/** The reader of a writer schema's customer records, or null when the schema is not the contract's shape or its record is not `expected`. */
export function customerEventReader(type: avsc.Type, expected: string): CustomerEventReader | null {
  const t = type as Typed
  if (t.typeName !== 'record' || t.name !== expected) return null
  // By plan code (FREE for each free field): the union's null branch, -1 for a field that is no union.
  const nulls: number[] = []
  const plan = planOf(t, ALL, (code, f) => {
    switch (code) {
      case EVENT_ID:
      case SOURCE:
        return isString(f)
      case TENANT_ID:
      case OCCURRED_AT:
      case CUSTOMER_ID:
        return isLong(f)
      case CREATED_AT:
        return (nulls[code] = nullableIndex(f, isLong)) >= 0
      case SOURCE_IDS:
        // Source ids of two required strings, in either order.
        return f.typeName === 'array' && !!f.itemsType && planOf(f.itemsType as Typed, ['source', 'id'], (_, it) => isString(it)) !== null
      default: // email, country and the free strings
        return (nulls[code] = nullableIndex(f, isString)) >= 0
    }
  })
  if (!plan) return null
  const codes = Uint8Array.from(plan, (c) => Math.min(c, FREE))
  const branches = Int8Array.from(plan, (c) => nulls[c] ?? -1)
  return new CustomerEventReader(codes, branches)
}

export class CustomerEventReader extends AvroCursor {
  tenant = 0
  customer = 0
  occurredAt = 0
  /** The email as avsc reads it; '' when none. */
  email = ''

  constructor(
    private readonly plan: Uint8Array,
    private readonly nullBranch: Int8Array,
  ) {
    super()
  }

  /** Reads the record framed in buf[start, end): true when every customer rule holds (its fields then set), false when the general way must judge it. */
  read(buf: Uint8Array, start: number, end: number): boolean {
    return this.begin(buf, start, end) && this.fields() && this.p === end
  }

  private fields(): boolean {
    const { plan, nullBranch } = this
    this.email = ''
    for (let k = 0; k < plan.length; k++) {
      const code = plan[k]!
      switch (code) {
        case EVENT_ID:
        case SOURCE:
          if (!this.readText(true, false)) return false
          break
        case TENANT_ID:
          if (!((this.tenant = this.long()) > 0)) return false
          break
        case CUSTOMER_ID:
          if (!((this.customer = this.long()) > 0)) return false
          break
        case OCCURRED_AT:
          if (!this.time((this.occurredAt = this.long()))) return false
          break
        case CREATED_AT: {
          const branch = this.long()
          if (branch !== nullBranch[k] && (branch !== 1 - nullBranch[k]! || !this.time(this.long()))) return false
          break
        }
        case SOURCE_IDS:
          if (!this.sourceIds()) return false
          break
        default: {
          // email, country, or a free string: null, or a string within the record
          const branch = this.long()
          if (branch === nullBranch[k]) break
          if (branch !== 1 - nullBranch[k]! || !this.readText(false, false)) return false
          if (code === EMAIL) {
            this.email = this.textAt(this.textStart, this.textLen)
            if (emailIssue(this.email)) return false
          } else if (code === COUNTRY && !this.country()) return false
        }
      }
    }
    return true
  }

  private time(ms: number): boolean {
    return ms >= MIN_TIMESTAMP && ms <= MAX_TIMESTAMP
  }

  /** The last text read is two capital letters. */
  private country(): boolean {
    const { b, textStart: s } = this
    return this.textLen === 2 && b[s]! >= 65 && b[s]! <= 90 && b[s + 1]! >= 65 && b[s + 1]! <= 90
  }

  /** Every block of source ids, each with its source and id non-blank by the quick test. */
  private sourceIds(): boolean {
    for (let n = this.blockCount(); n !== 0; n = this.blockCount()) {
      if (Number.isNaN(n)) return false
      for (; n > 0; n--) if (!this.readText(true, false) || !this.readText(true, false)) return false
    }
    return true
  }
}
