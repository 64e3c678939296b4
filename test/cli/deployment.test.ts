import fs from 'node:fs'
import path from 'node:path'
import { builtinModules } from 'node:module'
import { describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { ENV_NAMES, ROLES, loadConfig } from '../../common/config.ts'

/**
 * What can be checked of the deployment files without a Docker engine: docker-compose.yml against
 * our config schema, and the Dockerfile against the repository. Hermetic: reads files, starts nothing.
 */

const ROOT = path.resolve(import.meta.dirname, '../..')
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8')

// ---------------------------------------------------------------- docker-compose.yml

interface ComposeService {
  image?: string
  build?: string | { context?: string; dockerfile?: string }
  command?: string | string[]
  environment?: Record<string, unknown> | string[]
  depends_on?: string[] | Record<string, { condition?: string }>
  healthcheck?: { test?: string | string[]; disable?: boolean }
  ports?: (string | number | { target?: number; published?: string | number })[]
  restart?: string
}

// `merge: true`: the role services share their settings through YAML merge keys (`<<: *anchor`).
const compose = parseYaml(read('docker-compose.yml'), { merge: true }) as { services: Record<string, ComposeService> }
const services = compose.services

/**
 * Variables the operator must set (`${VAR:?message}`: compose refuses to start without them), with
 * the sample values these tests use. Only secrets belong here; everything else has a default.
 */
const OPERATOR_SUPPLIED: Record<string, string> = { CDP_ADMIN_TOKEN: 'sample-admin-token-0123456789', CDP_SECRETS_KEYS: `k1:${'ab'.repeat(32)}` }

/**
 * Compose's variable interpolation, resolved with the file's own defaults only (never this machine's
 * environment): `${VAR:-default}`, `${VAR-default}`, `${VAR}` (empty), `$$` (a literal `$`), and
 * `${VAR:?msg}` from OPERATOR_SUPPLIED (any other required variable is an error).
 */
function interpolate(value: string): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}/g, (match, name: string | undefined, op: string | undefined, arg: string | undefined) => {
    if (match === '$$') return '$'
    if (op?.endsWith('?')) {
      const sample = OPERATOR_SUPPLIED[name!]
      if (sample === undefined) throw new Error(`\${${name}} is required by docker-compose.yml and has no default`)
      return sample
    }
    return op?.endsWith('-') ? (arg ?? '') : ''
  })
}

/** A service's environment as the container sees it (map or list form, values interpolated). */
function environmentOf(service: ComposeService): Record<string, string> {
  const env = service.environment ?? {}
  const entries: [string, unknown][] = Array.isArray(env)
    ? env.map((line) => {
        const i = line.indexOf('=')
        return i < 0 ? [line, ''] : [line.slice(0, i), line.slice(i + 1)]
      })
    : Object.entries(env)
  return Object.fromEntries(entries.map(([k, v]) => [k, v === null || v === undefined ? '' : interpolate(String(v))]))
}

function buildOf(service: ComposeService): { context: string; dockerfile: string } | undefined {
  if (service.build === undefined) return undefined
  if (typeof service.build === 'string') return { context: path.resolve(ROOT, service.build), dockerfile: 'Dockerfile' }
  const context = path.resolve(ROOT, service.build.context ?? '.')
  return { context, dockerfile: path.resolve(context, service.build.dockerfile ?? 'Dockerfile') }
}

const dependsOn = (service: ComposeService): string[] =>
  Array.isArray(service.depends_on) ? service.depends_on : Object.keys(service.depends_on ?? {})

const ALLOWED_ENV = new Set<string>([...Object.values(ENV_NAMES), 'NODE_ENV'])

describe('docker-compose.yml', () => {
  it('has one service per role, all built from the one Dockerfile', () => {
    for (const role of ROLES) expect(services, `service ${role}`).toHaveProperty(role)
    const builds = ROLES.map((role) => buildOf(services[role]!))
    for (const [i, b] of builds.entries()) expect(b, `${ROLES[i]} has a build section`).toBeDefined()
    expect(new Set(builds.map((b) => `${b!.context}|${b!.dockerfile}`)).size).toBe(1)
    const b = builds[0]!
    expect(b.context).toBe(ROOT)
    expect(fs.existsSync(path.resolve(b.context, b.dockerfile)), `${b.dockerfile} exists`).toBe(true)
  })

  it('starts each role with `start` and a restart policy', () => {
    for (const role of ROLES) {
      const s = services[role]!
      const command = typeof s.command === 'string' ? s.command.split(/\s+/) : s.command
      expect(command, `${role} command`).toEqual(['start'])
      expect(s.restart, `${role} restart`).toMatch(/^(always|unless-stopped|on-failure)/)
    }
  })

  it('gives the role services only environment variables our config knows', () => {
    for (const role of ROLES) {
      const unknown = Object.keys(environmentOf(services[role]!)).filter((k) => !ALLOWED_ENV.has(k))
      expect(unknown, `${role}: environment keys not in ENV_NAMES`).toEqual([])
    }
  })

  it('runs each role service as exactly its role, on the distributed runtime', () => {
    for (const role of ROLES) {
      const env = environmentOf(services[role]!)
      expect(env.CDP_ROLES, `${role} CDP_ROLES`).toBe(role)
      expect((ROLES as readonly string[]).includes(env.CDP_ROLES!)).toBe(true)
      expect(env.CDP_RUNTIME, `${role} CDP_RUNTIME`).toBe('distributed')
    }
  })

  it('gives each role an environment that loadConfig accepts', () => {
    for (const role of ROLES) {
      const env = environmentOf(services[role]!)
      const config = loadConfig(env)
      expect(config.runtime).toBe('distributed')
      expect(config.roles).toEqual([role])
      expect(config.kafkaBrokers?.length, `${role} KAFKA_BROKERS`).toBeGreaterThan(0)
      expect(config.schemaRegistryUrl, `${role} SCHEMA_REGISTRY_URL`).toBeDefined()
      expect(config.clickhouseUrl, `${role} CLICKHOUSE_URL`).toBeDefined()
      // Inside a container the server must listen beyond loopback to be reachable at all.
      expect(config.apiHost, `${role} CDP_API_HOST`).toBe('0.0.0.0')
    }
  })

  it('points the roles at services of this file, the registry at its Confluent-compatible API', () => {
    for (const role of ROLES) {
      const config = loadConfig(environmentOf(services[role]!))
      for (const broker of config.kafkaBrokers!) expect(services, `broker host ${broker}`).toHaveProperty(broker.split(':')[0]!)
      const registry = new URL(config.schemaRegistryUrl!)
      expect(services, `registry host ${registry.hostname}`).toHaveProperty(registry.hostname)
      expect(config.schemaRegistryUrl!.replace(/\/$/, '')).toMatch(/\/apis\/ccompat\/v7$/)
      const clickhouse = new URL(config.clickhouseUrl!)
      expect(services, `clickhouse host ${clickhouse.hostname}`).toHaveProperty(clickhouse.hostname)
    }
  })

  it('uses the ClickHouse server credentials for the roles', () => {
    const server = environmentOf(services.clickhouse!)
    for (const role of ROLES) {
      const config = loadConfig(environmentOf(services[role]!))
      expect(config.clickhouseUsername, `${role} CLICKHOUSE_USERNAME`).toBe(server.CLICKHOUSE_USER)
      expect(config.clickhousePassword, `${role} CLICKHOUSE_PASSWORD`).toBe(server.CLICKHOUSE_PASSWORD)
    }
  })

  it('publishes the API port, and each non-API role serves health and metrics on its own port', () => {
    const api = loadConfig(environmentOf(services.api!))
    const published = (services.api!.ports ?? []).map((p) => (typeof p === 'object' ? String(p.target) : interpolate(String(p)).split(':').at(-1)))
    expect(published).toContain(String(api.apiPort))
    for (const role of ROLES.filter((r) => r !== 'api')) {
      expect(environmentOf(services[role]!).CDP_METRICS_PORT, `${role} CDP_METRICS_PORT`).toBe('9464')
    }
  })

  it('makes the roles wait for healthy dependencies that exist and have a healthcheck', () => {
    for (const role of ROLES) {
      const s = services[role]!
      const deps = dependsOn(s)
      expect(deps, `${role} depends_on`).toEqual(expect.arrayContaining(['kafka', 'registry', 'clickhouse']))
      for (const dep of deps) {
        const target = services[dep]
        expect(target, `${role} depends on ${dep}, which must be a service`).toBeDefined()
        expect(target!.healthcheck?.test, `${dep} has a healthcheck`).toBeDefined()
        expect(target!.healthcheck?.disable).not.toBe(true)
        if (!Array.isArray(s.depends_on)) expect(s.depends_on![dep]!.condition, `${role} -> ${dep}`).toBe('service_healthy')
      }
    }
  })

  it('runs the pinned infrastructure images', () => {
    // Every image pinned to a full version: a tag like 25.8 or latest moves under the deployment.
    expect(services.kafka?.image).toMatch(/^apache\/kafka:4\.\d+\.\d+$/)
    expect(services.registry?.image).toMatch(/^apicurio\/apicurio-registry:3\.\d+\.\d+$/)
    expect(services.clickhouse?.image).toMatch(/^clickhouse\/clickhouse-server:\d+\.\d+\.\d+\.\d+$/)
    const clickhouse = /^clickhouse\/clickhouse-server:(\d+)\.(\d+)/.exec(services.clickhouse?.image ?? '')
    expect(clickhouse, 'clickhouse-server image with a version tag').not.toBeNull()
    // 25.8 or newer (our SQL needs 24.8 LTS at least; the file pins a newer LTS).
    expect(Number(clickhouse![1]) * 100 + Number(clickhouse![2])).toBeGreaterThanOrEqual(2508)
  })

  it('documents the minimum ClickHouse server version', () => {
    expect(read('docker-compose.yml')).toContain('ClickHouse 24.8 LTS or newer (tested: chdb 26.7 embedded)')
  })
})

// ---------------------------------------------------------------- Dockerfile

interface Instruction {
  op: string
  args: string
  line: number
}

/** Dockerfile instructions: comments dropped, `\` continuations joined. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = []
  let pending = ''
  let start = 0
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim()
    if (!pending && (line === '' || line.startsWith('#'))) continue
    if (pending && line.startsWith('#')) continue // comment lines inside a continuation are dropped
    if (!pending) start = i + 1
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `
      continue
    }
    const full = (pending + line).trim()
    pending = ''
    const m = /^(\S+)\s*(.*)$/.exec(full)
    if (m) out.push({ op: m[1]!.toUpperCase(), args: m[2]!, line: start })
  }
  return out
}

/** The exec (JSON array) form of an instruction, or its shell form split on whitespace. */
function words(args: string): string[] {
  const a = args.trim()
  if (a.startsWith('[')) return JSON.parse(a) as string[]
  return a.split(/\s+/).filter(Boolean)
}

const dockerfile = parseDockerfile(read('Dockerfile'))
const dockerignore = read('.dockerignore')
  .split(/\r?\n/)
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'))

/** Sources of the COPY/ADD instructions that read the build context (not another stage). */
const copies = dockerfile
  .filter((i) => i.op === 'COPY' || i.op === 'ADD')
  .map((i) => {
    const all = words(i.args)
    const flags = all.filter((w) => w.startsWith('--'))
    const rest = all.filter((w) => !w.startsWith('--'))
    return { ...i, fromStage: flags.some((f) => f.startsWith('--from=')), sources: rest.slice(0, -1), dest: rest.at(-1)! }
  })
  .filter((c) => !c.fromStage)

/** Modules that shipped code loads at run time: static imports (type-only ones are erased) and dynamic package imports. */
function runtimeImports(file: string): string[] {
  const src = fs.readFileSync(file, 'utf8')
  const specs: string[] = []
  const re = /^\s*(?:import|export)\s+(?!type\s)(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]/gm
  for (const m of src.matchAll(re)) specs.push(m[1]!)
  // Dynamic imports of packages too (chdb is loaded on demand); relative dynamic imports are
  // optional commands (`cdp bench` loads ../bench, a development tool the image leaves out).
  for (const m of src.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) if (!m[1]!.startsWith('.')) specs.push(m[1]!)
  return specs
}

function filesUnder(dir: string): string[] {
  const out: string[] = []
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name)
    if (entry.isDirectory()) out.push(...filesUnder(p))
    else if (/\.(ts|mts|mjs|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(p)
  }
  return out
}

describe('Dockerfile', () => {
  it('starts from a supported Node LTS glibc image, pinned to a full version', () => {
    const from = dockerfile.filter((i) => i.op === 'FROM').at(-1)
    // Node 20 reached its end of life on 2026-04-30: 22 (maintenance) or 24 (active LTS), Debian slim.
    expect(from?.args).toMatch(/^node:(22|24)\.\d+\.\d+-bookworm-slim$/)
    expect(from?.args).not.toMatch(/alpine/)
  })

  it('copies only paths that exist in the repository and that .dockerignore lets through', () => {
    expect(copies.length).toBeGreaterThan(0)
    for (const c of copies) {
      for (const src of c.sources) {
        expect(fs.existsSync(path.join(ROOT, src)), `line ${c.line}: COPY ${src} exists`).toBe(true)
        const top = path.normalize(src).split(path.sep)[0]!
        expect(dockerignore, `line ${c.line}: ${src} is not excluded by .dockerignore`).not.toContain(top)
      }
    }
  })

  it('ships the sources the roles run and what they read at run time', () => {
    const copied = new Set(copies.flatMap((c) => c.sources.map((s) => path.normalize(s).split(path.sep)[0]!)))
    for (const needed of ['bin', 'cli', 'common', 'pipelines', 'services', 'schemas', 'package.json', 'package-lock.json', 'tsconfig.json']) {
      expect(copied, `COPY ${needed}`).toContain(needed)
    }
  })

  it('ships every file the shipped code imports, and installs every package it imports', () => {
    const pkg = JSON.parse(read('package.json')) as { dependencies?: Record<string, string> }
    const deps = new Set(Object.keys(pkg.dependencies ?? {}))
    const shipped = ['bin', 'cli', 'common', 'pipelines', 'services'].map((d) => path.join(ROOT, d))
    const builtins = new Set(builtinModules)
    const problems: string[] = []
    // The console's build files run in the image's first stage (with its dev dependencies), not at run time.
    const buildTime = (f: string) => path.relative(ROOT, f).startsWith(path.join('services', 'console') + path.sep) && !f.endsWith(`${path.sep}server.ts`)
    for (const file of shipped.flatMap(filesUnder).filter((f) => !buildTime(f))) {
      for (const spec of runtimeImports(file)) {
        if (spec.startsWith('.')) {
          const target = path.resolve(path.dirname(file), spec)
          const inImage = shipped.some((d) => target.startsWith(d + path.sep))
          if (!inImage || !fs.existsSync(target)) problems.push(`${path.relative(ROOT, file)} imports ${spec}, which the image lacks`)
        } else if (!spec.startsWith('node:') && !builtins.has(spec)) {
          const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!
          if (!deps.has(name)) problems.push(`${path.relative(ROOT, file)} imports ${name}, not a runtime dependency (npm install --omit=dev)`)
        }
      }
    }
    expect(problems).toEqual([])
  })

  it('installs the locked production dependencies, tsx among them', () => {
    const runs = dockerfile.filter((i) => i.op === 'RUN').map((i) => i.args)
    expect(runs.some((r) => /\bnpm install\b/.test(r) && /--omit[= ]dev\b/.test(r)), 'RUN npm install --omit=dev').toBe(true)
    const pkg = JSON.parse(read('package.json')) as { dependencies?: Record<string, string> }
    expect(pkg.dependencies, 'tsx runs the TypeScript sources in the image').toHaveProperty('tsx')
  })

  it('runs as a non-root user', () => {
    const user = dockerfile.filter((i) => i.op === 'USER').at(-1)?.args.trim()
    expect(user, 'a USER instruction').toBeDefined()
    expect(user!.split(':')[0]).not.toMatch(/^(root|0)$/)
  })

  it('enters through bin/cdp.mjs and starts by default', () => {
    const entrypoint = dockerfile.filter((i) => i.op === 'ENTRYPOINT').at(-1)
    expect(entrypoint).toBeDefined()
    const argv = words(entrypoint!.args)
    expect(argv[0]).toBe('node')
    // Node's own flags (the young generation the npm scripts give it too), then the script.
    const script = argv.slice(1).find((a) => !a.startsWith('--'))!
    expect(argv.slice(1, argv.indexOf(script))).toEqual(['--max-semi-space-size=64'])
    expect(fs.existsSync(path.join(ROOT, script)), `${script} exists`).toBe(true)
    expect(copies.some((c) => c.sources.some((s) => script === s || script.startsWith(`${path.normalize(s)}/`))), `${script} is copied`).toBe(true)
    expect(words(dockerfile.filter((i) => i.op === 'CMD').at(-1)!.args)).toEqual(['start'])
  })

  it('exposes the API and metrics ports and checks /health', () => {
    const exposed = dockerfile.filter((i) => i.op === 'EXPOSE').flatMap((i) => words(i.args))
    expect(exposed).toEqual(expect.arrayContaining(['8080', '9464']))
    const health = dockerfile.filter((i) => i.op === 'HEALTHCHECK').at(-1)
    expect(health?.args).toContain('/health')
  })
})
