// A check's status, and what each one means for a run. Free of Vitest and of any driver: the command, the gate
// and every reporter read it.
//
// pass < warn < fail < timeout < crash rise in severity: what the driver did (deqp-runner's order). `error` is
// the host's fault, not the driver's (no scratch space, a process killed from outside): the check could not
// judge the driver, so it is neither a pass nor a driver failure, and it has no rank among the others. `skip`:
// the check does not apply to the device (with the reason), or was not selected.

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'timeout' | 'crash' | 'error' | 'skip';

/** Every status, for validation and counts. */
export const CHECK_STATUSES: readonly CheckStatus[] = ['pass', 'warn', 'fail', 'timeout', 'crash', 'error', 'skip'];

/** The statuses that say the driver failed the check (exit 1), in rising severity. */
export const FAILING: readonly CheckStatus[] = ['fail', 'timeout', 'crash'];

/** The driver's statuses in rising severity; `error` and `skip` are not ranked. */
export const SEVERITY: Readonly<Record<'pass' | 'warn' | 'fail' | 'timeout' | 'crash', number>> = { pass: 0, warn: 1, fail: 2, timeout: 3, crash: 4 };

/** The check judged the driver (it has a rank): not `error`, not `skip`. */
export function isRanked(s: CheckStatus): s is keyof typeof SEVERITY {
  return s in SEVERITY;
}
