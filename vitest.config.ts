import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // builds dist/ and the driver double once, before the test files run
    globalSetup: ['test/global-setup.ts'],
    // The bindings load native libraries through koffi: forks keep each test file in its own process.
    pool: 'forks',
    testTimeout: 60_000,
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      reporter: ['text', 'json-summary'],
      thresholds: { lines: 95, branches: 95, functions: 95, statements: 95 },
    },
  },
});
