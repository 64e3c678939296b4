import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/infra/global-setup.ts'],
    pool: 'forks',
    // Two cores: chdb and the broker share them, so keep concurrency modest.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
})
