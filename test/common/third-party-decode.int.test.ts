/**
 * Acceptance: a third-party Kafka client (confluent-kafka-python with the registry) decodes our
 * topics. test/third-party/decode.py reads them with confluent_kafka.Consumer and AvroDeserializer
 * against the suite's real broker and registry.
 *
 * Python comes from the venv at .venv (CI's .ci/run creates it:
 *   python3 -m venv .venv && .venv/bin/pip install "confluent-kafka[avro,schemaregistry]").
 * Without it the test fails on CI and is skipped, with a message, elsewhere.
 */
import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { openEventLog } from '../../common/runtime/context.ts'
import { EventCodec } from '../../common/eventlog/codec.ts'
import { TOPICS } from '../../common/topics.ts'
import { publishEvents } from '../../pipelines/ingest/publisher.ts'
import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { kafkaBrokers, registryUrl, silentLogger, testConfig } from '../helpers.ts'

const ROOT = path.resolve(import.meta.dirname, '../..')
const PYTHON = path.join(ROOT, '.venv', 'bin', 'python')
const SCRIPT = path.join(ROOT, 'test', 'third-party', 'decode.py')
const VENV_HELP = `python3 -m venv .venv && .venv/bin/pip install "confluent-kafka[avro,schemaregistry]"`
const hasPython = fs.existsSync(PYTHON)
const onCi = !['', '0', 'false'].includes((process.env.CI ?? '').toLowerCase())

if (!hasPython && !onCi) {
  console.warn(`[third-party-decode] skipped: ${PYTHON} is missing. Create it with: ${VENV_HELP}`)
}

interface Decoded {
  topic: string
  partition: number
  offset: number
  key: string
  schema_id: number | null
  value: Record<string, unknown>
}

function decode(topic: string, tenant: number, expectN: number, start: { partition: number; offset: string }[]): Promise<Decoded[]> {
  // Reading from the offsets taken before publishing keeps the reader off other files' backlog
  // and off group coordination (assign, not subscribe).
  const from = start.map((s) => `${s.partition}:${s.offset}`).join(',')
  const args = [SCRIPT, '--brokers', kafkaBrokers().join(','), '--registry', registryUrl(), '--topic', topic, '--tenant', String(tenant), '--expect', String(expectN), '--timeout', '60', '--start', from]
  return new Promise((resolve, reject) => {
    execFile(PYTHON, args, { cwd: ROOT, timeout: 120_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`decode.py --topic ${topic} failed (${err.code ?? err.signal ?? err.message}):\n${stderr}\n${stdout}`))
        return
      }
      resolve(stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Decoded))
    })
  })
}

const iso = (ms: number) => new Date(ms).toISOString()

describe('a third-party client decodes our topics', () => {
  it.skipIf(!hasPython && !onCi)('confluent-kafka-python with the schema registry reads orders and customers', { timeout: 180_000 }, async () => {
    if (!hasPython) {
      throw new Error(`CI is set but ${PYTHON} is missing: the third-party decode acceptance test cannot run. .ci/run must create it: ${VENV_HELP}`)
    }
    const tenant = 50_000_000 + Math.floor(Math.random() * 1e9)
    const T0 = Date.UTC(2025, 2, 14, 12, 30, 45, 123)
    const orders: OrderEvent[] = [
      {
        event_id: randomUUID(), tenant_id: tenant, occurred_at: T0, source: 'test', event_type: 'placed', order_id: `o-${tenant}-1`,
        customer_id: 1, status: 'paid', total: '123.45', currency: 'ARS', refunded_amount: null,
        items: [
          { sku: 'MATE-01', name: 'Mate de calabaza', quantity: 2, unit_price: '50.00' },
          { sku: 'YERBA-1K', name: null, quantity: 1, unit_price: '23.45' },
        ],
        placed_at: T0,
      },
      {
        event_id: randomUUID(), tenant_id: tenant, occurred_at: T0 + 1, source: 'test', event_type: 'refunded', order_id: `o-${tenant}-1`,
        customer_id: 1, status: 'refunded', total: '100.00', currency: 'ARS', refunded_amount: '23.45', items: [], placed_at: T0,
      },
      {
        event_id: randomUUID(), tenant_id: tenant, occurred_at: T0 + 60_000, source: 'test', event_type: 'placed', order_id: `o-${tenant}-2`,
        customer_id: 2, status: 'paid', total: '9999999999999.99', currency: 'ARS', refunded_amount: null,
        items: [{ sku: 'TV-65', name: 'Televisor 65"', quantity: 1, unit_price: '9999999999999.99' }],
        placed_at: T0 + 60_000,
      },
      {
        event_id: randomUUID(), tenant_id: tenant, occurred_at: T0 + 120_000, source: 'test', event_type: 'cancelled', order_id: `o-${tenant}-3`,
        customer_id: 3, status: 'cancelled', total: '0.00', currency: 'ARS', refunded_amount: null, items: [], placed_at: T0 + 90_000,
      },
    ]
    const customers: CustomerUpserted[] = [
      {
        event_id: randomUUID(), tenant_id: tenant, occurred_at: T0, source: 'test', customer_id: 1, email: 'ana@example.com',
        first_name: 'Ana', last_name: 'Pérez', phone: '+54 9 11 4123-4567', national_id: '30123456', street: 'Av. Corrientes 1234',
        city: 'Buenos Aires', province: 'CABA', postal_code: 'C1043', country: 'AR', registration_source: 'web', created_at: T0 - 86_400_000,
        source_ids: [{ source: 'test', id: 'x1' }, { source: 'marketplace', id: 'ML-99' }],
      },
      {
        event_id: randomUUID(), tenant_id: tenant, occurred_at: T0 + 5, source: 'test', customer_id: 2, email: null,
        first_name: null, last_name: null, phone: null, national_id: null, street: null, city: null, province: null,
        postal_code: null, country: null, registration_source: null, created_at: null, source_ids: [],
      },
    ]

    // Published through the log and the codec (no chdb in this process).
    const config = testConfig('distributed')
    const { log, codec: opened } = await openEventLog(config, silentLogger)
    let codec: EventCodec
    let startOrders: { partition: number; offset: string }[] = []
    let startCustomers: { partition: number; offset: string }[] = []
    try {
      codec = opened
      startOrders = await log.endOffsets(TOPICS.orders.name)
      startCustomers = await log.endOffsets(TOPICS.customers.name)
      await publishEvents(log, codec, 'customers', customers)
      await publishEvents(log, codec, 'orders', orders)
    } finally {
      await log.close()
    }

    const [gotOrders, gotCustomers] = await Promise.all([
      decode(TOPICS.orders.name, tenant, orders.length, startOrders),
      decode(TOPICS.customers.name, tenant, customers.length, startCustomers),
    ])

    // Orders: one customer's events stay in order in one partition; compare by event id.
    expect(gotOrders).toHaveLength(orders.length)
    const byId = new Map(gotOrders.map((d) => [d.value.event_id as string, d]))
    for (const sent of orders) {
      const d = byId.get(sent.event_id)
      expect(d, `order event ${sent.event_id} decoded`).toBeDefined()
      expect(d!.topic).toBe(TOPICS.orders.name)
      expect(d!.key).toBe(`${tenant}:${sent.customer_id}`)
      expect(d!.schema_id).toBe(codec.schemaId(TOPICS.orders.name))
      expect(d!.value).toEqual({
        event_id: sent.event_id,
        tenant_id: tenant,
        occurred_at: iso(sent.occurred_at),
        source: 'test',
        event_type: sent.event_type,
        order_id: sent.order_id,
        customer_id: sent.customer_id,
        status: sent.status,
        total: sent.total,
        currency: 'ARS',
        refunded_amount: sent.refunded_amount,
        items: sent.items,
        placed_at: iso(sent.placed_at),
      })
    }
    const first = byId.get(orders[0]!.event_id)!
    expect(first.value.total).toBe('123.45')
    expect(first.value.items).toEqual([
      { sku: 'MATE-01', name: 'Mate de calabaza', quantity: 2, unit_price: '50.00' },
      { sku: 'YERBA-1K', name: null, quantity: 1, unit_price: '23.45' },
    ])
    // Same key, same partition, in the order sent.
    const c1 = gotOrders.filter((d) => d.key === `${tenant}:1`)
    expect(new Set(c1.map((d) => d.partition)).size).toBe(1)
    expect(c1.map((d) => d.value.event_type)).toEqual(['placed', 'refunded'])

    // Customers: nullable fields, arrays of records, a nullable timestamp.
    expect(gotCustomers).toHaveLength(customers.length)
    for (const sent of customers) {
      const d = gotCustomers.find((x) => x.value.event_id === sent.event_id)
      expect(d, `customer event ${sent.event_id} decoded`).toBeDefined()
      expect(d!.key).toBe(`${tenant}:${sent.customer_id}`)
      expect(d!.schema_id).toBe(codec.schemaId(TOPICS.customers.name))
      expect(d!.value).toEqual({
        ...sent,
        occurred_at: iso(sent.occurred_at),
        created_at: sent.created_at === null ? null : iso(sent.created_at),
      })
    }
  })
})
