// scripts/h200-signals.sh, the H200 signal scenarios (SIGKILL of the CUDA device's process while it writes its
// scratch file, during the probe, between two hazard checks; SIGTERM of the command during the probe), run here
// against the CUDA driver double: the script the lead runs on the GPU machine is exercised in CI with the same
// mechanism (an outside kill -9 watching the scratch folder and /proc/PID/maps; the MAPPED_REG_FORCE_KILL hook
// between two checks).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ROOT, cleanEnv } from './support/command.js';
import { buildDoubles } from './double/build.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-h200-script-'));
let doubles: { cuda: string; hip: string };
beforeAll(() => {
  doubles = buildDoubles();
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

it('the four scenarios: every check reported (from the first process or its re-run), SIGTERM exits 143, nothing left, the second run Usable', () => {
  const out = join(work, 'out');
  const scratch = mkdtempSync(join(work, 'scratch-'));
  const r = spawnSync('bash', [join(ROOT, 'scripts', 'h200-signals.sh'), out], {
    cwd: ROOT,
    encoding: 'utf8',
    // a loaded machine may slow the double's registered copy: the margin is not what is tested here
    // (and the caller's MAIN, SIZE... change nothing: the script reads only its own MAPPED_REG_SIGNALS_*)
    env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_SIGNALS_SIZE: '64', MAPPED_REG_SIGNALS_SCRATCH: scratch, MAPPED_REG_SIGNALS_ARGS: '--min-relative-speed 0.05', MAIN: join(work, 'no-such-main.js'), SIZE: 'x' }),
    timeout: 280_000,
  });
  // the script's own words first, should it have stopped before writing its table
  expect(existsSync(join(out, 'summary.tsv')), `exit ${r.status}: ${r.stderr}${r.stdout}`).toBe(true);
  const rows = readFileSync(join(out, 'summary.tsv'), 'utf8').trimEnd().split('\n').slice(1).map((l) => l.split('\t'));
  const by = Object.fromEntries(rows.map((r) => [r[0], r]));
  expect(Object.keys(by)).toEqual(['kill-scratch', 'kill-probe', 'kill-between', 'term-probe']);
  for (const name of ['kill-scratch', 'kill-probe', 'kill-between']) {
    const [, moment, exit, checks, byProcess, , verdict, json, left, scratchLeft, second, ok] = by[name]!;
    expect(moment, name).not.toBe('-');
    expect([exit, checks, verdict, json, left, scratchLeft], name).toEqual(['0', '33', 'Usable', 'complete', '0', '0']);
    // the scratch file is written before any check (while the runner starts Vitest): killed then, the device's
    // second process runs every check; later, the first process has reported some
    expect(byProcess, name).toMatch(name === 'kill-scratch' ? /^(p1:\d+ )?p2:\d+$/ : /^p1:\d+ p2:\d+$/);
    expect(second, name).toMatch(/^Usable \(exit 0, 33 checks\)$/);
    expect(ok, name).toBe('yes');
  }
  const [, moment, exit, , , , , json, left, scratchLeft, second, ok] = by['term-probe']!;
  expect([moment, exit, json, left, scratchLeft, second, ok]).toEqual(['probe: region mapped', '143', 'incomplete', '0', '0', 'Usable (exit 0, 33 checks)', 'yes']);
  expect(r.stdout).toMatch(/^scenario +moment +exit/m);
  expect(r.status, r.stderr).toBe(0);
  expect(readdirSync(scratch)).toEqual([]);
  for (const name of ['kill-scratch', 'kill-probe', 'kill-between', 'term-probe']) {
    expect(readdirSync(out)).toEqual(expect.arrayContaining([`${name}.log`, `${name}.json`, `${name}-after.json`]));
  }
}, 300_000);
