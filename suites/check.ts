// A check, in the shape of nvbandwidth's test cases: a stable id, a title, applies(device) and run(). Each check
// becomes one Vitest test case. What it saw is written, synchronously, as a JSON line on the run's event
// channel (suites/protocol.ts), before and after it runs (suites/run-check.ts): a check that kills its process
// still leaves its "start" line behind, so the command can name it and report `crash`.
import { describe, inject, it } from 'vitest';
import type { DiscoveredDevice } from '../bindings/discovery.js';
import type { ResultEvent, SuiteOptions } from './protocol.js';
import { runCheck } from './run-check.js';

import type { SuiteName } from '../results/types.js';

export type { CheckStatus } from '../results/status.js';
export type { SuiteName } from '../results/types.js';

/**
 * What a check saw. A check that throws is `fail` with the error as its message, except for a HostFault
 * (bindings/host-fault.ts: the host's own call failed, e.g. no space for its file): `error`, with the reason.
 */
export interface Observation {
  /** Default `pass`. `fail` makes the Vitest test case fail. */
  status?: 'pass' | 'warn' | 'fail';
  expected: string;
  observed: string;
  message?: string;
  /** Figures for the reports (bandwidths, return codes, ...). */
  data?: Record<string, unknown>;
}

export interface CheckContext {
  readonly device: DiscoveredDevice;
  readonly options: SuiteOptions;
  /** Lines kept with the check's result. */
  log(message: string): void;
}

export interface Check {
  readonly id: string;
  readonly suite: SuiteName;
  readonly title: string;
  /**
   * The checks whose run this one reads (probe.release and the timing checks read the report probe.verdict's
   * self-test makes): a check selected with --check brings these with it, and a check skipped by --skip or a skips
   * file takes the checks that need it with it (cli/select-checks.ts). Default: none.
   */
  readonly needs?: readonly string[];
  /** true when the check applies to this device, else the reason it does not (the check is skipped). */
  applies(ctx: CheckContext): true | string;
  run(ctx: CheckContext): Observation;
}

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
