// A command test file's surroundings: a temp folder of its own (removed after all its tests) and the C driver
// doubles, built before its tests run.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { buildDoubles, type DoublePaths } from '../double/build.js';
import { MAIN, cleanEnv } from './command.js';

export interface Workspace {
  /** The test file's temp folder (`prefix`XXXXXX under the system's). */
  work: string;
  /** The doubles' paths (with `build` 'beforeAll': filled in then, so read them inside tests only). */
  doubles: DoublePaths;
}

/**
 * Makes the folder now and registers the hook that removes it; builds the doubles now (`build` 'now': for test
 * cases whose environments, made while collecting them, name the libraries) or in beforeAll.
 */
export function workspace(prefix: string, build: 'now' | 'beforeAll' = 'beforeAll'): Workspace {
  const work = mkdtempSync(join(tmpdir(), prefix));
  const doubles = build === 'now' ? buildDoubles() : ({} as DoublePaths); // else filled in before any test reads it
  if (build === 'beforeAll') beforeAll(() => Object.assign(doubles, buildDoubles()));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  return { work, doubles };
}

/** How a script run to its end went. */
export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `script` with `args` under node to its end, in `cwd`, with the tests' environment (cleanEnv(env, drop)). */
export function runScript(script: string, args: string[], cwd: string, env: Record<string, string | undefined> = {}, drop: string[] = [], timeout?: number): Ran {
  const r = spawnSync(process.execPath, [script, ...args], { env: cleanEnv(env, drop), encoding: 'utf8', cwd, timeout });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** One run of the built command in a test file's temp folder: its own scratch folder and output files. */
export interface CommandRun extends Ran {
  /** The run's scratch folder (`--scratch-dir`), `run-`XXXXXX in the temp folder. */
  scratch: string;
  /** The run's output file with extension `ext`, beside its scratch folder (`--json` is out('json')). */
  out(ext: string): string;
  /** The text of out(ext), '' where the run wrote none. */
  read(ext: string): string;
}

/**
 * Runs the built command (MAIN) to its end in `work` with `--scratch-dir` and `--json` of this run and then `args`;
 * `args` and `env` may name the run's other output files through `out`.
 */
export function runCommand(
  work: string,
  args: (out: (ext: string) => string) => string[],
  env: (out: (ext: string) => string) => Record<string, string | undefined> = () => ({}),
): CommandRun {
  const scratch = mkdtempSync(join(work, 'run-'));
  const out = (ext: string): string => `${scratch}.${ext}`;
  const read = (ext: string): string => {
    try {
      return readFileSync(out(ext), 'utf8');
    } catch {
      return ''; // the run wrote no such file
    }
  };
  return { ...runScript(MAIN, ['--scratch-dir', scratch, '--json', out('json'), ...args(out)], work, env(out)), scratch, out, read };
}
