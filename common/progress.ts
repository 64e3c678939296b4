/**
 * Progress reporting for long CLI work (imports, backfills). Writes to stderr only, so a command's
 * stdout stays pipeable. On a TTY it redraws one line at most ~10 times a second; elsewhere (CI
 * logs, redirected stderr) it prints a plain line at most every ~2 seconds plus a final summary,
 * so logs stay short.
 *
 *   import orders.csv [########------------] 42% 42,000/100,000 12,345/s ETA 4s
 */

export interface ProgressOptions {
  /** Expected number of units; without it no bar, percentage or ETA is shown. */
  total?: number
  label: string
  /** Default process.stderr. */
  stream?: NodeJS.WriteStream
  /** Clock in ms, injectable for tests. */
  now?: () => number
}

export interface Progress {
  /** Adds `n` (default 1) units of completed work. */
  tick(n?: number): void
  /** Prints a message on its own line (on a TTY: above the bar, which is redrawn below it). */
  note(message: string): void
  /**
   * Prints the final state; further calls to tick() / done() are ignored. `outcome` names how
   * the work ended ("done" by default, e.g. "stopped" when it failed).
   */
  done(outcome?: string): void
}

const TTY_INTERVAL_MS = 100
const PLAIN_INTERVAL_MS = 2000
const BAR_WIDTH = 20

const fmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })

export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 60) return `${s}s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`
}

/** The status text: "label [####----] 45% 45,000/100,000 12,345/s ETA 4s". */
export function formatProgress(label: string, count: number, total: number | undefined, elapsedMs: number, withBar: boolean): string {
  const rate = elapsedMs > 0 ? (count * 1000) / elapsedMs : 0
  const parts = [label]
  if (total !== undefined && total > 0) {
    const ratio = Math.min(1, count / total)
    if (withBar) {
      const filled = Math.floor(ratio * BAR_WIDTH)
      parts.push(`[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}]`)
    }
    parts.push(`${Math.floor(ratio * 100)}%`, `${fmt.format(count)}/${fmt.format(total)}`, `${fmt.format(rate)}/s`)
    if (rate > 0 && count < total) parts.push(`ETA ${formatDuration(((total - count) / rate) * 1000)}`)
  } else {
    parts.push(fmt.format(count), `${fmt.format(rate)}/s`)
  }
  return parts.join(' ')
}

export function createProgress(opts: ProgressOptions): Progress {
  const stream = opts.stream ?? process.stderr
  const now = opts.now ?? Date.now
  const tty = stream.isTTY === true
  const start = now()
  let count = 0
  let lastDraw = start
  let finished = false

  const line = (withBar: boolean) => formatProgress(opts.label, count, opts.total, now() - start, withBar)
  const drawTty = () => {
    // Truncate to the terminal width: a wrapped line cannot be redrawn with \r.
    const width = stream.columns > 1 ? stream.columns - 1 : Infinity
    stream.write(`\r${line(true).slice(0, width)}\x1b[K`)
  }

  return {
    tick(n = 1) {
      if (finished) return
      count += n
      const t = now()
      if (t - lastDraw < (tty ? TTY_INTERVAL_MS : PLAIN_INTERVAL_MS)) return
      lastDraw = t
      if (tty) drawTty()
      else stream.write(line(false) + '\n')
    },
    note(message) {
      if (tty && !finished) {
        stream.write(`\r\x1b[K${message}\n`)
        drawTty()
      } else {
        stream.write(`${message}\n`)
      }
    },
    done(outcome = 'done') {
      if (finished) return
      finished = true
      const elapsed = now() - start
      if (tty) {
        drawTty()
        stream.write(outcome === 'done' ? '\n' : ` (${outcome})\n`)
      } else {
        const rate = elapsed > 0 ? (count * 1000) / elapsed : 0
        stream.write(`${opts.label} ${outcome}: ${fmt.format(count)} in ${elapsed < 60_000 ? `${(elapsed / 1000).toFixed(1)}s` : formatDuration(elapsed)} (${fmt.format(rate)}/s)\n`)
      }
    },
  }
}
