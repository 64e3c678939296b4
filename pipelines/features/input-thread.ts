import { DecodeThread } from '../../common/runtime/decode-thread.ts'
import type { InputsReply, InputsSetup } from './inputs-reply.ts'

export type { InputsReply, InputsSetup }
export { CUSTOMER, LEFT, ORDER, replyText, STRIDE } from './inputs-reply.ts'

/**
 * The feature consumer's decode thread (common/runtime/decode-thread.ts): decodes order and
 * customer records and checks them (input-worker.ts) while the main thread folds and writes.
 */
export class InputsThread extends DecodeThread<InputsSetup, InputsReply> {
  constructor() {
    super(new URL('./input-worker.mjs', import.meta.url), 'feature inputs')
  }
}
