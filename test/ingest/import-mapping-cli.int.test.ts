/**
 * `cdp import` as a child process, without anything running: the help text, a shop export through
 * --columns and --currency, usage errors (the mapping and the import loop: test/ingest/import-mapping.test.ts).
 */
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { CUSTOMER_INPUT_FIELDS, ORDER_INPUT_FIELDS, ORDER_ITEM_FIELDS } from '../../pipelines/ingest/validation.ts'
import { ORDER_EVENT_TYPES } from '../../common/events.ts'
import { importHelp, run as runImport } from '../../cli/commands/import.ts'
import { UsageError } from '../../cli/args.ts'
import { tmpDir } from '../helpers.ts'

const CDP = path.resolve(import.meta.dirname, '../../bin/cdp.mjs')
const run = promisify(execFile)

function cdp(args: string[], env: Record<string, string> = {}) {
  return run('node', [CDP, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, maxBuffer: 64 << 20, timeout: 120_000 })
}

/** Exit code, stdout and stderr of a command that may fail. */
async function cdpResult(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await cdp(args, env)
    return { code: 0, stdout: r.stdout, stderr: r.stderr }
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string }
    return { code: err.code, stdout: err.stdout, stderr: err.stderr }
  }
}

const UCI_MAP = 'order_id=InvoiceNo,occurred_at=InvoiceDate,customer_id=CustomerID,total=TotalPrice'

describe('cdp import (command)', () => {
  it('--help lists the accepted columns of each kind, the item fields and the event types', async () => {
    const { stdout } = await cdp(['import', '--help'])
    expect(stdout).toBe(importHelp())
    const flat = stdout.replace(/,\n\s+/g, ', ')
    expect(flat).toContain(`orders:\n    ${ORDER_INPUT_FIELDS.join(', ')}\n`)
    expect(flat).toContain(`customers:\n    ${CUSTOMER_INPUT_FIELDS.join(', ')}\n`)
    expect(flat).toContain(`    ${ORDER_ITEM_FIELDS.join(', ')}\n`)
    expect(stdout).toContain(`event_type: ${ORDER_EVENT_TYPES.join(', ')}`)
    for (const flag of ['--columns', '--currency', '--skip', '--retry-for', '--batch-size']) expect(stdout).toContain(flag)
  })

  it('imports a shop export through --columns and --currency, warning once about unknown columns', async () => {
    const dir = tmpDir()
    const csv = path.join(dir, 'invoices.csv')
    const rows = Array.from({ length: 30 }, (_, i) => `${536365 + i},2010-12-0${1 + (i % 9)},${17850 + (i % 4)},${(i + 1) * 1.1},United Kingdom,x`)
    fs.writeFileSync(csv, ['InvoiceNo,InvoiceDate,CustomerID,TotalPrice,Country,Notes', ...rows, '536999,2010-12-01,17850', ''].join('\n'))
    const rejectsFile = path.join(dir, 'elsewhere.jsonl')
    const res = await cdpResult(['import', csv, '--tenant', '7', '--kind', 'orders', '--columns', UCI_MAP, '--currency', 'gbp', '--batch-size', '7', '--rejects', rejectsFile], {
      CDP_DATA_DIR: path.join(dir, 'data'),
    })
    expect(res.code, res.stderr).toBe(0)
    const warnings = res.stderr.split('\n').filter((l) => l.includes('warning'))
    expect(warnings).toEqual(['cdp import: warning: ignoring columns that are neither one of our fields nor mapped with --columns: Country, Notes (cdp import --help lists the fields)'])
    // (i + 1) * 1.1 has float noise for some i (3.3000000000000003): those may be rejected or normalised; the short row is rejected.
    const summary = JSON.parse(res.stdout)
    expect(summary).toMatchObject({ tenant_id: 7, customers: 0, skipped: 0, status: 'done' })
    expect(summary.accepted + summary.rejected).toBe(31)
    expect(summary.acknowledged).toBe(summary.accepted)
    expect(summary.orders).toBe(summary.accepted)
    expect(summary.rejects_file).toBe(rejectsFile)
    expect(fs.existsSync(`${csv}.rejects.jsonl`)).toBe(false)
    const rejects = fs.readFileSync(rejectsFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    expect(rejects).toContainEqual({ line: 32, raw: '536999,2010-12-01,17850', errors: [{ path: '', code: 'wrong_field_count', message: 'row has 3 fields, header has 6' }] })
    for (const r of rejects) expect(r.raw).toBe(fs.readFileSync(csv, 'utf8').split('\n')[r.line - 1])
  })

  it('usage errors: an unknown field of ours, a mapped column the file lacks, a bad currency', async () => {
    const dir = tmpDir()
    const csv = path.join(dir, 'o.csv')
    fs.writeFileSync(csv, 'InvoiceNo,InvoiceDate\n1,2024-01-01\n')
    const jsonl = path.join(dir, 'o.jsonl')
    fs.writeFileSync(jsonl, '{"InvoiceNo":"1"}\n')
    const env = { CDP_DATA_DIR: path.join(dir, 'data') }

    let r = await cdpResult(['import', csv, '--tenant', '1', '--kind', 'orders', '--columns', 'invoice=InvoiceNo'], env)
    expect(r.code).toBe(2)
    expect(r.stderr).toContain(`cdp: --columns: "invoice" is not one of our fields; accepted for --kind orders: ${ORDER_INPUT_FIELDS.join(', ')}`)

    r = await cdpResult(['import', csv, '--tenant', '1', '--columns', 'order_id=invoiceno,occurred_at=Fecha'], env)
    expect(r.code).toBe(2)
    expect(r.stderr).toContain(`--columns names columns not in the header of ${csv}: "invoiceno" (did you mean "InvoiceNo"?), "Fecha"; it has: InvoiceNo, InvoiceDate`)

    // The rest in process (usage errors are thrown before anything is opened).
    const usage = (args: string[]) => expect(runImport(args)).rejects.toBeInstanceOf(UsageError)
    await expect(runImport([jsonl, '--tenant', '1', '--columns', 'order_id=Invoice'])).rejects.toThrow('--columns names a column not in the keys of the first 1,000 records')
    await expect(runImport([csv, '--tenant', '1', '--currency', 'POUND'])).rejects.toThrow('--currency must be a 3-letter ISO 4217 code')
    await usage([csv, '--tenant', '1', '--kind', 'customers', '--currency', 'GBP'])
    for (const bad of [['--skip', '-1'], ['--skip', '1.5'], ['--batch-size', '0'], ['--batch-size', '5001'], ['--retry-for', 'soon'], ['--retry-for', '-1']]) {
      await usage([csv, '--tenant', '1', ...bad])
    }
    // Nothing was published or written by a usage error.
    expect(fs.existsSync(`${csv}.rejects.jsonl`)).toBe(false)
  })
})
