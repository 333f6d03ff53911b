#!/usr/bin/env node
// Regenerates test/fixtures/*.json, the results files test/compare.test.ts compares, by REAL runs of the built
// command (node dist/cli/main.js) against the C driver double: nothing in them is written by hand.
//
//   node scripts/make-fixtures.mjs          (from anywhere; needs a C compiler, as `npm test` does)
//
// What it does, so that it works from a fresh clone:
// 1. builds dist/ with scripts/prepare.mjs, as npm's prepare step and test/global-setup.ts do;
// 2. builds the driver doubles with test/double/build.ts itself (the one place that knows the compiler flags,
//    the source hash and the build lock), imported through Vite's module runner (`runnerImport`, Vite is a
//    dependency of Vitest): no second copy of the cc command to drift, and no dependence on a test having run;
// 3. runs the command once per fixture with --size 8, in a temporary scratch folder, with the double's
//    environment (below), its copies paced (MAPPED_REG_DOUBLE_RATES: the registered copy at 2 GB/s, whatever
//    the machine, so that the fixtures' figures compare as one driver's would), and writes its --json output;
// 4. makes the files small and stable for git: `log` arrays dropped, the temporary scratch folder, the absolute
//    path of the double and the hostname replaced by fixed values. Everything else is as the command wrote it.
//
// A run's exit status is 1 when a check fails (rocm724, cuda-wrong-bytes): expected here; 2 or a missing JSON
// file is an error and stops the script.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'test', 'fixtures');

// 1. dist/, built as npm's prepare step and the tests build it
execFileSync(process.execPath, [join(root, 'scripts', 'prepare.mjs')], { cwd: root, stdio: 'inherit' });

// 2. the doubles
const { runnerImport } = await import('vite');
const { module: build } = await runnerImport(join(root, 'test', 'double', 'build.ts'), { configFile: false, logLevel: 'silent', root });
const doubles = build.buildDoubles();

const FIXTURES = [
  { file: 'cuda.json', args: ['--backend', 'cuda'], env: { MAPPED_REG_DOUBLE_PROFILE: 'cuda' } },
  { file: 'rocm724.json', args: ['--backend', 'hip'], env: { MAPPED_REG_DOUBLE_PROFILE: 'rocm724', MAPPED_REG_DOUBLE_HIP_VERSION: '70204000' } },
  { file: 'rocm-fixed.json', args: ['--backend', 'hip'], env: { MAPPED_REG_DOUBLE_PROFILE: 'rocm-fixed', MAPPED_REG_DOUBLE_HIP_VERSION: '70205000' } },
  { file: 'cuda-wrong-bytes.json', args: ['--backend', 'cuda'], env: { MAPPED_REG_DOUBLE_PROFILE: 'cuda', MAPPED_REG_DOUBLE_FAULTS: 'wrong_bytes' } },
];

/** The double's paced copies: the figures of every fixture are the same driver's, on any machine. */
const RATES = 'registered=2,pinned=2,pageable=0.5';
const SCRATCH = '/tmp/mapped-reg-fixtures';
const HOSTNAME = 'fixture-host';

/** Replaces the run's temporary and machine-specific strings everywhere in the result. */
function stable(value, scratch) {
  if (typeof value === 'string') {
    return value
      .split(scratch).join(SCRATCH)
      .split(doubles.cuda).join(relative(root, doubles.cuda))
      .split(doubles.hip).join(relative(root, doubles.hip));
  }
  if (Array.isArray(value)) return value.map((v) => stable(v, scratch));
  if (value && typeof value === 'object') {
    const o = {};
    for (const [k, v] of Object.entries(value)) if (k !== 'log') o[k] = stable(v, scratch);
    return o;
  }
  return value;
}

mkdirSync(out, { recursive: true });
const base = { ...process.env };
for (const k of Object.keys(base)) if (k.startsWith('MAPPED_REG_')) delete base[k];
const work = mkdtempSync(join(tmpdir(), 'mapped-reg-fixtures-'));
try {
  for (const f of FIXTURES) {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const json = join(work, f.file);
    const r = spawnSync(process.execPath, [join(root, 'dist', 'cli', 'main.js'), ...f.args, '--size', '8', '--scratch-dir', scratch, '--json', json], {
      env: { ...base, MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_HIP_LIBRARY: doubles.hip, MAPPED_REG_DOUBLE_RATES: RATES, ...f.env },
      encoding: 'utf8',
    });
    let text;
    try {
      text = readFileSync(json, 'utf8');
    } catch {
      text = undefined;
    }
    if (r.status !== 0 && r.status !== 1 || text === undefined) {
      process.stderr.write(`${f.file}: the command exited ${r.status ?? r.signal} without a results file\n${r.stdout}${r.stderr}`);
      process.exit(1);
    }
    const result = stable(JSON.parse(text), scratch);
    result.host.hostname = HOSTNAME;
    writeFileSync(join(out, f.file), `${JSON.stringify(result, null, 2)}\n`);
    const d = result.devices.map((x) => `${x.id} ${x.driver.name} ${x.driver.version} ${x.verdict.text}`).join('; ');
    process.stdout.write(`test/fixtures/${f.file}: exit ${r.status}, ${d}\n`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
