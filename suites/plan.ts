// Every check of a device's run, in the order the runner runs them (cli/device-runner.ts SUITE_ORDER), without
// Vitest: the runner sends this list to the command before its first check, so that the command can name the
// checks a process never reached when it has to give up on it (cli/orchestrate.ts). It is the catalog
// (suites/catalog.ts) as the plan event carries it.
import type { SuiteName } from '../results/types.js';
import { checkCatalog } from './catalog.js';

/** The checks of each device a process checks (every check, in order), sent before the first one starts. */
export interface PlanEvent {
  type: 'plan';
  checks: { id: string; suite: SuiteName; title: string }[];
}

export async function checkPlan(): Promise<PlanEvent['checks']> {
  return (await checkCatalog()).map(({ id, suite, title }) => ({ id, suite, title }));
}
