// The conformance suites as the command runs them: each device in its own process, through Vitest, against the
// C driver double (CUDA and HIP at once), with crashes and hangs contained.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROCM724_FAILS } from './support/profiles.js';
import { cleanEnv, MAIN, NO_HAZARDS } from './support/command.js';
import { workspace } from './support/workspace.js';

const main = MAIN;
const { work, doubles } = workspace('mapped-reg-suites-');

interface Check {
  id: string;
  status: string;
  message?: string;
  observed?: string;
  data?: Record<string, unknown>;
}
interface Device {
  id: string;
  verdict: { kind: string; refusal?: string };
  checks: Check[];
  processes?: number;
  errors?: string[];
  timing?: { registeredGBps: number; stagedGBps: number };
}

/** The double's copies paced (registered 2 GB/s, page-locked 1.5, pageable 0.5): a Usable verdict and timing.margin's pass are facts of the test, not of this machine's load. */
const RATES = 'registered=2,pinned=1.5,pageable=0.5';

function runCli(args: string[], env: Record<string, string>): { code: number | null; stdout: string; stderr: string; devices: Device[] } {
  const scratch = mkdtempSync(join(work, 'scratch-'));
  const json = join(work, `r-${Math.random().toString(36).slice(2)}.json`);
  const r = spawnSync(process.execPath, [main, '--scratch-dir', scratch, '--size', '8', '--json', json, ...args], {
    env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_HIP_LIBRARY: doubles.hip, MAPPED_REG_DOUBLE_RATES: RATES, ...env }),
    encoding: 'utf8',
  });
  expect(readdirSync(scratch)).toEqual([]); // no scratch file left behind, crash or not
  const devices = (JSON.parse(readFileSync(json, 'utf8')) as { devices: Device[] }).devices;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, devices };
}

const byId = (d: Device): Record<string, string> => Object.fromEntries(d.checks.map((c) => [c.id, c.status]));
const CORE = ['static.verdict', 'probe.verdict', 'probe.release', 'timing.margin'];

describe('the hazard suite through the command', () => {
  it('CUDA profile: every hazard check passes; ROCm 7.2.4 profile: exactly the five behaviours of the spec fail', () => {
    const r = runCli(['--backend', 'cuda', '--backend', 'hip'], { MAPPED_REG_DOUBLE_PROFILE: 'rocm724' });
    const cuda = r.devices.find((d) => d.id === 'cuda:0')!;
    const hip = r.devices.find((d) => d.id === 'hip:0')!;
    const hazards = (d: Device): Check[] => d.checks.filter((c) => c.id.startsWith('hazard.'));
    // the 15 hazards and the 13 reference checks (docs/reference-checks.md): on one GPU the ones that need two are
    // named skips, never passes
    const skipped = (d: Device): string[] => hazards(d).filter((c) => c.status === 'skip').map((c) => c.id);
    expect(hazards(cuda)).toHaveLength(28);
    expect(hazards(cuda).filter((c) => c.status !== 'pass' && c.status !== 'skip').map((c) => `${c.id} ${c.status} ${c.observed ?? c.message}`)).toEqual([]);
    expect(skipped(cuda)).toEqual(['hazard.every_gpu_at_once']);
    expect(hazards(hip)).toHaveLength(28);
    // HIP has no read-only registration attribute, and one HIP device has no second context: those do not apply
    expect(skipped(hip)).toEqual(['hazard.readonly_register_attribute', 'hazard.portable_second_context', 'hazard.every_gpu_at_once']);
    expect(hazards(hip).filter((c) => c.status !== 'pass' && c.status !== 'skip').map((c) => c.id).sort()).toEqual([...ROCM724_FAILS].sort());
    expect(hazards(hip).filter((c) => c.status === 'fail')).toHaveLength(5);
    // what the driver kept is reported with the check that left it, never unmapped
    expect(hip.checks.find((c) => c.id === 'hazard.double_registration_refused')!.message).toMatch(/stay registered and mapped until the device's process ends/);
    expect(cuda.checks.every((c) => !/stay registered/.test(c.message ?? ''))).toBe(true);
    // the probe on an ext4 scratch file works on ROCm 7.2.4 all the same: the lies are in the hazards
    expect(hip.verdict.kind).toBe('Usable');
    expect(r.code).toBe(1);
  });
});

describe('the suites against the doubles', () => {
  it('a CUDA and a fixed-ROCm HIP device both probe Usable; every core check passes on each', () => {
    const r = runCli([...NO_HAZARDS, '--backend', 'cuda', '--backend', 'hip'], { MAPPED_REG_DOUBLE_PROFILE: 'rocm-fixed' });
    expect(r.stderr).toBe('');
    const ids = r.devices.map((d) => d.id);
    expect(ids).toEqual(['cuda:0', 'hip:0']);
    for (const d of r.devices) {
      expect(d.verdict.kind).toBe('Usable');
      for (const id of CORE) expect(byId(d)[id], `${d.id} ${id}`).toBe('pass');
      expect(byId(d)['timing.link']).toBe('skip'); // the double has no PCIe link in sysfs
      expect(d.timing!.registeredGBps).toBeGreaterThan(0);
      expect(d.processes).toBe(1);
    }
  });

  it('static.verdict proves that a refused device reaches no op (integrated double)', () => {
    const r = runCli([...NO_HAZARDS, '--device', 'cuda:0'], { MAPPED_REG_DOUBLE_FAULTS: 'integrated' });
    const d = r.devices[0]!;
    expect(d.verdict).toMatchObject({ kind: 'Refused', refusal: 'Integrated_gpu' });
    const s = d.checks.find((c) => c.id === 'static.verdict')!;
    expect(s.status).toBe('pass');
    expect(s.data).toMatchObject({ opsOpened: 0 });
    expect(byId(d)['probe.verdict']).toBe('skip');
    expect(r.code).toBe(0);
  });

  it('wrong bytes: probe.verdict fails with Refused Wrong_bytes, the run exits 1', () => {
    const r = runCli([...NO_HAZARDS, '--device', 'cuda:0'], { MAPPED_REG_DOUBLE_FAULTS: 'wrong_bytes' });
    expect(r.devices[0]!.verdict).toMatchObject({ kind: 'Refused', refusal: 'Wrong_bytes' });
    expect(byId(r.devices[0]!)['probe.verdict']).toBe('fail');
    expect(r.code).toBe(1);
  });

  it('slow registered copies: timing.margin fails and the verdict is Too_slow', () => {
    // paced at a sixth of page-locked: never faster, whatever the load (the slow_registered fault would only add
    // to a memcpy that the pacing then waits out)
    const r = runCli([...NO_HAZARDS, '--device', 'cuda:0'], { MAPPED_REG_DOUBLE_RATES: 'registered=0.25,pinned=1.5,pageable=0.5' });
    expect(r.devices[0]!.verdict.kind).toBe('Too_slow');
    expect(byId(r.devices[0]!)['timing.margin']).toBe('fail');
    expect(byId(r.devices[0]!)['probe.verdict']).toBe('warn');
  });

  it('a forced crash in one check is reported as crash, with its signal, while the other checks and the other device still report', () => {
    const r = runCli([...NO_HAZARDS, '--backend', 'cuda', '--backend', 'hip', '--backend', 'cpu'], { MAPPED_REG_DOUBLE_PROFILE: 'rocm-fixed', MAPPED_REG_FORCE_CRASH: 'cuda:0/probe.release' });
    const cuda = r.devices.find((d) => d.id === 'cuda:0')!;
    const crashed = cuda.checks.find((c) => c.id === 'probe.release')!;
    expect(crashed.status).toBe('crash');
    expect(crashed.message).toMatch(/SIGSEGV/);
    expect(byId(cuda)['timing.margin']).toBe('pass'); // after the crash, in a new process
    expect(byId(cuda)['static.verdict']).toBe('pass');
    expect(cuda.processes).toBe(2);
    const hip = r.devices.find((d) => d.id === 'hip:0')!;
    for (const id of CORE) expect(byId(hip)[id]).toBe('pass');
    expect(r.devices.find((d) => d.id === 'cpu')!.checks.length).toBeGreaterThan(0);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/cuda:0 probe\.release crash/);
  });

  it('a check that hangs past --timeout is killed and reported as timeout; the rest still run', () => {
    const r = runCli([...NO_HAZARDS, '--device', 'cuda:0', '--timeout', '2'], { MAPPED_REG_FORCE_HANG: 'probe.release' });
    const d = r.devices[0]!;
    expect(byId(d)['probe.release']).toBe('timeout');
    expect(byId(d)['timing.margin']).toBe('pass');
    expect(r.code).toBe(1);
  });
});

describe('a runner stuck outside any check', () => {
  it('is killed after --timeout (plus a grace for starting) with no progress, reported as an error of its device; the other devices report', () => {
    const r = runCli([...NO_HAZARDS, '--backend', 'cuda', '--backend', 'cpu', '--timeout', '2'], { MAPPED_REG_FORCE_HANG: 'cuda:0/@runner' });
    const cuda = r.devices.find((d) => d.id === 'cuda:0')!;
    expect(cuda.errors?.join('\n')).toMatch(/no progress for 12 s outside any check/); // --timeout + 10 s of grace
    expect(cuda.checks).toEqual([]);
    expect(r.devices.find((d) => d.id === 'cpu')!.checks.length).toBeGreaterThan(0);
    expect(r.code).toBe(1);
  });
});

describe('SIGINT', () => {
  it('during the discovery: the discovering processes are stopped, nothing was checked, the JSON says incomplete, exit 130', async () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const json = join(work, 'interrupted-discovery.json');
    const child = spawn(process.execPath, [main, '--size', '8', '--scratch-dir', scratch, '--json', json, '--timeout', '60'], {
      env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_FORCE_HANG: '@discovery' }),
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    // interrupt once the command has started its discovering processes: its stop listener is in place before it
    // starts them (cli/run.ts), and a process it starts after the interrupt is killed at once (cli/orchestrate.ts).
    // The spare runner (cli/spare-runner.ts) is a child from the command's start, before that listener: a discovering
    // process started with its options in its environment (a group after the first) is what says it is in place.
    const poll = setInterval(() => {
      let children: string[] = [];
      try {
        children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/).filter((p) => p !== '');
      } catch {
        // not there yet, or gone
      }
      const discovering = children.some((p) => {
        try {
          return readFileSync(`/proc/${p}/environ`, 'utf8').includes('"discover":');
        } catch {
          return false;
        }
      });
      if (discovering) {
        clearInterval(poll);
        child.kill('SIGINT');
      }
    }, 20);
    const code = await new Promise<number | null>((done) => child.on('close', (c) => done(c)));
    clearInterval(poll);
    // not the stall watchdog (--timeout 60 and its grace are past the test's own 60 s): the interrupt stopped them
    expect(code).toBe(130);
    expect(out).not.toMatch(/no progress/);
    expect(out).toMatch(/interrupted/);
    expect(out).not.toMatch(/checks \(/);
    const result = JSON.parse(readFileSync(json, 'utf8')) as { incomplete?: boolean; devices: unknown[] };
    expect(result.incomplete).toBe(true);
    expect(result.devices).toEqual([]);
    expect(readdirSync(scratch)).toEqual([]);
  });

  it('stops every device, removes scratch files, writes what finished marked incomplete, exits 130', async () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const json = join(work, 'interrupted.json');
    const child = spawn(process.execPath, [main, '--device', 'cuda:0', '--size', '8', '--scratch-dir', scratch, '--json', json, '--timeout', '60'], {
      env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_FORCE_HANG: 'probe.release' }),
    });
    let out = '';
    const code = await new Promise<number | null>((done) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        // the run (and its stop listener) has begun once probe.verdict reported, and probe.release hangs: interrupt then
        if (/cuda:0 probe\.verdict pass/.test(out) && !child.killed) child.kill('SIGINT');
      });
      child.on('close', (c) => done(c));
    });
    expect(code).toBe(130);
    expect(out).toMatch(/interrupted/);
    const result = JSON.parse(readFileSync(json, 'utf8')) as { incomplete?: boolean; devices: (Device & { incomplete?: boolean })[] };
    expect(result.incomplete).toBe(true);
    const d = result.devices[0]!;
    expect(d.incomplete).toBe(true);
    expect(byId(d)).toEqual({ 'static.verdict': 'pass', 'probe.verdict': 'pass' });
    expect(readdirSync(scratch)).toEqual([]);
    expect(readdirSync(work).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});
