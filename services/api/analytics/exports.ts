import type { Response } from 'express'
import type { ExportColumn } from './endpoint.ts'

/** Spec "Limits": at most 50,000 rows per export. */
export const EXPORT_ROW_LIMIT = 50_000

export type ExportFormat = 'csv' | 'excel' | 'json'

/** Streams rows as CSV (RFC 4180), xlsx or a JSON array with a download file name. */
export async function sendExport<R>(res: Response, format: ExportFormat, filename: string, columns: ExportColumn<R>[], rows: AsyncIterable<R> | R[]): Promise<void> {
  void res
  void format
  void filename
  void columns
  void rows
  throw new Error('exports are not implemented yet')
}
