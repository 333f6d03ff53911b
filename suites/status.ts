// A check's status, where Vitest is not loaded (the command, the reporters): suites/check.ts imports Vitest.

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'timeout' | 'crash' | 'skip';

/** The statuses that make a run fail (exit 1), in rising severity. */
export const FAILING: readonly CheckStatus[] = ['fail', 'timeout', 'crash'];
