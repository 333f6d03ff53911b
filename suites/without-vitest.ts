// The runner of devices that never register (OpenCL, Vulkan, the CPU) runs their checks without Vitest: each such
// device's verdict is static, so its run is one check that reads the model and the rest skipped, which take 1 to
// 3 ms, against some 0.2 s of CPU to load and start Vitest (most of a run with no GPU). The checks, their order
// (suite by suite as the runner's Vitest run orders them, cli/device-runner.ts SUITE_ORDER; in each suite, device by
// device), the events and the results are those of the Vitest run: each check is run by suites/check.ts's runCheck, as in its
// Vitest test case. A check that kills its process does so here too, and the command resumes it the same way.
import { allChecks } from './catalog.js';
import { type CheckContext, runCheck } from './check.js';
import { type SuiteOptions, writeEvent } from './protocol.js';

/** Runs every check of `devices` not already reported (`skip`), in the Vitest run's order, then writes the run's end. */
export async function runWithoutVitest(devices: readonly SuiteOptions[], suiteOrder: readonly string[], context: (options: SuiteOptions) => CheckContext): Promise<void> {
  const started = performance.now();
  const checks = await allChecks();
  for (const suite of suiteOrder) {
    for (const options of devices) {
      for (const check of checks.filter((c) => c.suite === suite)) {
        if (!options.skip.includes(check.id)) runCheck(check, options, context);
      }
    }
  }
  writeEvent({ type: 'end', durationMs: performance.now() - started });
}
