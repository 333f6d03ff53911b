// Every check of a device's run, in the order the runner runs them (cli/device-runner.ts SUITE_ORDER), without
// Vitest: the runner sends this list to the command before its first check (a PlanEvent, suites/protocol.ts), so
// that the command can name the checks a process never reached when it has to give up on it (cli/orchestrate.ts).
// It is the catalog (suites/catalog.ts) as the plan event carries it.
import { checkCatalog } from './catalog.js';
import type { PlannedCheck } from './protocol.js';

export async function checkPlan(): Promise<PlannedCheck[]> {
  return (await checkCatalog()).map(({ id, suite, title }) => ({ id, suite, title }));
}
