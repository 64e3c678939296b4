import { DecodeThread } from '../../common/runtime/decode-thread.ts'
import type { OrderRowsReply, OrderRowsSetup } from './order-rows-worker.ts'

export type { OrderRowsReply, OrderRowsSetup }

/**
 * The projection's decode thread (common/runtime/decode-thread.ts): decodes order records, checks
 * them and encodes their rows (order-rows-worker.ts) while the main thread reads the log and
 * writes to the store.
 */
export class OrderRowsThread extends DecodeThread<OrderRowsSetup, OrderRowsReply> {
  constructor() {
    super(new URL('./order-rows-worker.mjs', import.meta.url), 'order rows')
  }
}
