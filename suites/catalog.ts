// Every check of the suites, in the order a device's run runs them (cli/device-runner.ts SUITE_ORDER), read from
// the suites' own definitions: their id, suite, one-line title and the checks each needs. No Vitest and no driver
// is loaded: `list --checks` prints it, the command checks --check / --skip globs against it before anything runs,
// and the runner sends it to the command as its plan (suites/plan.ts). test/select-checks.test.ts holds it equal
// to what a run reports.
import type { Check, SuiteName } from './check.js';

export interface CatalogEntry {
  id: string;
  suite: SuiteName;
  title: string;
  /** The checks whose run this one reads (Check.needs); empty for most. */
  needs: string[];
}

/** Every check of the suites: suite by suite, each suite's checks in its file's order. */
export async function allChecks(): Promise<Check[]> {
  const [s, p, t, h] = await Promise.all([import('./checks/static.js'), import('./checks/probe.js'), import('./checks/timing.js'), import('./hazards/index.js')]);
  return [...s.staticChecks, ...p.probeChecks, ...t.timingChecks, ...h.hazardChecks];
}

export async function checkCatalog(): Promise<CatalogEntry[]> {
  return (await allChecks()).map(({ id, suite, title, needs }) => ({ id, suite, title, needs: [...(needs ?? [])] }));
}
