import { configDefaults, defineConfig } from 'vitest/config'

/**
 * Two projects (README, "Tests"): `unit` needs no Kafka, no schema registry and no child process
 * (chdb in process and in-process HTTP servers are fine); `integration` gets the real broker and
 * registry from the global setup. `vitest run` runs both; `--project unit` starts no Kafka.
 */
export default defineConfig({
  test: {
    pool: 'forks',
    // Two cores: chdb and the broker share them, so keep concurrency modest.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // What the global setup provides to integration tests; unit tests get only ClickHouse's
          // URL (helpers' testConfig reads it), never a broker or a registry.
          provide: { clickhouseUrl: process.env.CLICKHOUSE_URL ?? '' },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          // test/integration/, and any test file left outside test/unit/: never silently skipped.
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/unit/**'],
          globalSetup: ['test/infra/global-setup.ts'],
        },
      },
    ],
  },
})
