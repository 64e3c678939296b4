import { groupLag, type EventLog } from '../eventlog/port.ts'

/** Records a consumer group has still to consume on the topics, summed. */
export async function consumerLag(log: EventLog, group: string, topics: readonly string[]): Promise<number> {
  return (await Promise.all(topics.map((t) => groupLag(log, group, t)))).reduce((a, b) => a + b, 0)
}

/**
 * Polls the group's lag on the topics until it has consumed everything they hold, or `timeoutMs`
 * passed. Answers the lag left: 0 when it caught up; what the caller does with more is its own
 * choice (go on regardless, or fail).
 */
export async function waitForConsumer(
  log: EventLog,
  group: string,
  topics: readonly string[],
  opts: { timeoutMs: number; intervalMs?: number; onProgress?: (remaining: number) => void },
): Promise<number> {
  const deadline = Date.now() + opts.timeoutMs
  for (;;) {
    const remaining = await consumerLag(log, group, topics)
    opts.onProgress?.(remaining)
    if (remaining === 0 || Date.now() >= deadline) return remaining
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 250))
  }
}
