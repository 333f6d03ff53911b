#!/usr/bin/env node
// The build (npm's prepare step, `npm run build`, the tests' global setup): dist/ with tsc, the command's file made
// executable (tsc writes it 0644; npx runs the bin it links, which must be executable), and the results schema's
// validator compiled into dist/results/. An install that carries a built dist/ but no TypeScript (the GPU
// machine, where the device tool's packing leaves the compiler out, and npx's self-install of this package there)
// keeps the dist/ it has instead of failing.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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

// The results schema's validator, compiled here once with ajv's standalone code generation, so that no command
// compiles the schema again (results/read.ts loads it). Written to a temporary name, then renamed over the old one.
const { SCHEMA_OPTIONS, schemaPath, validatorPath } = await import('../dist/results/read.js');
const { Ajv } = require('ajv');
const standaloneCode = require('ajv/dist/standalone').default;
const ajv = new Ajv({ ...SCHEMA_OPTIONS, code: { source: true } });
const validator = standaloneCode(ajv, ajv.compile(JSON.parse(readFileSync(schemaPath(), 'utf8'))));
const partial = `${validatorPath()}.${process.pid}`;
writeFileSync(partial, `// Made by scripts/prepare.mjs from results/results.schema.json: do not edit.\n${validator}`);
renameSync(partial, validatorPath());

// An output whose source is gone (a file renamed or removed) would still be packed and could still be imported:
// remove it. Only those: dist/ is rebuilt in place, because `npm pack` in the tests runs this while other test
// files run the command from dist/.
const rootDir = new URL('..', import.meta.url).pathname;
const dist = join(rootDir, 'dist');
function removeOrphans(dir, rel) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const source = join(rootDir, rel, entry.name);
    if (entry.isDirectory()) removeOrphans(path, join(rel, entry.name));
    else if (entry.name.endsWith('.js') && !existsSync(source.replace(/\.js$/, '.ts'))) rmSync(path);
  }
}
removeOrphans(dist, '');
