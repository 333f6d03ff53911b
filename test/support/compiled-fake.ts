// A fake API library (a graphics loader's stand-in) compiled with cc for one test file: what the real library on
// this machine cannot show.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';

export interface CompiledFake {
  /** The test file's temp folder (`prefix`XXXXXX under the system's). */
  dir: string;
  /** The compiled library in it. */
  library: string;
}

/**
 * Registers a test file's hooks: before all, `source` compiled into `dir`/`name`; after each test, the variables
 * `envNames` given back as they were; after all, the folder removed. Filled in by beforeAll: read it inside tests only.
 */
export function compiledFake(prefix: string, source: string, name: string, envNames: string[]): CompiledFake {
  const fake = { dir: '', library: '' };
  const saved = Object.fromEntries(envNames.map((n) => [n, process.env[n]]));
  beforeAll(() => {
    fake.dir = mkdtempSync(join(tmpdir(), prefix));
    fake.library = join(fake.dir, `${name}.so`);
    writeFileSync(join(fake.dir, `${name}.c`), source);
    execFileSync(process.env.CC ?? 'cc', ['-shared', '-fPIC', '-O1', '-o', fake.library, join(fake.dir, `${name}.c`)], { stdio: 'pipe' });
  });
  afterEach(() => {
    for (const [n, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[n];
      else process.env[n] = value;
    }
  });
  afterAll(() => {
    if (fake.dir) rmSync(fake.dir, { recursive: true, force: true });
  });
  return fake;
}
