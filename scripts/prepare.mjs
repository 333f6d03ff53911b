#!/usr/bin/env node
// npm's prepare step: builds dist/ with tsc. An install that carries a built dist/ but no TypeScript (the GPU
// machine, where shared/device/pack.sh leaves the compiler out, and npx's self-install of this package there)
// keeps the dist/ it has instead of failing.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
let tsc;
try {
  tsc = join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');
} catch {
  if (existsSync(new URL('../dist/cli/main.js', import.meta.url))) {
    console.error('prepare: TypeScript is not installed here; keeping the dist/ already built');
    process.exit(0);
  }
  console.error('prepare: TypeScript is not installed and there is no dist/: run npm ci');
  process.exit(1);
}
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit', cwd: new URL('..', import.meta.url) });
