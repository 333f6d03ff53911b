// hazard.truncate_contained with its child started early (suites/hazards/truncate-early.ts), against the driver
// doubles through the real bindings: the same outcomes as the child started at the check (the path every test of
// test/hazards.test.ts takes), the child's wait for the timing lock told as the host's and bounded (a HostFault),
// the fallback where the early child failed to start; and, through the command, that a device's runner starts it
// early, and that nothing is left behind when the runner dies before the check or the check is not selected.
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { CheckContext, Observation } from '../suites/check.js';
import type { HostWait } from '../suites/measure.js';
import { handOverTruncateEarly, truncateContainedCheck } from '../suites/hazards/file-changes.js';
import { runEarlyTruncateChild, startTruncateChildEarly, startTruncateChildFor, stopTruncateChildEarly } from '../suites/hazards/truncate-early.js';
import { ownChildPids } from '../bindings/own-children.js';
import { doubleEnv, loadDouble } from './support/drivers.js';
import { holdLock } from './support/lock-holder.js';
import { commandLine, running, waitUntil } from './support/processes.js';
import { diskTempDir } from './support/temp-dir.js';
import { ROOT } from './support/command.js';

const work = diskTempDir('mapped-reg-truncate-early-');
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Environment set for one test, restored after it. */
const saved = new Map<string, string | undefined>();
function setEnv(env: Record<string, string | undefined>): void {
  for (const [k, v] of Object.entries(env)) {
    if (!saved.has(k)) saved.set(k, process.env[k]);
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
}
afterEach(() => {
  for (const [k, v] of saved) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  saved.clear();
});

interface Device {
  ctx: CheckContext;
  library: string;
  libraryEnv: string;
  scratch: string;
}

/** A device of the double configured as asked, its check context, and the environment its children see. */
function device(backend: 'cuda' | 'hip', profile: string, faults?: string): Device {
  const loaded = loadDouble(backend, { profile, ...(faults ? { faults } : {}) });
  const d = loaded.discovery.devices.find((x) => x.backend === backend)!;
  const scratch = mkdtempSync(join(work, 'scratch-'));
  // the children read the double's configuration from their environment, as the runner's children do
  setEnv(doubleEnv({ profile, ...(faults ? { faults } : {}) }));
  const ctx: CheckContext = {
    device: d,
    options: { device: d.id, scratchDir: scratch, sizeMiB: 4, runs: 3, minRelativeSpeed: 0.8, skip: [], quiet: { waitS: 0, maxDrop: 0.1 } },
    log: () => {},
  };
  return { ctx, library: loaded.path, libraryEnv: backend === 'cuda' ? 'MAPPED_REG_CUDA_LIBRARY' : 'MAPPED_REG_HIP_LIBRARY', scratch };
}

const start = (d: Device, lockLimitMs = 60_000): boolean => startTruncateChildEarly({ device: d.ctx.device.id, library: d.library, libraryEnv: d.libraryEnv, lockLimitMs });

/** The observation without what differs between two children of the same outcome (their times, how they started). */
function comparable(o: Observation): unknown {
  const { child, childStartedEarly: _e, early: _x, notEarly: _n, ...rest } = (o.data ?? {}) as Record<string, unknown>;
  const { ms: _ms, ...c } = (child ?? {}) as Record<string, unknown>;
  return { status: o.status, observed: o.observed, message: o.message, data: { ...rest, child: c } };
}

const data = (o: Observation): Record<string, unknown> => (o.data ?? {}) as Record<string, unknown>;

describe('the same outcomes as a child started at the check', () => {
  it.each([
    ['cuda', 'cuda', undefined, 'pass'],
    ['hip', 'rocm724', undefined, 'pass'],
    ['cuda', 'cuda', 'register_max=16777216', 'fail'],
  ] as const)('%s double, profile %s, faults %s: %s, the child started early', (backend, profile, faults, status) => {
    const d = device(backend, profile, faults);
    const before = truncateContainedCheck.run(d.ctx);
    expect(data(before)).toMatchObject({ childStartedEarly: false, notEarly: 'no child was started early in this process' });
    expect(start(d)).toBe(true);
    const after = truncateContainedCheck.run(d.ctx);
    expect(data(after).childStartedEarly).toBe(true);
    expect(data(after).early).toMatchObject({ readyAtCheck: expect.any(Boolean), lockWaitAtCheckMs: expect.any(Number) });
    expect(after.status ?? 'pass').toBe(status);
    expect(comparable(after)).toEqual(comparable(before));
    // the early child is taken once: the next run of the check starts its own
    expect(data(truncateContainedCheck.run(d.ctx)).childStartedEarly).toBe(false);
    expect(readdirSync(d.scratch)).toEqual([]);
  }, 120_000);

  it('the cuda profile: the small copy still kills the early child with SIGBUS, the large one is refused', () => {
    const d = device('cuda', 'cuda');
    start(d);
    const o = truncateContainedCheck.run(d.ctx);
    expect(data(o)).toMatchObject({ childStartedEarly: true, child: { status: null, signal: 'SIGBUS', timedOut: false }, large: { code: 1, name: 'CUDA_ERROR_INVALID_VALUE' } });
    expect(o.observed).toMatch(/16 MiB copy from the cut tail: 1 CUDA_ERROR_INVALID_VALUE; .*SIGBUS.*the run went on/);
  }, 120_000);
});

describe('handed over before the check (at the start of hazard.context_reset)', () => {
  it("the child runs with the file made and handed over before the check: the same outcome, the check takes its end and removes the file", () => {
    const d = device('cuda', 'cuda');
    const at = truncateContainedCheck.run(d.ctx);
    start(d);
    handOverTruncateEarly(d.ctx);
    handOverTruncateEarly(d.ctx); // once
    expect(readdirSync(d.scratch)).toHaveLength(1); // the file's folder, until the check
    const before = truncateContainedCheck.run(d.ctx);
    expect(data(before)).toMatchObject({ childStartedEarly: true, early: { handedOverBeforeCheck: true } });
    expect(comparable(before)).toEqual(comparable(at));
    expect(readdirSync(d.scratch)).toEqual([]);
  }, 120_000);

  it('no child started early: nothing is made or handed over, and the check runs its own as before', () => {
    const d = device('cuda', 'cuda');
    handOverTruncateEarly(d.ctx);
    expect(readdirSync(d.scratch)).toEqual([]);
    const o = truncateContainedCheck.run(d.ctx);
    expect(data(o)).toMatchObject({ childStartedEarly: false, child: { signal: 'SIGBUS' } });
    expect(readdirSync(d.scratch)).toEqual([]);
  }, 120_000);
});

describe('fallback and the host', () => {
  it('an early child that failed to start (its driver not found): the check starts its own, as before, and says why', () => {
    const d = device('cuda', 'cuda');
    expect(startTruncateChildEarly({ device: d.ctx.device.id, library: join(work, 'no-such-driver.so'), libraryEnv: d.libraryEnv, lockLimitMs: 60_000 })).toBe(true);
    const o = truncateContainedCheck.run(d.ctx);
    expect(o.status ?? 'pass').toBe('pass');
    expect(data(o).childStartedEarly).toBe(false);
    expect(data(o).notEarly).toMatch(/^the child started early failed to start: device cuda:0 not found/);
    expect(data(o)).toMatchObject({ child: { signal: 'SIGBUS' } });
  }, 120_000);

  it('the runner hook starts none where the check is deselected, reported already, or the library is unknown', () => {
    const d = device('cuda', 'cuda');
    const o = { ...d.ctx.options };
    expect(startTruncateChildFor({ ...o, skip: ['hazard.truncate_contained'] }, d.library)).toBe(false);
    expect(startTruncateChildFor({ ...o, deselected: { 'hazard.truncate_contained': 'skipped by --skip hazard.truncate_*' } }, d.library)).toBe(false);
    expect(startTruncateChildFor(o, null)).toBe(false);
    expect(startTruncateChildFor({ ...o, device: 'cpu' }, d.library)).toBe(false);
    expect(data(truncateContainedCheck.run(d.ctx)).childStartedEarly).toBe(false);
    expect(startTruncateChildFor(o, d.library)).toBe(true);
    expect(data(truncateContainedCheck.run(d.ctx)).childStartedEarly).toBe(true);
  }, 120_000);

  it('the child waits for the timing lock before its driver init; the wait is told as the host\'s and the check then goes on', async () => {
    const d = device('cuda', 'cuda');
    const lockFile = join(work, `timing-${Math.random().toString(36).slice(2)}.lock`);
    closeSync(openSync(lockFile, 'w', 0o600));
    setEnv({ MAPPED_REG_TIMING_LOCK: lockFile });
    // the holder lets go 300 ms after the child opened the lock file to wait for it (the check blocks this thread:
    // the holder watches for the child itself), by when the check, called at once, waits for the child
    const release = await holdLock(lockFile, { releaseMs: 300 });
    try {
      start(d);
      const waits: HostWait[] = [];
      const r = runEarlyTruncateChild(d.ctx.device.id, truncateArgs(d), (w) => waits.push(w));
      expect(waits).toEqual([{ waiting: true, what: 'the timing lock (the truncation child)', limitMs: 60_000 }, { waiting: false }]);
      expect('run' in r).toBe(true);
      if (!('run' in r)) return;
      expect(r.early.readyAtCheck).toBe(false);
      expect(r.early.lockWaitAtCheckMs).toBeGreaterThan(0);
      expect(r.early.lockWaitMs).toBeGreaterThan(0);
      expect(r.run.lines.some((l) => l.step === 'truncate')).toBe(true);
    } finally {
      release();
      rmSync(d.scratch, { recursive: true, force: true });
    }
  }, 120_000);

  it("a child that waited past its limit for the timing lock is the host's fault (HostFault), never the driver's; the file is removed", async () => {
    const d = device('cuda', 'cuda');
    const lockFile = join(work, `timing-${Math.random().toString(36).slice(2)}.lock`);
    closeSync(openSync(lockFile, 'w', 0o600));
    setEnv({ MAPPED_REG_TIMING_LOCK: lockFile });
    const release = await holdLock(lockFile);
    try {
      start(d, 300);
      expect(() => truncateContainedCheck.run(d.ctx)).toThrow(/^the host: the timing lock .* was still held after 0\.3 s of waiting, by (pid \d+ \(node\)|a process that did not say which): the truncation child did not start$/);
      expect(readdirSync(d.scratch)).toEqual([]);
    } finally {
      release();
    }
  }, 120_000);

  it("the child's hold is shared: another device's child starting its driver (a shared holder) does not keep it waiting", async () => {
    const d = device('cuda', 'cuda');
    const lockFile = join(work, `timing-${Math.random().toString(36).slice(2)}.lock`);
    setEnv({ MAPPED_REG_TIMING_LOCK: lockFile });
    const script = `import { acquireTimingLock } from ${JSON.stringify(join(ROOT, 'dist', 'bindings', 'timing-lock.js'))};
acquireTimingLock({ path: process.argv[1], shared: true, label: 'another child' });
console.log('held');
setInterval(() => {}, 1 << 30);`;
    const other = spawn(process.execPath, ['--input-type=module', '-e', script, lockFile], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      let out = '';
      other.stdout.on('data', (b: Buffer) => (out += b.toString()));
      await waitUntil(() => out.includes('held'), 60_000, 'the other shared holder');
      // a limit of 2 s: an exclusive taker would wait for the other holder (it never lets go) and fail
      start(d, 2_000);
      const o = truncateContainedCheck.run(d.ctx);
      expect(data(o).childStartedEarly).toBe(true);
      expect(o.status ?? 'pass').toBe('pass');
    } finally {
      other.kill('SIGKILL');
    }
  }, 120_000);

  it("the early child is the run's own: the GPU users' look leaves it out while it lives, and forgets it once it ended", async () => {
    const d = device('cuda', 'cuda');
    start(d);
    await waitUntil(() => ownChildPids().length === 1, 30_000, 'the early child to be spawned');
    const [pid] = ownChildPids();
    expect(commandLine(pid!)).toMatch(/truncate-child\.js --early /);
    stopTruncateChildEarly(d.ctx.device.id);
    expect(ownChildPids()).toEqual([]);
    await waitUntil(() => !running(pid!), 15_000, `the stopped early child ${pid} to end`);
  }, 120_000);
});

/** A process that kills `pid` once `signal` exists (the test's thread is blocked in the check meanwhile). */
function truncateArgs(d: Device): { device: string; file: string; size: number; cut: number; large: number; small: number } {
  // a file of 2 MiB of known bytes (the check's own is 32 MiB): cut to 1 MiB, the copies from the cut tail
  const file = join(d.scratch, 'cut.bin');
  const fd = openSync(file, 'w', 0o600);
  try {
    const chunk = Buffer.alloc(1 << 20, 0x5a);
    for (let i = 0; i < 2; i++) writeSync(fd, chunk);
  } finally {
    closeSync(fd);
  }
  return { device: d.ctx.device.id, file, size: 2 << 20, cut: 1 << 20, large: 1 << 20, small: 4096 };
}
