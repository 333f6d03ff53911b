// Once per Vitest run, before any test file: build dist/ (the command and the suites run from it, in their own
// processes) and the driver double, so that no two test files build them at the same time.
//
// The tests make their scratch folders under the system's temp folder; a run refuses scratch on tmpfs or ramfs
// (cli/options.ts). Where TMPDIR is tmpfs (/tmp on Fedora or Arch), the tests' temp folder is moved to a disk:
// the package's scratch/ (ignored by git), for this Vitest run and its workers, removed after it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { buildDoubles } from './double/build.js';

/** statfs's f_type of tmpfs and ramfs (linux/magic.h). */
const MEMORY_FS = [0x01021994, 0x858458f6];

export default function setup(): (() => void) | undefined {
  const root = resolve(import.meta.dirname, '..');
  execFileSync(process.execPath, [resolve(root, 'scripts/prepare.mjs')], { cwd: root, stdio: 'inherit' });
  buildDoubles();
  if (!MEMORY_FS.includes(statfsSync(tmpdir()).type)) return undefined;
  const onDisk = mkdtempSync(resolve(root, 'scratch', '.tests-tmp-'));
  process.env.TMPDIR = onDisk;
  return () => rmSync(onDisk, { recursive: true, force: true });
}
