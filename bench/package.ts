// The package the bench belongs to: its root folder (where scratch/, dist/ and bench/native/ are) and its
// package.json (the name, version and tinybench version the results carry).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('bench: no package.json above the bench');
    dir = up;
  }
}

export const root = packageRoot();
export const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string; dependencies?: Record<string, string> };
