// scripts/h200/acceptance.sh, every H200 run of the open acceptance in one or two calls of the device tool: its
// steps chosen by name (an unknown one refused before anything runs), each kept as it ends, and its `profile` step
// (scripts/h200/cpu-profile.mjs in every Node.js process of a run, read by profile-summary.mjs), here against the
// CUDA driver double.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ROOT, cleanEnv } from './support/command.js';
import { buildDoubles } from './double/build.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-acceptance-script-'));
let doubles: { cuda: string; hip: string };
beforeAll(() => {
  doubles = buildDoubles();
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const script = join(ROOT, 'scripts', 'h200', 'acceptance.sh');
const acceptance = (out: string, steps: string[], tmp: string) =>
  spawnSync('bash', [script, out, ...steps], {
    cwd: ROOT,
    encoding: 'utf8',
    env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_DOUBLE_RATES: 'registered=50,pinned=50,pageable=8', TMPDIR: tmp }),
    timeout: 170_000,
  });

/** The steps `out` names, each "<step>: exit <status>" (its seconds left out), and the folder its all.tgz is unpacked in. */
function stepsRun(out: string, unpackIn: string): { steps: string[]; x: string } {
  const steps = readFileSync(join(out, 'steps.txt'), 'utf8').trimEnd().split('\n').map((l) => l.replace(/ in \d+ s$/, ''));
  spawnSync('mkdir', ['-p', unpackIn]);
  expect(spawnSync('tar', ['-C', unpackIn, '-xzf', join(out, 'all.tgz')]).status).toBe(0);
  return { steps, x: unpackIn };
}

it('refuses a step it does not have with exit 2, before it makes or runs anything', () => {
  const tmp = mkdtempSync(join(work, 'tmp-'));
  const r = acceptance(join(work, 'refused'), ['default', 'bench'], tmp);
  expect(r.status).toBe(2);
  expect(r.stderr.trim()).toBe("acceptance.sh: no step 'bench' (steps: default bench-ab signals reference reference-checks busy quiet-pairs scale scale-h200-rates profile profile-summary exit-time lock-contention)");
  expect(existsSync(join(work, 'refused'))).toBe(false);
  expect(readdirSync(tmp)).toEqual([]);
});

it('runs the steps named and no other; the profile step writes a CPU profile of each Node.js process of the run and its summary', () => {
  const tmp = mkdtempSync(join(work, 'tmp-'));
  const out = join(work, 'out');
  const r = acceptance(out, ['profile'], tmp);
  expect(r.status, r.stderr).toBe(0);
  const { steps, x } = stepsRun(out, join(work, 'x'));
  expect(steps).toEqual(['profile: exit 0', 'profile-summary: exit 0']);
  const profiles = readdirSync(join(x, 'profile')).filter((f) => f.endsWith('.cpuprofile'));
  // the command, the CUDA device's runner, the OpenCL/Vulkan/CPU group's: each its own main thread
  expect(profiles.length).toBeGreaterThanOrEqual(3);
  for (const f of profiles) expect(JSON.parse(readFileSync(join(x, 'profile', f), 'utf8')).samples.length, f).toBeGreaterThan(0);
  const summary = readFileSync(join(x, 'profile-summary.txt'), 'utf8');
  expect(summary.match(/^\d+\.cpuprofile: \d+ ms profiled/gm)).toHaveLength(profiles.length);
  // the GPU's runner: the probe, inclusive of what it called
  expect(summary).toMatch(/^ +\d+\.\d +probeOnce dist\/suites\/context\.js:\d+$/m);
  const run = JSON.parse(readFileSync(join(x, 'profile.json'), 'utf8')) as { devices: { id: string; verdict: { kind: string } }[] };
  expect(run.devices.find((d) => d.id === 'cuda:0')?.verdict.kind).toBe('Usable');
  expect(readdirSync(tmp)).toEqual([]);
}, 180_000);

it('the exit-time step: each mode of a CUDA process\'s end timed, 5 times (over the double here)', () => {
  const tmp = mkdtempSync(join(work, 'tmp-'));
  const out = join(work, 'out-exit');
  const r = acceptance(out, ['exit-time'], tmp);
  expect(r.status, r.stderr).toBe(0);
  const { steps, x } = stepsRun(out, join(work, 'x-exit'));
  expect(steps).toEqual(['exit-time: exit 0']);
  const exits = readFileSync(join(x, 'exit-time.txt'), 'utf8').trimEnd().split('\n');
  expect(exits).toHaveLength(4 * 5);
  for (const mode of ['live', 'released', 'reset', 'quick']) expect(exits.filter((l) => l.startsWith(`${mode} `) && l.endsWith('(status 0)'))).toHaveLength(5);
  expect(readdirSync(tmp)).toEqual([]);
}, 180_000);

it('scripts/lock-contention.mjs (the lock-contention step, there with 8 devices and 5 rounds): when the last timed copies were done, and each device\'s wait; its folder removed', () => {
  const tmp = mkdtempSync(join(work, 'tmp-'));
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'lock-contention.mjs'), '3', '2'], { cwd: ROOT, encoding: 'utf8', env: cleanEnv({ TMPDIR: tmp }), timeout: 120_000 });
  expect(r.status, r.stderr).toBe(0);
  const lines = r.stdout.trimEnd().split('\n');
  expect(lines[0]).toBe('3 devices, timed copies 95 ms each (least for the last one: 285 ms)');
  expect(lines.slice(1)).toHaveLength(2);
  for (const l of lines.slice(1)) {
    const m = /^the last timed copies done at (\d+) ms, every device done at (\d+) ms; the timed copies' waits, ms:( \d+){3}$/.exec(l);
    expect(m, l).not.toBeNull();
    // the timed copies never overlap: the last is done no sooner than all three one after the other
    expect(Number(m![1])).toBeGreaterThanOrEqual(285);
  }
  expect(readdirSync(tmp)).toEqual([]);
}, 180_000);
