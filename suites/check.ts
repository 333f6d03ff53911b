// A check, in the shape of nvbandwidth's test cases: a stable id, a title, applies(device) and run(); and its run
// (runCheck). Each check becomes one Vitest test case (suites/define-checks.ts) in a GPU's runner; the runner of
// devices that never register runs them without Vitest (suites/without-vitest.ts), through the same runCheck. What
// a check saw is written, synchronously, as a JSON line on the run's event channel (suites/protocol.ts), before and
// after it runs: a check that kills its process still leaves its "start" line behind, so the command can name it
// and report `crash`. No Vitest here.
import type { DiscoveredDevice } from '../bindings/discovery.js';
import { hookFor } from './hooks.js';
import { isHostFault } from '../bindings/host-fault.js';
import { blockForever, readProtNonePage } from '../bindings/libc.js';
import { registrations } from '../src/ops.js';
import { type ResultEvent, type SuiteOptions, writeEvent } from './protocol.js';
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

/** Raised into Vitest when a check fails, with what was expected and observed. */
export class CheckFailed extends Error {
  constructor(id: string, o: Observation) {
    super(`${id}: expected ${o.expected}; observed ${o.observed}${o.message ? ` (${o.message})` : ''}`);
    this.name = 'CheckFailed';
  }
}

/** Touches a page with no access: a real SIGSEGV, as a driver bug would give. */
function crashForTest(): never {
  throw new Error(`reading a PROT_NONE page returned ${readProtNonePage()}`);
}

/** How a check's Vitest test case ends: passed, skipped with the reason, or failed with what it raised. */
export interface CheckEnd {
  skip?: string;
  raise?: unknown;
}

/**
 * Runs one check of a device, in its Vitest test case (suites/define-checks.ts) or in the runner without Vitest
 * (suites/without-vitest.ts): its start and result written on the event channel, the result returned with how the
 * test case ends. A check that kills its process or hangs does so here.
 */
export function runCheck(check: Check, options: SuiteOptions, context: (options: SuiteOptions) => CheckContext): { event: ResultEvent; end: CheckEnd } {
  const device = options.device;
  // test hook: the device's first process kills itself with SIGKILL right after this check reported, outside
  // any check, as the OOM killer may (MAPPED_REG_FORCE_KILL=[device/]check-id); never its later processes
  const killAfter = options.attempt === 1 ? hookFor(process.env.MAPPED_REG_FORCE_KILL, device) : undefined;
  const started = performance.now();
  writeEvent({ type: 'start', device, id: check.id, suite: check.suite, title: check.title });
  const lines: string[] = [];
  const heldBefore = registrations.held().length;
  const finish = (r: Omit<ResultEvent, 'type' | 'device' | 'id' | 'suite' | 'title' | 'durationMs'>, end: CheckEnd = {}): { event: ResultEvent; end: CheckEnd } => {
    // what the driver may still hold after this check is never unmapped: say so with the check's result
    const held = registrations.held().length - heldBefore;
    if (held > 0) {
      const note = `${held} range(s) the driver refused to release stay registered and mapped until the device's process ends`;
      r = { ...r, message: r.message ? `${r.message}; ${note}` : note };
    }
    const event: ResultEvent = { type: 'result', device, id: check.id, suite: check.suite, title: check.title, durationMs: performance.now() - started, ...r, ...(lines.length ? { log: lines } : {}) };
    writeEvent(event);
    if (killAfter === check.id) process.kill(process.pid, 'SIGKILL');
    return { event, end };
  };
  let o: Observation | string;
  const deselected = options.deselected?.[check.id];
  try {
    // left out by the user's selection: not run, and the device's context is not made for it
    if (deselected !== undefined) o = deselected;
    else {
      const ctx: CheckContext = { ...context(options), log: (m) => lines.push(m) };
      const applies = check.applies(ctx);
      if (applies !== true) o = applies;
      else {
        if (options.forceCrash === check.id) crashForTest();
        if (options.forceHang === check.id) blockForever();
        o = check.run(ctx);
      }
    }
  } catch (e) {
    // the host could not give the check what it needs (no space for its file, ...): not the driver's failure
    if (isHostFault(e)) return finish({ status: 'error', message: e.message });
    const message = e instanceof Error ? e.message : String(e);
    return finish({ status: 'fail', message: `the check raised: ${message}` }, { raise: e });
  }
  if (typeof o === 'string') return finish({ status: 'skip', message: o }, { skip: o });
  return finish(
    { status: o.status ?? 'pass', expected: o.expected, observed: o.observed, ...(o.message ? { message: o.message } : {}), ...(o.data ? { data: o.data } : {}) },
    o.status === 'fail' ? { raise: new CheckFailed(check.id, o) } : {},
  );
}

