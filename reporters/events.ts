// A Vitest reporter for the device runner: what the checks could not say themselves. A check writes its own
// start and result lines (suites/check.ts), with its device (a process may check several); this reporter adds the
// errors Vitest saw outside any check (a suite file that failed to load, an unhandled error: the process's, not a
// device's) and a result for a check whose test case ended without writing one (a Vitest timeout), so that the
// command never loses a check silently. Its lines are the protocol's (suites/protocol.ts).
import type { Reporter, TestCase, TestModule } from 'vitest/node';
import { type PlannedCheck, type RunnerEvent, writeEvent } from '../suites/protocol.js';

export class EventsReporter implements Reporter {
  /** When the run started (its end's durationMs): the reporter is made before the run, while the runner waits for its devices. */
  #started = performance.now();
  readonly #planned: ReadonlyMap<string, PlannedCheck>;

  /** `plan`: every check the process may run (the catalog), for the suite of a check that wrote no result. */
  constructor(
    plan: readonly PlannedCheck[],
    private readonly write: (event: RunnerEvent) => void = writeEvent,
  ) {
    this.#planned = new Map(plan.map((c) => [c.id, c]));
  }

  onTestRunStart(): void {
    this.#started = performance.now();
  }

  onTestCaseResult(test: TestCase): void {
    if (test.meta().check || test.meta().resumed) return; // the check reported itself, or did earlier
    const r = test.result();
    if (r.state === 'pending') return;
    const message = r.state === 'skipped' ? (r.note ?? 'skipped') : (r.errors ?? []).map((e) => e.message).join('; ');
    const timedOut = /timed out/i.test(message);
    const status = r.state === 'skipped' ? 'skip' : r.state === 'passed' ? 'pass' : timedOut ? 'timeout' : 'fail';
    const planned = this.#planned.get(test.name);
    if (!planned) {
      // no check of the catalog: a result would have to invent its suite, so the process reports it as its own error
      this.write({ type: 'error', message: `${test.name}, not a check of the catalog, ended without a result: ${status}${message ? ` (${message})` : ''}` });
      return;
    }
    this.write({
      type: 'result',
      // the suite each device's checks are in is named by the device's id (suites/define-checks.ts)
      device: test.parent.type === 'suite' ? test.parent.name : '',
      id: test.name,
      suite: planned.suite,
      title: test.name,
      status,
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
