#!/usr/bin/env node
// Applies each mutation the issue names to src/, one at a time, runs the model's tests, and writes which tests
// failed to docs/mutations.md. The source is restored after each run (and on any error).
// Usage: node scripts/mutations.mjs
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const probe = 'src/probe.ts';
const refCheck = `    for (const i of [0, 1] as const) {
      const d = refs.diff(windows[i].bytes, i * w);
      if (d >= 0) return report(Inconclusive(\`the reference differs from the map at offset \${i * w + d}: nothing was registered\`), lines, w);
    }
`;
const afterRegister = `      registered.push(i);
    }
`;
/** Replaces `pattern` once, or throws: a pattern that no longer matches the source would make a mutation a no-op. */
const once = (s, pattern, by) => {
  if (!s.includes(pattern)) throw new Error(`a mutation's pattern is stale: ${JSON.stringify(pattern.slice(0, 80))}`);
  return s.replace(pattern, by);
};
const mutations = [
  ['margin 0.8 -> 0.7', probe, (s) => s.replace('DEFAULT_MIN_RELATIVE_SPEED = 0.8', 'DEFAULT_MIN_RELATIVE_SPEED = 0.7')],
  ['margin 0.8 -> 0.9', probe, (s) => s.replace('DEFAULT_MIN_RELATIVE_SPEED = 0.8', 'DEFAULT_MIN_RELATIVE_SPEED = 0.9')],
  ['unit 64 KiB -> 32 KiB', probe, (s) => s.replace('UNIT = 64 * 1024', 'UNIT = 32 * 1024')],
  ['unit 64 KiB -> 128 KiB', probe, (s) => s.replace('UNIT = 64 * 1024', 'UNIT = 128 * 1024')],
  ['best of 7 -> best of 6', probe, (s) => s.replace('DEFAULT_RUNS = 7', 'DEFAULT_RUNS = 6')],
  ['best of 7 -> best of 8', probe, (s) => s.replace('DEFAULT_RUNS = 7', 'DEFAULT_RUNS = 8')],
  ['checked-release tries 3 -> 2', probe, (s) => s.replace('CHECKED_RELEASE_TRIES = 3', 'CHECKED_RELEASE_TRIES = 2')],
  ['checked-release tries 3 -> 4', probe, (s) => s.replace('CHECKED_RELEASE_TRIES = 3', 'CHECKED_RELEASE_TRIES = 4')],
  ['clean-up tries 2 -> 1', probe, (s) => s.replace('CLEANUP_RELEASE_TRIES = 2', 'CLEANUP_RELEASE_TRIES = 1')],
  ['clean-up tries 2 -> 3', probe, (s) => s.replace('CLEANUP_RELEASE_TRIES = 2', 'CLEANUP_RELEASE_TRIES = 3')],
  ['reference check moved after the registration', probe, (s) => once(once(s, refCheck, ''), afterRegister, afterRegister + refCheck)],
];

const rows = [];
// Vitest's global setup builds dist/ from the (mutated) sources: build it again from the real ones at the end.
process.on('exit', () => execFileSync(process.execPath, ['scripts/prepare.mjs'], { stdio: 'inherit' }));
for (const [name, file, mutate] of mutations) {
  const original = readFileSync(file, 'utf8');
  const mutated = mutate(original);
  if (mutated === original) throw new Error(`mutation "${name}" changed nothing: its pattern is stale`);
  const out = join(tmpdir(), `mutation-${process.pid}.json`);
  try {
    writeFileSync(file, mutated);
    try {
      execFileSync('npx', ['vitest', 'run', 'test/probe.test.ts', 'test/static.test.ts', 'test/verdict.test.ts', 'test/ops.test.ts', '--reporter=json', `--outputFile=${out}`], { stdio: 'ignore' });
    } catch {
      // vitest exits 1 when a test fails: that is the expected outcome
    }
    const result = JSON.parse(readFileSync(out, 'utf8'));
    const failed = result.testResults.flatMap((f) => f.assertionResults.filter((a) => a.status === 'failed').map((a) => `${f.name.replace(/^.*\/test\//, 'test/')}: ${a.fullName}`));
    rows.push([name, failed]);
    console.log(`${failed.length ? 'caught ' : 'SURVIVED'} ${name} (${failed.length} failing tests)`);
  } finally {
    writeFileSync(file, original);
    rmSync(out, { force: true });
  }
}

const lines = [
  '# Mutations of the model and the tests that catch them',
  '',
  'Made by `node scripts/mutations.mjs`: each mutation is applied to `src/` alone, the model tests run, and the',
  'source is restored. A mutation no test catches would be listed as SURVIVED.',
  '',
];
for (const [name, failed] of rows) {
  lines.push(`## ${name}: ${failed.length ? `caught by ${failed.length} test(s)` : 'SURVIVED'}`, '');
  for (const t of failed) lines.push(`- ${t}`);
  lines.push('');
}
writeFileSync('docs/mutations.md', lines.join('\n'));
if (rows.some(([, f]) => f.length === 0)) process.exitCode = 1;
