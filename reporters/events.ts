// A Vitest reporter for the device runner: what the checks could not say themselves. A check writes its own
// start and result lines (suites/check.ts), with its device (a process may check several); this reporter adds the
// errors Vitest saw outside any check (a suite file that failed to load, an unhandled error: the process's, not a
// device's) and a result for a check whose test case ended without writing one (a Vitest timeout), so that the
// command never loses a check silently.
import { writeSync } from 'node:fs';
import type { Reporter, TestCase, TestModule } from 'vitest/node';
import type { PlainDiscovery } from '../bindings/discovery.js';
import type { ResultEvent } from '../suites/check.js';
// The plan is the suites' (suites/plan.ts makes it): a suite never imports a reporter.
import type { PlanEvent } from '../suites/plan.js';

export type { PlanEvent };

export interface ErrorEvent {
  type: 'error';
  message: string;
}

export interface EndEvent {
  type: 'end';
  durationMs: number;
}

/** A discovering runner's discovery (before any check): what it found, and the device it offers to check (null: none, it exits). */
export interface DiscoveryEvent {
  type: 'discovery';
  durationMs: number;
  discovery: PlainDiscovery;
  device: string | null;
}


/** Not from a runner: the command started a new process for a device's checks left (cli/orchestrate.ts), and why. */
export interface RestartEvent {
  type: 'restart';
  message: string;
}

export type RunnerEvent = ResultEvent | ErrorEvent | EndEvent | DiscoveryEvent | PlanEvent;

export class EventsReporter implements Reporter {
  readonly #started = performance.now();

  constructor(private readonly write: (event: RunnerEvent) => void = (e) => writeSync(3, `${JSON.stringify(e)}\n`)) {}

  onTestCaseResult(test: TestCase): void {
    if (test.meta().check || test.meta().resumed) return; // the check reported itself, or did earlier
    const r = test.result();
    if (r.state === 'pending') return;
    const message = r.state === 'skipped' ? (r.note ?? 'skipped') : (r.errors ?? []).map((e) => e.message).join('; ');
    const timedOut = /timed out/i.test(message);
    this.write({
      type: 'result',
      // the suite each device's checks are in is named by the device's id (suites/check.ts)
      device: test.parent.type === 'suite' ? test.parent.name : '',
      id: test.name,
      suite: 'hazards',
      title: test.name,
      status: r.state === 'skipped' ? 'skip' : r.state === 'passed' ? 'pass' : timedOut ? 'timeout' : 'fail',
      durationMs: test.diagnostic()?.duration ?? 0,
      ...(message ? { message } : {}),
    });
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<{ message?: string }>): void {
    for (const m of modules) {
      for (const e of m.errors()) this.write({ type: 'error', message: `${m.moduleId}: ${e.message}` });
    }
    for (const e of unhandledErrors) this.write({ type: 'error', message: `unhandled: ${e.message ?? String(e)}` });
    this.write({ type: 'end', durationMs: performance.now() - this.#started });
  }
}
