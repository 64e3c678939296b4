/**
 * `cdp bench identity` (npm run bench:identity): identity resolution at scale.
 *
 * 1. From scratch, pure: N source customers of the two-platform population
 *    (pipelines/ingest/synthetic/overlap.ts) normalised and resolved into profiles
 *    (identifiersOf + resolveProfiles), in memory.
 * 2. From scratch, stored: the same customers in the `customers` projection of a fresh chdb, one
 *    resolution of the tenant (resolveTenant: read, resolve, write every profile, publish every
 *    new profile on the embedded log).
 * 3. One merge in the stream: one new customer who bridges two profiles, then the resolution the
 *    features role would run (incremental: the customers written since the last resolution and
 *    what their identifiers reach).
 *
 * Progress on stderr; a table and one JSON line on stdout.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { migrate, openStore } from '../common/store/clickhouse.ts'
import { openEventLog } from '../common/runtime/context.ts'
import { loadConfig } from '../common/config.ts'
import { createLogger } from '../common/logger.ts'
import { markTenantsChanged } from '../common/store/data-changes.ts'
import { identifiersOf, INGEST_OVERLAP_MS, resolveProfiles, resolveTenant } from '../pipelines/identity/index.ts'
import { overlappingAccounts, type SourceAccount } from '../pipelines/ingest/synthetic/overlap.ts'
import { benchFlags, intFlag, loadAverages, machineInfo, noteLoad, progress, sig3 } from './common.ts'

const FLAGS = {
  customers: { type: 'string' },
  seed: { type: 'string' },
  keep: { type: 'boolean' },
} as const

const HELP = `usage: cdp bench identity [--customers N] [--seed S] [--keep]

Identity resolution of N source customers (default 1,000,000) of a generated two-platform shop:
in memory, then stored in a fresh chdb (read, resolve, write, publish), then the cost of one merge
in the stream. --keep leaves the temporary data dir. Progress on stderr; a table and one JSON line
on stdout.
`

const TENANT = 1
const TARGET_SCRATCH_S = 60

export async function run(argv: string[]): Promise<number> {
  const values = benchFlags(argv, FLAGS, HELP)
  if (!values) return 0
  const want = intFlag(values.customers, 'customers', 1_000_000)
  const seed = values.seed ?? 'bench-identity'
  const machine = machineInfo()
  const loadAtStart = loadAverages()
  noteLoad(loadAtStart, machine.cpus)

  // About 1.4 accounts a person: ask for enough people, keep the first N accounts.
  const accounts: SourceAccount[] = []
  let t = performance.now()
  for (const a of overlappingAccounts({ people: Math.ceil(want / 1.35), seed })) {
    accounts.push(a)
    if (accounts.length === want) break
  }
  const generateS = (performance.now() - t) / 1000
  progress(`${accounts.length.toLocaleString('en-US')} source customers generated in ${generateS.toFixed(1)} s`)

  t = performance.now()
  const sources = accounts.map((a) => ({ customerId: a.customerId, firstSeenAt: a.firstSeenAt, identifiers: identifiersOf(a) }))
  const normaliseS = (performance.now() - t) / 1000
  t = performance.now()
  const memory = resolveProfiles(sources)
  const resolveS = (performance.now() - t) / 1000
  progress(`in memory: normalised in ${normaliseS.toFixed(1)} s, resolved into ${memory.profiles.length.toLocaleString('en-US')} profiles in ${resolveS.toFixed(1)} s`)

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdp-bench-identity-'))
  const config = loadConfig({}, { runtime: 'embedded', dataDir: dir, logLevel: 'warn', partitions: 4 })
  // The resolver warns about blocked family e-mails, which this population has on purpose: stdout keeps one JSON line.
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'error' })
  const store = await openStore({ database: 'cdp', chdbPath: path.join(dir, 'chdb') })
  const { log, codec } = await openEventLog(config, logger)
  try {
    await migrate(store, logger)
    t = performance.now()
    for (let i = 0; i < accounts.length; i += 100_000) {
      await store.insert({
        table: 'customers',
        format: 'JSONEachRow',
        values: accounts.slice(i, i + 100_000).map((a) => ({
          tenant_id: TENANT, customer_id: a.customerId, last_event_id: `c${a.customerId}`, email: a.email, phone: a.phone, national_id: a.national_id,
          created_at: new Date(a.firstSeenAt).toISOString(), source_ids: [], source: a.source, updated_at: new Date(a.firstSeenAt).toISOString(), version: 1,
        })),
      })
    }
    await markTenantsChanged(store, [TENANT])
    progress(`stored in ${((performance.now() - t) / 1000).toFixed(1)} s`)
    // A resolution reads again what was written shortly before the last one began (inserts in
    // flight): let that window pass, as it has in a running stream, so the merge below measures
    // the steady state.
    await new Promise((r) => setTimeout(r, INGEST_OVERLAP_MS))
    const deps = { store, log, codec, logger }
    t = performance.now()
    const first = await resolveTenant(deps, TENANT)
    const storedS = (performance.now() - t) / 1000
    progress(`stored resolution: ${first.profiles.toLocaleString('en-US')} profiles, ${first.events.length.toLocaleString('en-US')} events in ${storedS.toFixed(1)} s`)

    // One customer who bridges two single-account profiles: the phone of one, the e-mail of the other.
    const byId = new Map(accounts.map((a) => [a.customerId, a]))
    const singles = memory.profiles.filter((p) => p.members.length === 1).map((p) => byId.get(p.profileId)!)
    // Two people without a national id (two different DNIs would rightly keep them apart).
    const kinds = (a: SourceAccount) => identifiersOf(a).map((i) => i.kind)
    const withPhone = singles.find((a) => kinds(a).includes('phone') && !kinds(a).includes('national_id'))!
    const withEmail = singles.find((a) => a !== withPhone && kinds(a).includes('email') && !kinds(a).includes('national_id') && !memory.blocked.some((b) => b.identifier === `email:${a.email?.trim().toLowerCase()}`))!
    const bridge = { customerId: 3_000_000_000, phone: withPhone.phone, email: withEmail.email }
    await store.insert({
      table: 'customers',
      format: 'JSONEachRow',
      values: [{ tenant_id: TENANT, customer_id: bridge.customerId, last_event_id: 'bridge', email: bridge.email, phone: bridge.phone, national_id: null, created_at: new Date().toISOString(), source_ids: [], source: 'bench', updated_at: new Date().toISOString(), version: 1 }],
    })
    await markTenantsChanged(store, [TENANT])
    t = performance.now()
    const merge = await resolveTenant(deps, TENANT)
    const mergeS = (performance.now() - t) / 1000
    const changes = merge.events.map((e) => e.change).join(', ')
    progress(`one merge (${merge.mode}, ${merge.customers} customers read): ${merge.reassigned} customers reassigned (${changes || 'no change'}) in ${mergeS.toFixed(1)} s`)

    const out = {
      customers: accounts.length,
      profiles: memory.profiles.length,
      blocked_identifiers: memory.blocked.length,
      in_memory: { normalise_s: sig3(normaliseS), resolve_s: sig3(resolveS), customers_per_second: sig3(accounts.length / (normaliseS + resolveS)) },
      stored_from_scratch_s: sig3(storedS),
      one_merge_s: sig3(mergeS),
      one_merge: { mode: merge.mode, customers_read: merge.customers, reassigned: merge.reassigned, events: merge.events.length },
      target_from_scratch_s: TARGET_SCRATCH_S,
      machine,
      loadavg: { start: loadAtStart, end: loadAverages() },
    }
    const pass = (s: number) => (s <= TARGET_SCRATCH_S ? 'pass' : 'FAIL')
    process.stdout.write(
      [
        `identity benchmark: ${accounts.length.toLocaleString('en-US')} source customers -> ${memory.profiles.length.toLocaleString('en-US')} profiles; ${machine.cpus} cpus, node ${machine.node}`,
        `  in memory (normalise + resolve)     ${(normaliseS + resolveS).toFixed(1)} s   (${out.in_memory.customers_per_second.toLocaleString('en-US')} customers/s)`,
        `  stored, from scratch                ${storedS.toFixed(1)} s   (target <= ${TARGET_SCRATCH_S} s: ${pass(storedS)})`,
        `  one merge in the stream             ${mergeS.toFixed(2)} s   (${merge.mode}: ${merge.customers} customers read)`,
        JSON.stringify(out),
      ].join('\n') + '\n',
    )
    return 0
  } finally {
    await log.close()
    await store.close()
    if (!values.keep) fs.rmSync(dir, { recursive: true, force: true })
  }
}
