// Each check as a Vitest test case, in a GPU's runner (cli/device-runner.ts): for each device of the process a
// suite named by its id, a test case for each check named by the check's id, whose run is suites/check.ts's.
import { describe, inject, it } from 'vitest';
import { type Check, type CheckContext, runCheck } from './check.js';
import type { ResultEvent, SuiteOptions } from './protocol.js';

declare module 'vitest' {
  interface ProvidedContext {
    /** The devices this process checks, in order. */
    mappedReg: SuiteOptions[];
  }
}

/**
 * Registers each check as a Vitest test case named by its id, for each device of this process in a suite named by
 * the device's id (its checks in this file, then the next device's). `context(options)` is called by each check
 * that runs (it makes the device's context once: a device whose checks are all skipped opens nothing).
 */
export function defineChecks(checks: readonly Check[], context: (options: SuiteOptions) => CheckContext): void {
  for (const options of inject('mappedReg')) describe(options.device, () => defineDeviceChecks(checks, options, context));
}

function defineDeviceChecks(checks: readonly Check[], options: SuiteOptions, context: (options: SuiteOptions) => CheckContext): void {
  for (const check of checks) {
    if (options.skip.includes(check.id)) {
      // reported by an earlier process of this device's run: a placeholder keeps the file non-empty
      it(check.id, (t) => {
        t.task.meta.resumed = true;
        t.skip('reported by an earlier process');
      });
      continue;
    }
    it(check.id, (t) => {
      const { event, end } = runCheck(check, options, context);
      t.task.meta.check = event;
      if (end.skip !== undefined) t.skip(end.skip);
      if (end.raise !== undefined) throw end.raise;
    });
  }
}

declare module 'vitest' {
  interface TaskMeta {
    check?: ResultEvent;
    /** A placeholder for a check an earlier process already reported. */
    resumed?: boolean;
  }
}
