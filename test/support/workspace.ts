// A command test file's surroundings: a temp folder of its own (removed after all its tests) and the C driver
// doubles, built before its tests run.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { buildDoubles, type DoublePaths } from '../double/build.js';
import { cleanEnv } from './command.js';

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
