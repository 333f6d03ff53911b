// What the command tells a device runner process, besides what the runner tells it back (its events on file
// descriptor 3: reporters/events.ts, suites/check.ts): its options, in its environment, and, for a runner that
// discovers, the answer to its offer, one JSON line on its stdin.
import type { SuiteOptions } from '../suites/check.js';
import type { Selection } from './select-devices.js';

/** The variable that carries a runner's options (JSON). */
export const RUNNER_OPTIONS_ENV = 'MAPPED_REG_SUITE_OPTIONS';

/** A device runner's options. */
export interface RunnerOptions {
  /**
   * The devices it checks, in this order, in one Vitest run (each with the number of this process among its
   * device's processes in `attempt`). Empty in a runner that discovers: the command's answer gives them.
   */
  devices: SuiteOptions[];
  /**
   * A runner that discovers the devices of these backends itself (the command loads no driver), reports them to
   * the command with the device it offers to check (cli/select-devices.ts pickDevice), then checks the devices the
   * command answers (none: it exits).
   */
  discover?: Selection;
}

/** The command's answer to a discovering runner: the devices it checks (none: it exits). */
export function answerLine(devices: readonly SuiteOptions[]): string {
  return `${JSON.stringify({ devices })}\n`;
}

/** The devices an answer line gives (none for anything else: an empty line when the command closed stdin first). */
export function readAnswer(line: string): SuiteOptions[] {
  try {
    const answer = JSON.parse(line) as { devices?: unknown };
    return Array.isArray(answer.devices) ? (answer.devices as SuiteOptions[]) : [];
  } catch {
    return [];
  }
}
