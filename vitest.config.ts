import { configDefaults, defineConfig } from 'vitest/config'

/**
 * Tests live in `test/<lane>/` (README, "Tests"). Two projects by file name: `*.test.ts` is `unit`
 * (no Kafka, no schema registry, no child process; chdb in process and in-process HTTP servers are
 * fine); `*.int.test.ts` is `integration` and gets the real broker and registry from the global
 * setup. `vitest run` runs both; `--project unit` starts no Kafka.
 */
export default defineConfig({
  test: {
    pool: 'forks',
    // Two cores: chdb and the broker share them, so keep concurrency modest.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The second prints the plain closing line CI reads (test/infra/summary-reporter.ts).
    reporters: ['default', './test/infra/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/**/*.int.test.ts'],
          // What the global setup provides to integration tests; unit tests get only ClickHouse's
          // URL (helpers' testConfig reads it), never a broker or a registry.
          provide: { clickhouseUrl: process.env.CLICKHOUSE_URL ?? '' },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.int.test.ts'],
          globalSetup: ['test/infra/global-setup.ts'],
        },
      },
    ],
  },
})
