import { PassThrough } from 'node:stream'
import ExcelJS from 'exceljs'
import { describe, expect, it } from 'vitest'
import { XlsxWriter } from '../../services/api/analytics/xlsx-writer.ts'
import type { ExportCell } from '../../services/api/analytics/endpoint.ts'

/** The workbook the writer streams for these sheets (rows written with their backpressure), read back by exceljs. */
async function written(sheets: { name: string; headers: string[]; rows: ExportCell[][] }[]): Promise<ExcelJS.Workbook> {
  const out = new PassThrough()
  const chunks: Buffer[] = []
  out.on('data', (c: Buffer) => chunks.push(c))
  const w = new XlsxWriter(out, sheets)
  for (const s of sheets) {
    w.startSheet()
    for (const r of s.rows) await w.row(r)
  }
  await w.end()
  const wb = new ExcelJS.Workbook()
  await wb.xlsx.load(Buffer.concat(chunks) as unknown as ExcelJS.Buffer)
  return wb
}

describe('XlsxWriter', () => {
  it('writes typed cells past column Z, keeps text exactly (markup characters, spaces at the ends) and leaves null and non-finite numbers empty', async () => {
    const headers = Array.from({ length: 30 }, (_, k) => (k === 0 ? 'a & <b> "c"' : `c${k}`))
    const row = (r: number): ExportCell[] => headers.map((_, k) => (k === 0 ? `  José ${r} <&> "q"  ` : k === 1 ? r * 1.25 : k === 2 ? r % 2 === 0 : k === 3 ? null : k === 4 ? Number.NaN : k === 5 ? 'two\nlines' : k === 6 ? `  lead ${r}` : k === 29 ? -r - 0.5 : `v${k}`))
    const rows = Array.from({ length: 3000 }, (_, r) => row(r))
    const wb = await written([{ name: 'Clientes & "VIP"', headers, rows }])
    const ws = wb.worksheets[0]!
    expect(ws.name).toBe('Clientes & "VIP"')
    expect(ws.rowCount).toBe(3001)
    expect((ws.getRow(1).values as unknown[]).slice(1)).toEqual(headers)
    expect(ws.getRow(1).font?.bold).toBe(true)
    expect(ws.getCell('AD1').font?.bold).toBe(true)
    expect(ws.getCell('A2').font?.bold).toBeFalsy()
    expect(ws.views[0]).toMatchObject({ state: 'frozen', ySplit: 1 })
    for (const r of [0, 1, 2999]) {
      const got = ws.getRow(r + 2)
      expect(headers.map((_, k) => got.getCell(k + 1).value ?? null)).toEqual(row(r).map((v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v)))
    }
    expect(ws.getColumn(1).width).toBe(13)
    expect(ws.getColumn(2).width).toBe(10)
  })

  it('writes every sheet in order, one without rows keeping its header', async () => {
    const wb = await written([
      { name: 'first', headers: ['x'], rows: [[1], [2]] },
      { name: 'empty', headers: ['y', 'z'], rows: [] },
      { name: 'last', headers: ['w'], rows: [[true]] },
    ])
    expect(wb.worksheets.map((w) => w.name)).toEqual(['first', 'empty', 'last'])
    expect(wb.worksheets.map((w) => w.rowCount)).toEqual([3, 1, 2])
    expect((wb.worksheets[1]!.getRow(1).values as unknown[]).slice(1)).toEqual(['y', 'z'])
    expect(wb.worksheets[2]!.getCell('A2').value).toBe(true)
  })
})
