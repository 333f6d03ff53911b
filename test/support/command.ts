// The command as the tests start it: where it is built, and the environment it gets (the tests' own, less any
// MAPPED_REG_* variable of the machine, plus what a test sets).
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');
/** The built command (npm test builds dist/ first). */
export const MAIN = join(ROOT, 'dist', 'cli', 'main.js');

/**
 * The arguments of a run whose test reads the gate, the figures or the reports, never a hazard check: the hazard
 * checks (a 32 MiB file and a child process each run) are a third of a CUDA run's CPU. A baseline and the runs
 * compared with it take them alike: the gate compares check by check.
 */
export const NO_HAZARDS: readonly string[] = ['--skip', 'hazard.*'];

/**
 * The kernel's pressure figures of a quiet machine (all zero), which the command reads instead of /proc/pressure
 * (MAPPED_REG_PROC_ROOT): this machine's own, under the load of the other test files, would make a run "busy"
 * by luck. The tests of the busy rules give their own.
 */
export const QUIET_PROC = join(ROOT, 'test', 'fixtures', 'quiet-proc');

/** process.env without MAPPED_REG_* (and without `drop`), with a quiet machine's pressure, then `extra`. */
export function cleanEnv(extra: Record<string, string | undefined> = {}, drop: string[] = []): NodeJS.ProcessEnv {
  const base = { ...process.env };
  for (const k of Object.keys(base)) if (k.startsWith('MAPPED_REG_') || drop.includes(k)) delete base[k];
  return { ...base, MAPPED_REG_PROC_ROOT: QUIET_PROC, ...extra };
}
