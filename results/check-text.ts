// What a check's result says in words, in one place so that every report says the same: its reason (the check's
// own plain words, "the driver accepted an overlapping range (a false success)"; JUnit's failure message), and
// that reason beside its codes (what the check observed, "register 0; unregister 0, 0"), for the terminal and
// the gate's lines.
import type { CheckResult } from './types.js';
import { oneLine } from './format.js';

/** The parts of a check's result that its words come from. */
export type CheckWords = Pick<CheckResult, 'status'> & Partial<Pick<CheckResult, 'message' | 'expected' | 'observed'>>;

/** The check's reason: its message, else what it expected and observed, else its status (JUnit's message). */
export function checkReason(c: CheckWords): string {
  if (c.message) return c.message;
  if (c.expected !== undefined || c.observed !== undefined) return `expected ${c.expected ?? '?'}; observed ${c.observed ?? '?'}`;
  return c.status;
}

/**
 * The check's words on one line: its message (the plain words) and, beside it, what it observed (the codes), each
 * once; one alone when the check has only one of them; undefined when it has neither.
 */
export function checkDetail(c: CheckWords): string | undefined {
  const message = c.message ? oneLine(c.message) : '';
  const observed = c.observed ? oneLine(c.observed) : '';
  if (message && observed && !message.includes(observed)) return `${message}; observed: ${observed}`;
  return message || observed || undefined;
}
