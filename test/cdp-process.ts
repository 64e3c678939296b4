/**
 * The product process in tests: `cdp <command>` as a child process with its output kept, a free
 * loopback port, and `cdp start` waited for until it answers /health. Children left running are
 * SIGKILLed by killChildren() (call it in afterEach).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import net from 'node:net'
import path from 'node:path'
import { waitFor } from './helpers.ts'

const ROOT = path.resolve(import.meta.dirname, '..')
const CDP = path.join(ROOT, 'bin/cdp.mjs')

/** A child process with its output kept. */
export class Child {
  out = ''
  err = ''
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  exit: { code: number | null; signal: NodeJS.Signals | null } | null = null

  constructor(
    readonly name: string,
    readonly proc: ChildProcess,
  ) {
    proc.stdout!.on('data', (d: Buffer) => (this.out += d.toString()))
    proc.stderr!.on('data', (d: Buffer) => (this.err += d.toString()))
    this.exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve((this.exit = { code, signal }))))
    children.add(this)
    void this.exited.then(() => children.delete(this))
  }

  async waitExit(timeoutMs: number) {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${this.name} did not exit within ${timeoutMs} ms:\n${this.log()}`)), timeoutMs)
    })
    try {
      return await Promise.race([this.exited, timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  log(): string {
    return `--- ${this.name} stdout\n${this.out.slice(-5000)}\n--- ${this.name} stderr\n${this.err.slice(-5000)}`
  }
}

const children = new Set<Child>()

/** SIGKILLs every child still running (tests call it in afterEach). */
export async function killChildren(): Promise<void> {
  for (const c of [...children]) {
    c.proc.kill('SIGKILL')
    await c.waitExit(10_000).catch(() => {})
  }
}

export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, ...env }
  // Knobs of the surrounding environment must not leak into the children's config.
  for (const k of ['CDP_ROLES', 'CDP_PARTITIONS', 'CDP_BATCH_SIZE', 'CDP_DEMO', 'CDP_ADMIN_TOKEN', 'CDP_API_HOST', 'NODE_OPTIONS', 'KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL']) {
    if (!(k in env)) delete e[k]
  }
  if (!env.CLICKHOUSE_URL) delete e.CLICKHOUSE_URL
  return e
}

export function cdp(name: string, args: string[], env: Record<string, string>): Child {
  return new Child(name, spawn(process.execPath, [CDP, ...args], { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] }))
}

export async function freePort(): Promise<number> {
  const s = net.createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as net.AddressInfo).port
  await new Promise<void>((r) => s.close(() => r()))
  return port
}

export async function startServer(name: string, env: Record<string, string>, url: string, roles = 'api,features'): Promise<Child> {
  const server = cdp(name, ['start', '--roles', roles], env)
  if (roles.includes('api')) {
    await waitFor(
      async () => {
        if (server.exit) throw new Error(`${name} exited: ${JSON.stringify(server.exit)}\n${server.log()}`)
        return (await fetch(`${url}/health`)).status === 200
      },
      { what: `${name} to answer /health`, timeoutMs: 120_000, intervalMs: 100 },
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${server.log()}`)
    })
  }
  return server
}

