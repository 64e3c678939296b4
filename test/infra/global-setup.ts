import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import path from 'node:path'
import fs from 'node:fs'
import type { TestProject } from 'vitest/node'

const run = promisify(execFile)
const ROOT = path.resolve(import.meta.dirname, '../..')

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string
    schemaRegistryUrl: string
    clickhouseUrl: string
    infraSource: string
  }
}

/**
 * Real Kafka and a real schema registry for the suite, found in this order:
 * 1. KAFKA_BROKERS and SCHEMA_REGISTRY_URL from the environment;
 * 2. testcontainers, where a Docker daemon answers;
 * 3. the broker and registry provisioned locally by test/infra/kafka.sh and registry.sh (no Docker).
 * If none works the run fails with the reason: integration tests never skip silently.
 * ClickHouse is chdb (in-process) unless CLICKHOUSE_URL is set.
 */
export default async function setup(project: TestProject) {
  const cleanups: (() => Promise<void>)[] = []
  let brokers = process.env.KAFKA_BROKERS
  let registry = process.env.SCHEMA_REGISTRY_URL
  let source = 'environment'
  if (!brokers || !registry) {
    if (await dockerAnswers()) {
      source = 'testcontainers'
      ;({ brokers, registry } = await startContainers(cleanups))
    } else {
      source = 'local (test/infra, no Docker)'
      ;({ brokers, registry } = await startLocal(cleanups))
    }
  }
  await createProductTopics(brokers)
  process.stderr.write(`[infra] Kafka ${brokers}, schema registry ${registry} (${source}); ClickHouse ${process.env.CLICKHOUSE_URL ?? 'chdb (embedded)'}\n`)
  project.provide('kafkaBrokers', brokers)
  project.provide('schemaRegistryUrl', registry)
  project.provide('clickhouseUrl', process.env.CLICKHOUSE_URL ?? '')
  project.provide('infraSource', source)
  return async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {})
  }
}

/**
 * Partitions of the product's topics on the suite's broker, created here as an operator would,
 * before any test: whichever test came first would otherwise decide. Six, so the scale-out test
 * (test/features/scale-out.int.test.ts) spreads them over three and four consumers.
 */
export const KAFKA_TEST_PARTITIONS = 6

async function createProductTopics(brokers: string): Promise<void> {
  const { KafkaEventLog } = await import('../../common/eventlog/kafka.ts')
  const { ALL_TOPICS } = await import('../../common/topics.ts')
  const log = new KafkaEventLog({ brokers: brokers.split(','), clientId: 'test-setup' })
  try {
    await log.createTopics(ALL_TOPICS.map((t) => ({ name: t.name, partitions: KAFKA_TEST_PARTITIONS, compacted: t.compacted })))
  } finally {
    await log.close()
  }
}

async function dockerAnswers(): Promise<boolean> {
  if (process.env.CDP_TEST_NO_DOCKER === '1') return false
  const sock = process.env.DOCKER_HOST ?? (fs.existsSync('/var/run/docker.sock') ? 'unix:///var/run/docker.sock' : '')
  if (!sock) return false
  try {
    await run('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 5000 })
    return true
  } catch {
    return false
  }
}

async function startLocal(cleanups: (() => Promise<void>)[]): Promise<{ brokers: string; registry: string }> {
  const dir = path.join(ROOT, '.cache', 'infra', `run-${process.pid}`)
  // Runs last (cleanups run in reverse): the stop scripts need the pid files inside.
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }))
  const script = (name: string) => path.join(ROOT, 'test', 'infra', name)
  const start = async (name: string, sub: string, key: string) => {
    try {
      const { stdout } = await run('bash', [script(name), 'start', path.join(dir, sub)], { timeout: 600_000, maxBuffer: 1 << 20 })
      const line = stdout.split('\n').find((l) => l.startsWith(`${key}=`))
      if (!line) throw new Error(`${name} printed no ${key}=: ${stdout}`)
      cleanups.push(async () => {
        await run('bash', [script(name), 'stop', path.join(dir, sub)])
      })
      return line.slice(key.length + 1)
    } catch (e) {
      const err = e as { stderr?: string; message: string }
      throw new Error(`could not start ${name}: ${err.stderr || err.message}`)
    }
  }
  const [brokers, registry] = await Promise.all([start('kafka.sh', 'kafka', 'KAFKA_BROKERS'), start('registry.sh', 'registry', 'SCHEMA_REGISTRY_URL')])
  return { brokers, registry }
}

async function startContainers(cleanups: (() => Promise<void>)[]): Promise<{ brokers: string; registry: string }> {
  const { KafkaContainer } = await import('@testcontainers/kafka')
  const { GenericContainer, Wait } = await import('testcontainers')
  const kafka = await new KafkaContainer('confluentinc/cp-kafka:8.0.0').start()
  cleanups.push(async () => void (await kafka.stop()))
  const reg = await new GenericContainer('apicurio/apicurio-registry:3.3.3')
    .withExposedPorts(8080)
    .withWaitStrategy(Wait.forHttp('/apis/ccompat/v7/subjects', 8080))
    .start()
  cleanups.push(async () => void (await reg.stop()))
  return {
    brokers: `${kafka.getHost()}:${kafka.getMappedPort(9093)}`,
    registry: `http://${reg.getHost()}:${reg.getMappedPort(8080)}/apis/ccompat/v7`,
  }
}
