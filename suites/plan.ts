// Every check of a device's run, in the order the runner runs them (cli/device-runner.ts SUITE_ORDER), without
// Vitest: the runner sends this list to the command before its first check, so that the command can name the
// checks a process never reached when it has to give up on it (cli/orchestrate.ts).
import type { PlanEvent } from '../reporters/events.js';

export async function checkPlan(): Promise<PlanEvent['checks']> {
  const [s, p, t, h] = await Promise.all([import('./checks/static.js'), import('./checks/probe.js'), import('./checks/timing.js'), import('./hazards/index.js')]);
  return [...s.staticChecks, ...p.probeChecks, ...t.timingChecks, ...h.hazardChecks].map(({ id, suite, title }) => ({ id, suite, title }));
}
