#!/usr/bin/env node
// The build (npm's prepare step, `npm run build`, the tests' global setup): dist/ with tsc, and the command's
// file made executable (tsc writes it 0644; npx runs the bin it links, which must be executable). An install that carries a built dist/ but no TypeScript (the GPU
// machine, where shared/device/pack.sh leaves the compiler out, and npx's self-install of this package there)
// keeps the dist/ it has instead of failing.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync } from 'node:fs';
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
chmodSync(new URL('../dist/cli/main.js', import.meta.url), 0o755);
