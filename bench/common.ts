import os from 'node:os'
import { parse, UsageError } from '../cli/args.ts'

/** Shared by the benchmark scripts: progress lines, flag parsing, rounding, percentiles. */

const T_START = performance.now()

/** A progress line on stderr, stamped with the seconds since the benchmark started. */
export function progress(msg: string): void {
  const t = ((performance.now() - T_START) / 1000).toFixed(1).padStart(6)
  process.stderr.write(`[bench ${t}s] ${msg}\n`)
}

export function intFlag(v: string | undefined, name: string, def: number, min = 1): number {
  if (v === undefined) return def
  const n = Number(v.replace(/[_,]/g, ''))
  if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`--${name} must be an integer >= ${min}, got '${v}'`)
  return n
}

/** Three significant figures: rates measured by polling are not better than that. */
export function sig3(x: number): number {
  if (!Number.isFinite(x) || x === 0) return x
  return Number(x.toPrecision(3))
}

/** Nearest-rank percentile of an ascending array (NaN when empty). */
export function percentile(sorted: readonly number[], p: number): number {
  if (!sorted.length) return NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

/** A benchmark's flags: `--help` prints the help (null returned: exit 0); positional arguments are refused. */
export function benchFlags<F extends Parameters<typeof parse>[1]>(argv: string[], flags: F, help: string): ReturnType<typeof parse<F>>['values'] | null {
  const { values, positionals } = parse(argv, flags)
  if ((values as { help?: boolean }).help) {
    process.stdout.write(help)
    return null
  }
  if (positionals.length) throw new UsageError(`unexpected arguments '${positionals.join(' ')}'\n\n${help}`)
  return values
}

/** What the figures were measured on. */
export function machineInfo(): { cpus: number; cpu_model: string; node: string; platform: string } {
  return { cpus: os.cpus().length, cpu_model: os.cpus()[0]?.model?.trim() ?? 'unknown', node: process.version, platform: `${process.platform}-${process.arch}` }
}

/** 1-, 5- and 15-minute load averages, two decimals: other work on the machine skews the figures. */
export function loadAverages(): number[] {
  return os.loadavg().map((x) => Math.round(x * 100) / 100)
}

/** Says on stderr when the machine is busy enough to lower the figures. */
export function noteLoad(load: number[], cpus: number): void {
  if ((load[0] ?? 0) > cpus * 0.5) progress(`note: 1-minute load average is ${load[0]} on ${cpus} cpus; figures will be lower than on a quiet machine`)
}
