import { describe, expect, it } from 'vitest'
import { Writable } from 'node:stream'
import { ConfigError, loadConfig, redactConfig } from '../../common/config.ts'
import { createLogger } from '../../common/logger.ts'

describe('config', () => {
  it('defaults to the embedded runtime with every role, API on 127.0.0.1:8080', () => {
    const c = loadConfig({})
    expect(c).toMatchObject({ runtime: 'embedded', roles: ['api', 'features', 'audience-sync', 'connectors'], apiPort: 8080, apiHost: '127.0.0.1', dataDir: './data', partitions: 4 })
    // Consumers hand their sinks up to 5,000 records; the projection's inserts take up to 50,000 rows, the feature consumer's batches 20,000 records.
    expect(c).toMatchObject({ batchSize: 5000, projectionBatchSize: 50_000, featuresBatchSize: 20_000 })
  })

  it('reads the environment once and lets flags win', () => {
    const c = loadConfig({ CDP_API_PORT: '9000', CDP_ROLES: 'api, features', KAFKA_BROKERS: 'a:1,b:2' }, { apiPort: '9100' })
    expect(c.apiPort).toBe(9100)
    expect(c.roles).toEqual(['api', 'features'])
    expect(c.kafkaBrokers).toEqual(['a:1', 'b:2'])
  })

  it('names the env variable of every invalid or missing value', () => {
    const issuesOf = (env: Record<string, string>) => {
      try {
        loadConfig(env)
      } catch (e) {
        if (e instanceof ConfigError) return e.issues.map((i) => i.path).sort()
        throw e
      }
      throw new Error('expected a ConfigError')
    }
    expect(issuesOf({ CDP_ROLES: 'api,nope', CDP_API_PORT: 'x' })).toEqual(['apiPort (CDP_API_PORT)', 'roles (CDP_ROLES)'])
    expect(issuesOf({ CDP_PROJECTION_BATCH_SIZE: '200000' })).toEqual(['projectionBatchSize (CDP_PROJECTION_BATCH_SIZE)'])
    expect(loadConfig({ CDP_PROJECTION_BATCH_SIZE: '20000' }).projectionBatchSize).toBe(20_000)
    expect(issuesOf({ CDP_FEATURES_BATCH_SIZE: '0' })).toEqual(['featuresBatchSize (CDP_FEATURES_BATCH_SIZE)'])
    expect(loadConfig({ CDP_FEATURES_BATCH_SIZE: '5000' }).featuresBatchSize).toBe(5000)
    expect(issuesOf({ CDP_RUNTIME: 'distributed' })).toEqual(['kafkaBrokers (KAFKA_BROKERS)', 'schemaRegistryUrl (SCHEMA_REGISTRY_URL)'])
  })

  it('masks secrets when the config is shown', () => {
    const c = loadConfig({ CLICKHOUSE_URL: 'http://u:pw@ch:8123', CLICKHOUSE_PASSWORD: 'hunter2', SCHEMA_REGISTRY_PASSWORD: 's3cret' })
    const shown = JSON.stringify(redactConfig(c))
    expect(shown).not.toContain('hunter2')
    expect(shown).not.toContain('s3cret')
    expect(shown).not.toContain(':pw@')
    expect(redactConfig(c).clickhousePassword).toBe('***')
  })
})

describe('logger', () => {
  it('redacts passwords, tokens and credentials wherever they appear', () => {
    const lines: string[] = []
    const sink = new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) })
    const log = createLogger({ level: 'info', destination: sink as never })
    log.info({ clickhousePassword: 'p1', integration: { app_token: 't1', access_token: 't2' }, credentials: { x: 'c1' }, req: { headers: { authorization: 'Bearer t3' } } }, 'hello')
    // Two levels down, and the webhook secret.
    log.info({ webhook_secret: 'w1', integration: { configuration: { webhook_secret: 'w2' } }, job: { creds: { app_token: 't4', refresh_token: 't5' } } }, 'nested')
    const out = lines.join('')
    for (const secret of ['p1', 't1', 't2', 'c1', 'Bearer t3', 'w1', 'w2', 't4', 't5']) expect(out).not.toContain(secret)
    expect(out).toContain('"msg":"hello"')
  })
})
