// Once per Vitest run, before any test file: build dist/ (the command and the suites run from it, in their own
// processes) and the driver double, so that no two test files build them at the same time.
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { buildDoubles } from './double/build.js';

export default function setup(): void {
  const root = resolve(import.meta.dirname, '..');
  execFileSync(process.execPath, [resolve(root, 'scripts/prepare.mjs')], { cwd: root, stdio: 'inherit' });
  buildDoubles();
}
