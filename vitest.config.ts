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
      // the model, the checks and the bindings, as the tests' own processes run them (the command's and the
      // device runners' child processes are not measured)
      include: ['src/**/*.ts', 'suites/checks/**/*.ts', 'suites/hazards/**/*.ts', 'bindings/**/*.ts'],
      // the truncation child runs in a process of its own (hazard.truncate_contained), never in the tests' own
      exclude: ['suites/hazards/truncate-child.ts'],
      reporter: ['text', 'json-summary'],
      // Each part against its own floor, just under what the tests reached when it was set (2026-12-01: checks
      // 97.07 / 86.86 / 100 / 98.57, bindings 93.46 / 77.8 / 96.21 / 95.2 statements / branches / functions /
      // lines); the model keeps 95.
      thresholds: {
        'src/**/*.ts': { lines: 95, branches: 95, functions: 95, statements: 95 },
        'suites/checks/**/*.ts': { lines: 98, branches: 86, functions: 99, statements: 97 },
        // the hazard checks, moved out of suites/checks/hazards.ts (issue 14), measured alone: 96.93 / 85.55 / 100 /
        // 98.39 (the child-process protocol's rarer endings and the tmpfs probe's failure are what is left); without
        // them suites/checks/ reaches 98.66 / 94.33 / 100 / 100, its floor unchanged
        'suites/hazards/**/*.ts': { lines: 98, branches: 85, functions: 99, statements: 96 },
        'bindings/**/*.ts': { lines: 95, branches: 77, functions: 96, statements: 93 },
      },
    },
  },
});
