// The reference copy checks (suites/hazards/reference-copies.ts) against the driver double, through the real bindings: the
// honest double passes every one that applies (and names why the others do not), and each fault of the double
// breaks exactly its check: in the checks' own results, then in a run of the command, by name in JUnit and in the
// gate against a baseline of the honest double.
import { spawnSync } from 'node:child_process';
import koffi from 'koffi';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { registrations } from '../src/index.js';
import { isHostFault } from '../bindings/host-fault.js';
import type { CheckContext, Observation } from '../suites/check.js';
import { hazardChecks } from '../suites/hazards/index.js';
import { referenceCopyChecks as referenceChecks } from '../suites/hazards/reference-copies.js';
import { referenceChecks as allReferenceChecks } from '../suites/hazards/reference.js';
import { type DoubleConfig, loadDouble } from './support/drivers.js';
import { diskTempDir } from './support/temp-dir.js';
import { buildDoubles } from './double/build.js';
import { holdLock } from './support/lock-holder.js';
import { MAIN, QUIET_PROC, ROOT, cleanEnv } from './support/command.js';
import { runScript, workspace } from './support/workspace.js';
import { allElements, childElement, parseXml } from './support/xml.js';

const scratchDir = diskTempDir('mapped-reg-reference-test-');
afterAll(() => rmSync(scratchDir, { recursive: true, force: true }));

const IDS = ['hazard.portable_second_context', 'hazard.async_stream_copy', 'hazard.device_pointer', 'hazard.every_gpu_at_once'];

/**
 * Paced copies, so that the portable check's speeds are the double's, never this machine's: a registered copy at
 * 0.5 GB/s, a pageable one at 0.1 (16 MiB: 34 ms and 168 ms, far above what the memcpy itself takes).
 */
const RATES = 'registered=0.5,pinned=0.5,pageable=0.1';

type Status = 'pass' | 'warn' | 'fail' | 'skip';
interface Result {
  status: Status;
  o?: Observation;
  reason?: string;
}

interface Run {
  results: Map<string, Result>;
  tableGrowth: number;
  doubleCount: number;
  leftScratch: string[];
}

/** The checks `checks` on device `ordinal` of a fresh double configured as asked, as a device's process runs them. */
function runOn(backend: 'cuda' | 'hip', config: DoubleConfig, ordinal = 0, checks = referenceChecks): Run {
  const loaded = loadDouble(backend, { rates: RATES, ...config });
  const device = loaded.discovery.devices.find((d) => d.id === `${backend}:${ordinal}`);
  if (!device) throw new Error(`no ${backend}:${ordinal} from the double`);
  const ctx: CheckContext = {
    device,
    options: { device: device.id, scratchDir, sizeMiB: 4, runs: 3, minRelativeSpeed: 0.8, skip: [], quiet: { waitS: 0, maxDrop: 0.1 } },
    log: () => {},
  };
  const before = registrations.size;
  const results = new Map<string, Result>();
  // the portable check looks at the machine around its timed copies: a quiet machine's pressure, unless a test gives
  // its own (this machine's, under the other test files' load, would make the check the host's by luck)
  const proc = process.env['MAPPED_REG_PROC_ROOT'];
  process.env['MAPPED_REG_PROC_ROOT'] = proc ?? QUIET_PROC;
  try {
    for (const check of checks) {
      const a = check.applies(ctx);
      if (a !== true) {
        results.set(check.id, { status: 'skip', reason: a });
        continue;
      }
      const o = check.run(ctx);
      results.set(check.id, { status: o.status ?? 'pass', o });
    }
  } finally {
    if (proc === undefined) delete process.env['MAPPED_REG_PROC_ROOT'];
  }
  return { results, tableGrowth: registrations.size - before, doubleCount: loaded.registrationCount(), leftScratch: readdirSync(scratchDir) };
}

const statuses = (run: Run): Record<string, Status> => Object.fromEntries([...run.results].map(([id, r]) => [id, r.status]));
const result = (run: Run, id: string): Result => run.results.get(id)!;
const data = (run: Run, id: string): Record<string, unknown> => result(run, id).o?.data ?? {};

/** Nothing left registered in the model's table or the double, nothing on disk. */
function expectClean(run: Run): void {
  expect(run.tableGrowth).toBe(0);
  expect(run.doubleCount).toBe(0);
  expect(run.leftScratch).toEqual([]);
}

it('the four checks run in the hazards suite, in this order, the last of the reference checks, before hazard.context_reset', () => {
  const ids = hazardChecks.map((c) => c.id);
  expect(referenceChecks.map((c) => c.id)).toEqual(IDS);
  expect(allReferenceChecks.map((c) => c.id).slice(-IDS.length)).toEqual(IDS);
  expect(ids.filter((id) => IDS.includes(id))).toEqual(IDS);
  expect(ids.slice(-2)).toEqual(['hazard.context_reset', 'hazard.truncate_contained']);
  expect(ids.indexOf(IDS.at(-1)!)).toBe(ids.length - 3);
  for (const c of referenceChecks) expect(c.suite).toBe('hazards');
});

describe('the honest double', () => {
  it('CUDA, one GPU: portable (a created context), async and device pointer pass; every_gpu_at_once is a named skip', () => {
    const run = runOn('cuda', {});
    expect(statuses(run)).toEqual({ 'hazard.portable_second_context': 'pass', 'hazard.async_stream_copy': 'pass', 'hazard.device_pointer': 'pass', 'hazard.every_gpu_at_once': 'skip' });
    expect(result(run, 'hazard.every_gpu_at_once').reason).toBe('one CUDA device in this process: copying one registration to several GPUs at once does not apply');
    const p = data(run, 'hazard.portable_second_context');
    expect(p).toMatchObject({ flags: 0x9, secondContext: 'a context created with cuCtxCreate_v2 on CUDA device 0', firstDifference: -1, unregister: 0 });
    // paced: the second context copies at the registered rate, the staged copy at the pageable one
    expect(p.ratio as number).toBeGreaterThan(0.8);
    expect((p.stagedGBps as number) / (p.firstGBps as number)).toBeLessThan(0.5);
    expect(data(run, 'hazard.async_stream_copy')).toMatchObject({ stream: 0, asyncCopy: 0, synchronize: 0, destroy: 0, firstDifference: -1, unregister: 0 });
    expect(data(run, 'hazard.async_stream_copy').asyncGBps).toBeGreaterThan(0);
    const d = data(run, 'hazard.device_pointer');
    expect(d).toMatchObject({ flags: 0xa, canUseHostPointer: 1, pageableMemoryAccess: 0, devicePointerCall: 0, read: 0, firstDifference: -1, queryBefore: 0, unregister: 0, queryAfter: 1, queryAfterName: 'CUDA_ERROR_INVALID_VALUE' });
    expect(d.devicePointer).toBe(d.hostPointer);
    expectClean(run);
  }, 60_000);

  it('CUDA, two GPUs: cuda:0 copies one registration to both at once; cuda:1 names the process that does', () => {
    const run = runOn('cuda', { devices: 2 });
    expect(statuses(run)).toEqual(Object.fromEntries(IDS.map((id) => [id, 'pass'])));
    expect(data(run, 'hazard.every_gpu_at_once')).toMatchObject({ flags: 0x9, devices: [{ ordinal: 0, stream: 0, firstDifference: -1 }, { ordinal: 1, stream: 0, firstDifference: -1 }], unregister: 0 });
    expectClean(run);
    const other = runOn('cuda', { devices: 2 }, 1, [referenceChecks[3]!]);
    expect(result(other, 'hazard.every_gpu_at_once')).toEqual({ status: 'skip', reason: "runs in cuda:0's process, which copies one registration to every CUDA device" });
  }, 60_000);

  it('HIP, one GPU: no second context can be made (a named skip); the device pointer is another address, read right', () => {
    // the attribute says so (MAPPED_REG_DOUBLE_ATTRIBUTES host_pointer=0): the double's device pointer is then another address
    const run = runOn('hip', { profile: 'rocm-fixed', attributes: 'host_pointer=0' });
    expect(statuses(run)).toEqual({ 'hazard.portable_second_context': 'skip', 'hazard.async_stream_copy': 'pass', 'hazard.device_pointer': 'pass', 'hazard.every_gpu_at_once': 'skip' });
    expect(result(run, 'hazard.portable_second_context').reason).toBe('HIP has one context per device and this process has one HIP device: no second context can be made');
    const d = data(run, 'hazard.device_pointer');
    expect(d).toMatchObject({ flags: 0x2, canUseHostPointer: 0, firstDifference: -1, queryAfterName: 'hipErrorInvalidValue' });
    expect(d.devicePointer).not.toBe(d.hostPointer);
    expectClean(run);
  }, 60_000);

  it('HIP, two GPUs: the second context is the other device; every GPU at once passes', () => {
    const run = runOn('hip', { profile: 'rocm-fixed', devices: 2 });
    expect(statuses(run)).toEqual(Object.fromEntries(IDS.map((id) => [id, 'pass'])));
    expect(data(run, 'hazard.portable_second_context')).toMatchObject({ flags: 0x1, secondContext: 'HIP device 1 (HIP has one context per device)', firstDifference: -1 });
    expectClean(run);
  }, 60_000);

  it('a registration pinned for its own context only is pageable in another: the double tells the two apart', () => {
    // the check's rule, shown on the double's own terms: under the fault, PORTABLE or not, another context copies as pageable
    const run = runOn('cuda', { faults: 'portable_ignored' }, 0, [referenceChecks[0]!]);
    expect(data(run, 'hazard.portable_second_context').ratio as number).toBeLessThan(0.5);
    // each context's copies read on its device's clock: the double's rates themselves (0.5 registered, 0.1 pageable)
    expect(data(run, 'hazard.portable_second_context')).toMatchObject({ clock: 'device', firstGBps: expect.closeTo(0.5, 4), secondGBps: expect.closeTo(0.1, 4) });
  }, 60_000);

  it('the machine is looked at (its management library started) only around a second timing that a slow second context asks for', () => {
    // the NVML double counts its starts in this process: the check's looks are the only NVML user of this test
    const nvml = buildDoubles().nvml;
    const starts = koffi.load(nvml).func('int double_calls(const char *name)') as (name: string) => number;
    const saved = process.env['MAPPED_REG_NVML_LIBRARY'];
    process.env['MAPPED_REG_NVML_LIBRARY'] = nvml;
    try {
      const before = starts('nvmlInit_v2');
      const fast = runOn('cuda', {}, 0, [referenceChecks[0]!]);
      expect(statuses(fast)).toEqual({ 'hazard.portable_second_context': 'pass' });
      expect(data(fast, 'hazard.portable_second_context')).toMatchObject({ measuredTwice: false, lockWaitMs: expect.any(Number) });
      expect(starts('nvmlInit_v2') - before).toBe(0);
      const slow = runOn('cuda', { faults: 'portable_ignored' }, 0, [referenceChecks[0]!]);
      expect(statuses(slow)).toEqual({ 'hazard.portable_second_context': 'fail' });
      expect(data(slow, 'hazard.portable_second_context')).toMatchObject({ measuredTwice: true });
      // once, around the second timing: the looks before and after it
      expect(starts('nvmlInit_v2') - before).toBe(1);
      expect(starts('nvmlShutdown') - before).toBe(1);
    } finally {
      if (saved === undefined) delete process.env['MAPPED_REG_NVML_LIBRARY'];
      else process.env['MAPPED_REG_NVML_LIBRARY'] = saved;
    }
  }, 60_000);

  it("the time the check waited for the timing lock is in its data: another process's hold, counted", async () => {
    const path = join(scratchDir, 'held.lock');
    writeFileSync(path, '');
    // released 300 ms after the check opens the lock file to wait for it: the check waited at least that long
    await holdLock(path, { releaseMs: 300 });
    const saved = process.env['MAPPED_REG_TIMING_LOCK'];
    process.env['MAPPED_REG_TIMING_LOCK'] = path;
    try {
      const run = runOn('cuda', {}, 0, [referenceChecks[0]!]);
      expect(statuses(run)).toEqual({ 'hazard.portable_second_context': 'pass' });
      expect(data(run, 'hazard.portable_second_context').lockWaitMs as number).toBeGreaterThanOrEqual(300);
    } finally {
      if (saved === undefined) delete process.env['MAPPED_REG_TIMING_LOCK'];
      else process.env['MAPPED_REG_TIMING_LOCK'] = saved;
      rmSync(path, { force: true });
    }
  }, 60_000);

  it('the timing lock held shared (a truncation child starting its driver) does not hold the check back (held exclusive, it does: above)', async () => {
    const path = join(scratchDir, 'shared.lock');
    writeFileSync(path, '');
    const release = await holdLock(path, { shared: true });
    const saved = process.env['MAPPED_REG_TIMING_LOCK'];
    process.env['MAPPED_REG_TIMING_LOCK'] = path;
    try {
      // held shared for the whole check: a check that waited for it would give up after 20 s (a HostFault)
      const run = runOn('cuda', {}, 0, [referenceChecks[0]!]);
      expect(statuses(run)).toEqual({ 'hazard.portable_second_context': 'pass' });
    } finally {
      release();
      if (saved === undefined) delete process.env['MAPPED_REG_TIMING_LOCK'];
      else process.env['MAPPED_REG_TIMING_LOCK'] = saved;
      rmSync(path, { force: true });
    }
  }, 60_000);

  it("a second context slower than the margin on a busy machine is the host's (a HostFault: error), never the driver's failure; nothing left registered", () => {
    const proc = join(scratchDir, 'proc-busy');
    mkdirSync(join(proc, 'pressure'), { recursive: true });
    writeFileSync(join(proc, 'pressure', 'cpu'), 'some avg10=95.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n');
    writeFileSync(join(proc, 'pressure', 'memory'), 'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n');
    const saved = process.env['MAPPED_REG_PROC_ROOT'];
    process.env['MAPPED_REG_PROC_ROOT'] = proc;
    const before = registrations.size;
    try {
      let thrown: unknown;
      try {
        runOn('cuda', { faults: 'portable_ignored' }, 0, [referenceChecks[0]!]);
      } catch (e) {
        thrown = e;
      }
      expect(isHostFault(thrown), String(thrown)).toBe(true);
      expect((thrown as Error).message).toMatch(/^the host: the machine was busy during the timed copies \(CPU pressure 95\.0% \(some, avg10\).*\): the copy from the second context, below the margin there, is not judged; first context 0\.50 GB\/s, second 0\.10 GB\/s \(0\.200 of it\), staged 0\.10 GB\/s \(device's clock\)$/);
      expect(registrations.size).toBe(before);
    } finally {
      if (saved === undefined) delete process.env['MAPPED_REG_PROC_ROOT'];
      else process.env['MAPPED_REG_PROC_ROOT'] = saved;
      rmSync(proc, { recursive: true, force: true });
    }
  }, 60_000);
});

/** Each fault of the double and the one check it breaks, on the double it needs, with what the check says. */
const BREAKS: readonly { fault: string; check: string; config: DoubleConfig; message: RegExp }[] = [
  { fault: 'portable_ignored', check: 'hazard.portable_second_context', config: {}, message: /^the copy from the second context ran at 0\.\d+ of the registered one, below 0\.8: the driver treats the PORTABLE registration as pageable memory there$/ },
  { fault: 'async_wrong_bytes', check: 'hazard.async_stream_copy', config: {}, message: /^the copy on the stream brought the wrong bytes \(a false success\)$/ },
  { fault: 'devptr_wrong', check: 'hazard.device_pointer', config: {}, message: /^the device read the wrong bytes through the device pointer \(a false success\)$/ },
  { fault: 'pointer_still_registered', check: 'hazard.device_pointer', config: {}, message: /^cuPointerGetAttribute still answers for the released range \(device pointer 0x[0-9a-f]+\)$/ },
  { fault: 'multi_gpu_wrong_bytes', check: 'hazard.every_gpu_at_once', config: { devices: 2 }, message: /^1 of 2 devices did not get the file's bytes$/ },
];

describe('one fault per promise: each breaks exactly its check, among every hazard check', () => {
  it('covers every reference check', () => {
    expect([...new Set(BREAKS.map((b) => b.check))].sort()).toEqual([...IDS].sort());
  });

  for (const b of BREAKS) {
    it(`${b.fault}: only ${b.check} fails, saying why`, () => {
      const run = runOn('cuda', { ...b.config, faults: b.fault }, 0, hazardChecks);
      const failing = [...run.results].filter(([, r]) => r.status === 'fail').map(([id]) => id);
      expect(failing).toEqual([b.check]);
      expect(result(run, b.check).o?.message).toMatch(b.message);
      expect(run.tableGrowth).toBe(0);
      expect(run.leftScratch).toEqual([]);
    }, 120_000);
  }
});

describe('in a run of the command: the fault is its check, by name, in JUnit and in the gate', () => {
  const { work, doubles } = workspace('mapped-reg-reference-cli-');
  const select = IDS.flatMap((id) => ['--check', id]);
  const env = (faults?: string): Record<string, string | undefined> => ({
    MAPPED_REG_CUDA_LIBRARY: doubles.cuda,
    MAPPED_REG_DOUBLE_RATES: RATES,
    MAPPED_REG_DOUBLE_DEVICES: '2',
    ...(faults ? { MAPPED_REG_DOUBLE_FAULTS: faults } : {}),
  });
  const baseline = (): string => join(work, 'baseline.json');

  it('the honest double: every reference check passes on cuda:0 (exit 0): the baseline', () => {
    const r = runScript(MAIN, ['--device', 'cuda:0', '--size', '4', '--scratch-dir', work, ...select, '--json', baseline()], work, env());
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const checks = JSON.parse(readFileSync(baseline(), 'utf8')).devices[0].checks as { id: string; status: string }[];
    expect(Object.fromEntries(checks.filter((c) => IDS.includes(c.id)).map((c) => [c.id, c.status]))).toEqual(Object.fromEntries(IDS.map((id) => [id, 'pass'])));
  }, 120_000);

  for (const b of BREAKS.filter((x) => ['portable_ignored', 'async_wrong_bytes', 'devptr_wrong', 'multi_gpu_wrong_bytes'].includes(x.fault))) {
    it(`${b.fault}: exit 1; one JUnit <failure>, in ${b.check}; the gate names it as the regression`, () => {
      expect(existsSync(baseline())).toBe(true);
      const junit = join(work, `${b.fault}.xml`);
      const r = runScript(MAIN, ['--device', 'cuda:0', '--size', '4', '--scratch-dir', work, ...select, '--junit', junit, '--baseline', baseline()], work, env(b.fault));
      expect(r.code).toBe(1);
      // every <failure>, by the testcase it is in: the check's alone (the gate's decision, which stands for it, is not
      // counted again: reporters/junit-cases.ts), its title the device and the check
      const failed = allElements(parseXml(readFileSync(junit, 'utf8')), 'testcase')
        .filter((t) => childElement(t, 'failure'))
        .map((t) => ({ testcase: `${t.attrs.classname} ${t.attrs.name}`, message: childElement(t, 'failure')!.attrs.message ?? '' }));
      expect(failed.map((f) => f.testcase)).toEqual([`cuda:0.hazards cuda:0 > ${b.check}`]);
      expect(failed[0]!.message).toMatch(b.message);
      // the gate's lines: one regression, this check's
      expect(r.stdout.split('\n').filter((l) => l.includes('REGRESSION'))).toEqual([expect.stringContaining(`cuda:0 Double CUDA Device (0000:00:00.0): ${b.check} pass -> fail`)]);
    }, 120_000);
  }
});

describe('scripts/h200/reference.sh, with the double behind the shim', () => {
  const { work, doubles } = workspace('mapped-reg-reference-sh-');

  it('the honest run passes; the shim\'s pointer lie fails hazard.device_pointer alone; its PORTABLE lie is recorded (the CUDA double, as the H200, copies every registration from another context as registered: pass); exit 0', () => {
    const out = join(work, 'out');
    const r = spawnSync('bash', [join(ROOT, 'scripts', 'h200', 'reference.sh'), out, '--device', 'cuda:0', '--size', '4'], {
      cwd: work,
      encoding: 'utf8',
      env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_SHIM_REAL: doubles.cuda, MAPPED_REG_DOUBLE_RATES: RATES, TMPDIR: work }),
      timeout: 240_000,
    });
    expect(r.stderr).toBe('');
    const txt = readFileSync(join(out, 'reference.txt'), 'utf8');
    expect(r.status, txt).toBe(0);
    const lines = txt.trim().split('\n');
    expect(lines[0]).toMatch(/^honest\texit 0\tportable_second_context pass\tasync_stream_copy pass\tdevice_pointer pass\tevery_gpu_at_once skip\tportable GB\/s first \d+\.\d\d second \d+\.\d\d staged \d+\.\d\d ratio \d\.\d\d$/);
    expect(lines[1]).toMatch(/^shim-pointer-still\texit 1\tportable_second_context pass\tasync_stream_copy pass\tdevice_pointer fail\tevery_gpu_at_once skip\t/);
    expect(lines[2]).toMatch(/^shim-portable-ignored\texit \d\tportable_second_context pass\t/);
    expect(lines[3]).toBe('recorded: without PORTABLE, hazard.portable_second_context is pass on this driver');
    expect(lines).toHaveLength(4);
    expect(existsSync(join(out, 'reference.tgz'))).toBe(true);
    // its temporary folder is gone
    expect(readdirSync(work).filter((f) => f.startsWith('mapped-reg-reference.'))).toEqual([]);
  }, 240_000);
});
