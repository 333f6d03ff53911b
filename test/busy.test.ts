// A slower driver told from a busy machine: the command against the CUDA double, its copies paced, in each case the
// issue names. The double plays every part: another process on the GPU and 30 GB/s on its link (the NVML double),
// host memory busy (the host-busy library slows the tool's memcpy), registration alone slower, every copy slower on
// a quiet machine, a link trained below its maximum (a fake sysfs), and four devices sharing one link across
// their processes (the shared link of the double) to show that the host-wide timing lock keeps them apart.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GateDecision, RunResult } from '../results/types.js';
import { type Look, busyReasons, BUSY_THRESHOLDS } from '../suites/measure.js';
import { MAIN, NO_HAZARDS, cleanEnv } from './support/command.js';
import { type CommandRun, runCommand, workspace } from './support/workspace.js';

const { work, doubles } = workspace('mapped-reg-busy-', 'now');

/** Registered and page-locked copies alike at 2 GB/s, as on the H200 (registered / page-locked 0.997 there). */
const QUIET = 'registered=2,pinned=2,pageable=0.5';

/** Another process on the GPU (the NVML double's): 774 MiB of it, and 30 GB/s over its link that are not ours. */
const LINK_HOG = { MAPPED_REG_DOUBLE_NVML_PROCESSES: '4242:hog-link:774', MAPPED_REG_DOUBLE_NVML_PCIE: 'rx=30000,tx=0' };

/** A run of the command and its results. */
type Ran = CommandRun & { json: RunResult };

/**
 * Rounds of the timed copies for a region of `sizeMiB`: 21 for the small ones (copies of 2 to 4 ms, whose wake-ups
 * on a loaded machine end late in clusters: measured beside a full test run, up to 26 of 3-ms waits in a row more
 * than 10% late, which can spoil every one of 7 rounds), the default 7 for 64 MiB windows (tens of ms a copy).
 */
const roundsFor = (sizeMiB: number): number => (sizeMiB <= 16 ? 21 : 7);

function run(args: string[], env: Record<string, string | undefined>, sizeMiB = 8): Ran {
  const r = runCommand(
    work,
    // no test here reads a hazard check: what is judged is the timing, the load and the gate
    () => ['--backend', 'cuda', '--size', String(sizeMiB), '--runs', String(roundsFor(sizeMiB)), ...NO_HAZARDS, ...args],
    // the lock of this file's runs only: the other test files' runs time their copies under their own
    () => ({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_NVML_LIBRARY: doubles.nvml, MAPPED_REG_TIMING_LOCK: join(work, 'timing.lock'), ...env }),
  );
  let parsed: RunResult;
  try {
    parsed = JSON.parse(r.read('json')) as RunResult;
  } catch {
    throw new Error(`no results (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
  return { ...r, json: parsed };
}

const gateOf = (r: Ran): GateDecision => r.json.gate!;
const kinds = (r: Ran): [string, boolean][] => gateOf(r).reasons.map((x) => [x.kind, x.host ?? false]);

/** A fake sysfs: the double's device 0 (0000:00:00.0) on a link of `speed` GT/s x1 whose maximum is `max`, on NUMA node 0 of two. */
function sysfs(name: string, speed: string, max: string): string {
  const root = join(work, name);
  const dev = join(root, 'bus', 'pci', 'devices', '0000:00:00.0');
  mkdirSync(dev, { recursive: true });
  writeFileSync(join(dev, 'current_link_speed'), `${speed} GT/s PCIe\n`);
  writeFileSync(join(dev, 'max_link_speed'), `${max} GT/s PCIe\n`);
  writeFileSync(join(dev, 'current_link_width'), '1\n');
  writeFileSync(join(dev, 'max_link_width'), '1\n');
  writeFileSync(join(dev, 'numa_node'), '0\n');
  mkdirSync(join(root, 'devices', 'system', 'node'), { recursive: true });
  writeFileSync(join(root, 'devices', 'system', 'node', 'online'), '0-1\n');
  return root;
}

/** A fake /proc whose pressure files say `cpu` % (some, avg10). */
function proc(name: string, cpu: number): string {
  const dir = join(work, name, 'pressure');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'cpu'), `some avg10=${cpu.toFixed(2)} avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n`);
  writeFileSync(join(dir, 'memory'), 'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n');
  return join(work, name);
}

/** A busy link: another process on the GPU moving 30 GB/s over its link while every copy runs slower. */
function expectBusyLinkBlamedOnHost(baseline: string): void {
  const r = run(['--baseline', baseline, '--quiet-wait', '1'], {
    MAPPED_REG_DOUBLE_RATES: 'registered=1.2,pinned=1.2,pageable=0.5',
    ...LINK_HOG,
    MAPPED_REG_SYSFS_ROOT: join(work, 'sys-quiet'),
  });
  expect(r.code, r.stdout).toBe(1);
  expect(kinds(r)).toEqual([['busy', true]]);
  // the link's share is not judged on a busy machine (the baseline's timing.link passed: skip is no regression)
  expect(r.json.devices[0]!.checks.find((c) => c.id === 'timing.link')).toMatchObject({ status: 'skip', message: expect.stringMatching(/^not judged: the machine was busy during the timed copies \(30\.0 GB\/s of PCIe traffic not ours/) });
  const reason = gateOf(r).reasons[0]!;
  expect(reason.text).toMatch(/^cuda:0 Double CUDA Device \(0000:00:00\.0\): registered GB\/s not judged: the host, not the driver: the machine was busy: 30\.0 GB\/s of PCIe traffic not ours; on the GPU: pid 4242 hog-link \(774 MiB\), still busy after 1 s of --quiet-wait 1 \(2 timings\): registered \d\.\d\d GB\/s -> \d\.\d\d GB\/s \(-\d\d\.\d%\), page-locked \d\.\d\d GB\/s -> \d\.\d\d GB\/s/);
  expect(gateOf(r).headline).toMatch(/^FAIL \(the host, not the driver\): /);
  const load = r.json.devices[0]!.load!;
  expect(load).toMatchObject({ busy: true, attempts: 2, processes: [{ pid: 4242, name: 'hog-link', usedMiB: 774 }], linkMBps: 30000 });
  expect(load.waitedForQuietMs).toBeGreaterThan(0);
  // registered / page-locked, which a busy machine cannot fake, was judged and is unchanged
  expect(gateOf(r).notes.filter((n) => n.check === 'registration')).toEqual([]);
  expect(r.stdout).toMatch(/HOST BUSY {2}cuda:0 /);
}

/** Host memory busy: the tool's memcpy slowed to 0.5 GB/s by the host-busy library. */
function expectBusyHostMemoryBlamedOnHost(baseline: string): void {
  // 64 MiB windows: a host copy is judged from that size on (a smaller one runs from the CPU's caches)
  const big = run([], { MAPPED_REG_DOUBLE_RATES: QUIET }, 128);
  expect(big.code, big.stdout).toBe(0);
  const bigBaseline = join(work, 'baseline-128.json');
  writeFileSync(bigBaseline, JSON.stringify(big.json));
  const busyHost = { MAPPED_REG_DOUBLE_RATES: 'registered=1.4,pinned=1.4,pageable=0.5', LD_PRELOAD: doubles.hostBusy, MAPPED_REG_DOUBLE_HOST_COPY_GBPS: '0.5' };
  const r = run(['--baseline', bigBaseline, '--quiet-wait', '0'], busyHost, 128);
  expect(r.code, r.stdout).toBe(1);
  expect(kinds(r)).toEqual([['busy', true]]);
  expect(gateOf(r).reasons[0]!.text).toMatch(/the host's memcpy ran at 0\.\d\d GB\/s, under 70% of the baseline's \d+\.\d\d GB\/s: other copies load host memory/);
  expect(r.json.devices[0]!.load).toMatchObject({ busy: true, attempts: 1, baselineHostCopyGBps: big.json.devices[0]!.timing!.hostCopyGBps });
  // the same slow host copy in 4 MiB windows is not judged: the copies fell on a machine seen quiet, the driver's
  const small = run(['--baseline', baseline, '--quiet-wait', '0'], busyHost);
  expect(small.json.devices[0]!.load!.busy).toBe(false);
  expect(kinds(small)).toEqual([['bandwidth', false]]);
}

/** Registered copies alone slower while the link is busy: registered / page-locked fell on a machine still busy. */
function expectBusyRatioBlamedOnHost(baseline: string): void {
  // (a margin of 0.5: the registered copy, cut to 1.2, stays Usable against the staged one)
  const r = run(['--baseline', baseline, '--quiet-wait', '0', '--min-relative-speed', '0.5'], {
    MAPPED_REG_DOUBLE_RATES: 'registered=1.2,pinned=2,pageable=0.5',
    ...LINK_HOG,
  });
  expect(r.code, r.stdout).toBe(1);
  expect(kinds(r)).toEqual([
    ['busy', true],
    ['busy', true],
  ]);
  expect(gateOf(r).reasons[1]!.text).toMatch(/^cuda:0 Double CUDA Device \(0000:00:00\.0\): registered \/ page-locked not judged: the host, not the driver: the machine was busy: 30\.0 GB\/s of PCIe traffic not ours; .*: registered \/ page-locked \d\.\d\d\d -> 0\.\d\d\d \(-\d\d\.\d%\)$/);
  expect(gateOf(r).headline).toMatch(/^FAIL \(the host, not the driver\): /);
}

/** `compare` of a busy run against the baseline. */
function expectCompareSaysBusy(baseline: string): void {
  const busy = run(['--baseline', baseline, '--quiet-wait', '0'], {
    MAPPED_REG_DOUBLE_RATES: 'registered=1.2,pinned=1.2,pageable=0.5',
    ...LINK_HOG,
  });
  const after = join(work, 'after-busy.json');
  writeFileSync(after, JSON.stringify(busy.json));
  const c = spawnSync(process.execPath, [MAIN, 'compare', '--json', baseline, after], { env: cleanEnv(), encoding: 'utf8' });
  expect(c.status).toBe(1);
  const j = JSON.parse(c.stdout) as { regression: boolean; driverRegression: boolean; hostError: boolean; regressions: { kind: string; blame: string }[] };
  expect(j.regressions.map((x) => [x.kind, x.blame])).toEqual([['busy', 'host']]);
  // exit 1, and the host's alone: never the driver's regression
  expect([j.regression, j.driverRegression, j.hostError]).toEqual([true, false, true]);
}

/** Every copy slower on a link the fake sysfs says is trained at 2.5 GT/s, below its maximum 5.0. */
function expectDowntrainedLinkNamed(baseline: string): void {
  const r = run(['--baseline', baseline], { MAPPED_REG_DOUBLE_RATES: 'registered=1.5,pinned=1.5,pageable=0.5', MAPPED_REG_SYSFS_ROOT: sysfs('sys-down', '2.5', '5.0') });
  expect(r.code, r.stdout).toBe(1);
  expect(gateOf(r).reasons[0]!.text).toMatch(/the driver or the platform: the link is trained at 2\.5 GT\/s x1, below its maximum 5\.0 GT\/s x1/);
  const link = r.json.devices[0]!.checks.find((c) => c.id === 'timing.link')!;
  expect(link.status).toBe('warn');
  expect(link.observed).toMatch(/the link is trained at 2\.5 GT\/s x1, below its maximum 5\.0 GT\/s x1/);
  expect(r.json.devices[0]!.link).toMatchObject({ downtrained: true, gts: 2.5, maxGts: 5 });
}

describe('against a baseline of a quiet machine', () => {
  let baseline: string;
  let base: RunResult;
  beforeAll(() => {
    const b = run([], { MAPPED_REG_DOUBLE_RATES: QUIET, MAPPED_REG_SYSFS_ROOT: sysfs('sys-quiet', '2.5', '2.5') });
    expect(b.code, b.stdout).toBe(0);
    base = b.json;
    baseline = join(work, 'baseline.json');
    writeFileSync(baseline, JSON.stringify(b.json));
  });

  it('the baseline carries the control copy, the host copy and what it saw of the machine', () => {
    const d = base.devices[0]!;
    expect(base.schemaVersion).toBe(3);
    // on the device's clock (the double's events): the double's rate itself, whatever the host's load
    expect(d.timing!.clock).toBe('device');
    expect(d.timing!.pageLockedGBps).toBeCloseTo(2, 4);
    expect(d.timing!.registeredGBps).toBeCloseTo(2, 4);
    expect(d.timing!.pageLockedRatio).toBeGreaterThan(0.9);
    expect(d.timing!.hostCopyGBps).toBeGreaterThan(0);
    expect(d.load).toMatchObject({ busy: false, why: [], attempts: 1, processes: [], monitor: 'nvml', linkMBps: 0 });
    expect(d.link).toMatchObject({ gts: 2.5, maxGts: 2.5, downtrained: false });
    // the fake sysfs says two nodes and the GPU on node 0: the probe's memory was placed there
    expect(d.numa).toEqual({ node: 0, nodes: [0, 1], placed: true });
  });

  it('a quiet re-run passes: nothing busy, one timing', () => {
    const r = run(['--baseline', baseline], { MAPPED_REG_DOUBLE_RATES: QUIET });
    expect(r.code, r.stdout).toBe(0);
    expect(r.json.devices[0]!.load).toMatchObject({ busy: false, attempts: 1 });
  });

  it('a busy link (another process copying to the GPU): every copy slower, never blamed on the driver, the process named (exit 1)', () => expectBusyLinkBlamedOnHost(baseline));

  it('host memory busy (the host copy under 70% of the baseline\'s): never blamed on the driver (exit 1)', () => expectBusyHostMemoryBlamedOnHost(baseline));

  it('registered / page-locked that fell on a machine still busy is the host\'s too (exit 1): both loads at once moved it 23% on the H200', () => expectBusyRatioBlamedOnHost(baseline));

  it('CPU pressure: the host busy, never the driver (exit 1)', () => {
    const r = run(['--baseline', baseline, '--quiet-wait', '0'], { MAPPED_REG_DOUBLE_RATES: 'registered=1.4,pinned=1.4,pageable=0.5', MAPPED_REG_PROC_ROOT: proc('proc-busy', 95) });
    expect(r.code, r.stdout).toBe(1);
    expect(kinds(r)).toEqual([['busy', true]]);
    expect(gateOf(r).reasons[0]!.text).toMatch(/CPU pressure 95\.0% \(some, avg10\)/);
  });

  it('registration alone slower: blamed on the driver, as a registration regression (exit 1)', () => {
    // 20% slower, so that it stays well above 0.8 x the staged copy (page-locked at 2, plus a memcpy): still Usable
    const r = run(['--baseline', baseline], { MAPPED_REG_DOUBLE_RATES: 'registered=1.6,pinned=2,pageable=0.5' });
    expect(r.code, r.stdout).toBe(1);
    expect(kinds(r)).toEqual([
      ['bandwidth', false],
      ['registration', false],
    ]);
    expect(gateOf(r).reasons[0]!.text).toMatch(/registered copies alone got slower \(page-locked \d\.\d\d GB\/s -> \d\.\d\d GB\/s \([-+]\d+\.\d%\)\): the driver's registration/);
    expect(gateOf(r).reasons[1]!.text).toMatch(/registered \/ page-locked \d\.\d\d\d -> \d\.\d\d\d \(-\d\d\.\d%\): a drop of \d\d\.\d%, more than the 10\.0% allowed: registered copies got slower than page-locked ones timed beside them: the driver's registration/);
    expect(gateOf(r).headline).toMatch(/^FAIL: /);
  });

  it('every copy slower on a quiet machine: blamed on the driver or the platform; registered / page-locked unchanged (exit 1)', () => {
    const r = run(['--baseline', baseline], { MAPPED_REG_DOUBLE_RATES: 'registered=1.5,pinned=1.5,pageable=0.5' });
    expect(r.code, r.stdout).toBe(1);
    expect(kinds(r)).toEqual([['bandwidth', false]]);
    expect(gateOf(r).reasons[0]!.text).toMatch(/a drop of \d\d\.\d%, more than the 10\.0% allowed: every host-to-device copy got slower \(page-locked \d\.\d\d GB\/s -> \d\.\d\d GB\/s \(-\d\d\.\d%\)\), on a quiet machine: the driver or the platform/);
  });

  it('every copy slower on a link trained below its maximum: the link named, in the gate and in timing.link (exit 1)', () => expectDowntrainedLinkNamed(baseline));

  it("a wait for quiet longer than --timeout is the host's time: the check is not killed as a timeout, the host is blamed (exit 1)", () => {
    const r = run(['--baseline', baseline, '--quiet-wait', '10', '--timeout', '4'], { MAPPED_REG_DOUBLE_RATES: 'registered=1.2,pinned=1.2,pageable=0.5', ...LINK_HOG });
    expect(r.code, r.stdout).toBe(1);
    const probe = r.json.devices[0]!.checks.find((c) => c.id === 'probe.verdict')!;
    // it ran past --timeout (the whole --quiet-wait, busy throughout) and reported: not killed
    expect(probe.status, probe.message).toBe('pass');
    expect(probe.durationMs).toBeGreaterThan(10_000);
    expect(r.json.devices[0]!.load!.attempts).toBeGreaterThan(1);
    expect(kinds(r)).toEqual([['busy', true]]);
    expect(gateOf(r).headline).toMatch(/^FAIL \(the host, not the driver\): /);
  });

  it('a busy machine whose figures held: no wait, nothing blamed (exit 0), what it saw recorded', () => {
    const r = run(['--baseline', baseline], { MAPPED_REG_DOUBLE_RATES: QUIET, ...LINK_HOG });
    expect(r.code, r.stdout).toBe(0);
    expect(r.json.devices[0]!.load).toMatchObject({ busy: true, attempts: 1, waitedForQuietMs: 0 });
    expect(r.stdout).toMatch(/cuda:0: BUSY machine: 30\.0 GB\/s of PCIe traffic not ours; on the GPU: pid 4242 hog-link \(774 MiB\)/);
  });

  it('compare of the files says the same as the gate: the busy run is the host\'s (exit 1)', () => expectCompareSaysBusy(baseline));

  it("host memory busy alone: the uploads, on the device's clock, read the baseline's very figures; only the staged copy (host work) is slower; the host is still named busy (exit 0)", () => {
    // 64 MiB windows: the host copy is judged from that size on
    const quiet = run([], { MAPPED_REG_DOUBLE_RATES: QUIET }, 128);
    expect(quiet.code, quiet.stdout).toBe(0);
    const quietBaseline = join(work, 'baseline-128-quiet.json');
    writeFileSync(quietBaseline, JSON.stringify(quiet.json));
    const r = run(['--baseline', quietBaseline, '--quiet-wait', '0'], { MAPPED_REG_DOUBLE_RATES: QUIET, LD_PRELOAD: doubles.hostBusy, MAPPED_REG_DOUBLE_HOST_COPY_GBPS: '0.5' }, 128);
    expect(r.code, r.stdout).toBe(0);
    const [before, after] = [quiet.json.devices[0]!.timing!, r.json.devices[0]!.timing!];
    expect(after.clock).toBe('device');
    expect(after.registeredGBps).toBeCloseTo(before.registeredGBps, 6);
    expect(after.pageLockedGBps).toBeCloseTo(before.pageLockedGBps!, 6);
    expect(after.hostCopyGBps).toBeLessThan(0.6);
    expect(after.stagedGBps).toBeLessThan(before.stagedGBps * 0.5);
    expect(r.json.devices[0]!.load).toMatchObject({ busy: true, why: [expect.stringMatching(/^the host's memcpy ran at 0\.\d\d GB\/s, under 70% of the baseline's/)] });
  });
});

describe('four devices whose copies share one link, timed one at a time under the host-wide lock', () => {
  it("each device's registered figure is within 3% of the same device timed alone", () => {
    const link = { MAPPED_REG_DOUBLE_DEVICES: '4', MAPPED_REG_DOUBLE_LINK_FILE: join(work, 'link'), MAPPED_REG_DOUBLE_LINK_GBPS: '0.1' };
    // the self-test alone (no hazard check copies beside it): what is shared is the timed copies' link. 8 MiB
    // windows at 0.1 GB/s, 84 ms a copy, so that a late wake-up of a process on this loaded 2-core machine (the
    // four device processes start Vitest meanwhile) is well under 3% of a copy
    const figure = (r: Ran, id: string): number => r.json.devices.find((d) => d.id === id)!.timing!.registeredGBps;
    const all = run(['--check', 'probe.verdict'], link, 16);
    expect(all.code, all.stdout).toBe(0);
    expect(all.json.devices).toHaveLength(4);
    // the first device and the last, timed alone
    for (const id of ['cuda:0', 'cuda:3']) {
      const alone = figure(run(['--check', 'probe.verdict', '--device', id], link, 16), id);
      expect(Math.abs(figure(all, id) / alone - 1), `${id}: ${figure(all, id)} GB/s with the others, ${alone} alone`).toBeLessThan(0.03);
    }
    // they did queue for the lock
    expect(all.json.devices.some((d) => d.load!.lockWaitMs > 0)).toBe(true);
  });
});

describe('busyReasons: what makes a machine busy', () => {
  const quiet = { cpuSome: 0, memorySome: 0 };
  const gpu = (rx: number | null, processes: { pid: number; name: string; usedMiB: number | null }[] = []): Look => ({
    gpu: { source: 'nvml', processes: processes.map((p) => ({ ...p, kind: 'compute' as const })), pcieRxMBps: rx, pcieTxMBps: rx === null ? null : 0 },
    pressure: quiet,
  });
  it('link traffic from the limit up, named with the processes on the GPU', () => {
    expect(busyReasons([gpu(BUSY_THRESHOLDS.linkMBps - 1), gpu(0)], null, undefined)).toEqual([]);
    expect(busyReasons([gpu(0), gpu(BUSY_THRESHOLDS.linkMBps, [{ pid: 7, name: 'x', usedMiB: null }])], null, undefined)).toEqual(['1.0 GB/s of PCIe traffic not ours; on the GPU: pid 7 x']);
  });
  it('a process on the GPU that moves nothing is not busy; one whose traffic cannot be read is', () => {
    expect(busyReasons([gpu(0, [{ pid: 7, name: 'x', usedMiB: 5 }])], null, undefined)).toEqual([]);
    expect(busyReasons([gpu(null, [{ pid: 7, name: 'x', usedMiB: 5 }])], null, undefined)).toEqual(['another process on the GPU (pid 7 x (5 MiB)), and its link traffic cannot be read']);
    expect(busyReasons([{ pressure: quiet }], null, undefined)).toEqual([]);
  });
  it("the host copy under 70% of the baseline's", () => {
    expect(busyReasons([{ pressure: quiet }], 7, 10)).toEqual([]);
    expect(busyReasons([{ pressure: quiet }], 6.99, 10)).toEqual([
      "the host's memcpy ran at 6.99 GB/s, under 70% of the baseline's 10.00 GB/s: other copies load host memory",
    ]);
    expect(busyReasons([{ pressure: quiet }], 1, undefined)).toEqual([]);
  });
  it('pressure from the limits up, the most of the looks', () => {
    expect(busyReasons([{ pressure: { cpuSome: BUSY_THRESHOLDS.cpuPressure - 0.01, memorySome: 19.99 } }], null, undefined)).toEqual([]);
    expect(busyReasons([{ pressure: quiet }, { pressure: { cpuSome: BUSY_THRESHOLDS.cpuPressure, memorySome: 20 } }], null, undefined)).toEqual([
      'CPU pressure 80.0% (some, avg10): more runnable threads than cores',
      'memory pressure 20.0% (some, avg10)',
    ]);
  });
});
