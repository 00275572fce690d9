import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each API test file boots its own engine on an ephemeral port with its own SQLite file.
    pool: 'forks',
    // The end-to-end tests serve the built renderer: built once per run, and only when a source changed.
    globalSetup: ['test/e2e/support/global-setup.ts'],
  },
});
