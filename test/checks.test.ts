// The checks of suites/checks/ that read the probe (probe.verdict, probe.release, timing.margin, timing.link) and
// static.verdict, judged in-process. The reports they read are made by the real probe: through the real bindings
// against the paced driver double (each scenario its own double), or, where a boundary needs an exact ratio, the
// model against the in-memory double with its fake clock. Only the per-process cache of the probe's report
// (suites/context.js probeOnce) is replaced by the report of the scenario, and sysfs's link files are written
// under a folder of the test's own, named by MAPPED_REG_SYSFS_ROOT (this machine has no PCIe link in sysfs).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DiscoveredDevice } from '../bindings/discovery.js';
import type { Device, ProbeReport, Verdict } from '../src/index.js';
import type { Check, CheckContext, Observation } from '../suites/check.js';
import type { Probed } from '../suites/context.js';

const fake = vi.hoisted(() => ({
  probed: undefined as Probed | undefined,
  /** replaces the model's probe for static.verdict when set (a model that breaks its promise) */
  probe: undefined as ((device: Device, map: unknown, reference: unknown) => Verdict) | undefined,
}));

vi.mock('../suites/context.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../suites/context.js')>()),
  probeOnce: (): Probed => {
    if (!fake.probed) throw new Error('no report for this scenario');
    return fake.probed;
  },
}));

vi.mock('../src/index.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/index.js')>();
  return { ...real, probe: (device: Device, map: never, reference: never) => (fake.probe ?? real.probe)(device, map, reference) };
});

const { makeScratchRegion } = await import('../bindings/scratch.js');
const model = await import('../src/index.js');
const { probeChecks } = await import('../suites/checks/probe.js');
const { LINK_WARN_FRACTION, timingChecks } = await import('../suites/checks/timing.js');
const { staticChecks } = await import('../suites/checks/static.js');
const { loadDouble } = await import('./support/drivers.js');
const { MemoryOps, memHost, randomBytes } = await import('./support/memory-ops.js');
type DoubleConfig = import('./support/drivers.js').DoubleConfig;

const MiB = 1024 * 1024;
const scratch = mkdtempSync(join(tmpdir(), 'mapped-reg-checks-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const all: Check[] = [...staticChecks, ...probeChecks, ...timingChecks];
const byId = (id: string): Check => all.find((c) => c.id === id)!;

function context(device: DiscoveredDevice, minRelativeSpeed = 0.8): CheckContext {
  return { device, options: { device: device.id, scratchDir: scratch, sizeMiB: 4, runs: 7, minRelativeSpeed, skip: [], quiet: { waitS: 0, maxDrop: 0.1 } }, log: () => {} };
}

/** The CUDA device of a fresh double configured as asked. */
function cudaDevice(config: DoubleConfig): DiscoveredDevice {
  const d = loadDouble('cuda', config).discovery.devices.find((x) => x.backend === 'cuda');
  if (!d) throw new Error(`no CUDA device from the double (${JSON.stringify(config)})`);
  return d;
}

/** The real probe on `device` over a fresh 4 MiB scratch region: the report the checks read. */
function probed(device: Device): Probed {
  const region = makeScratchRegion(scratch, 4 * MiB);
  try {
    const report = model.probeReport(device, region.map, region.reference);
    return { report, scratch: { dir: region.dir, fsType: region.fsType, sizeBytes: region.size, writtenAhead: region.writtenAhead }, phasesMs: { scratchFile: 0, registration: report.registrationMs, probe: 0 } };
  } finally {
    region.close();
  }
}

/** A report of the model against the in-memory double: exact timings on its fake clock. */
function exactReport(registeredUploadMs: number, stagedUploadMs: number): Probed {
  const map = memHost(randomBytes(4 * 64 * 1024));
  const ops = new MemoryOps(model.windowSize(map.bytes.length), { registeredUploadMs, stagedUploadMs });
  const report = model.probeWithReport(ops, map, map.bytes.slice(), { now: ops.now, table: new model.RegistrationTable() });
  return { report, scratch: { dir: scratch, fsType: 'memory', sizeBytes: map.bytes.length, writtenAhead: false }, phasesMs: { scratchFile: 0, registration: 0, probe: 0 } };
}

interface Judged {
  status: string;
  o: Observation | string;
}

/** Runs check `id` on `ctx` over `report` as defineChecks does: applies, then run; a reason is a skip. */
function judge(id: string, ctx: CheckContext, report?: Probed): Judged {
  fake.probed = report;
  const check = byId(id);
  const applies = check.applies(ctx);
  if (applies !== true) return { status: 'skip', o: applies };
  const o = check.run(ctx);
  return { status: o.status ?? 'pass', o };
}

const observed = (j: Judged): string => (typeof j.o === 'string' ? j.o : j.o.observed);

describe('probe.verdict and probe.release, on what the real probe reported through the bindings', () => {
  let discrete: DiscoveredDevice;
  const reports = new Map<string, Probed>();
  beforeAll(() => {
    discrete = cudaDevice({ rates: 'registered=0.2,pinned=0.2' });
    reports.set('Usable', probed(discrete.device));
    reports.set('Too_slow', probed(cudaDevice({ rates: 'registered=0.025,pinned=0.05' }).device));
    reports.set('Wrong_bytes', probed(cudaDevice({ faults: 'wrong_bytes' }).device));
    // the ops keep their context retain for the window still held, and say so: caught here, not printed in the test run
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    reports.set('one window stuck', probed(cudaDevice({ faults: 'stuck_registration=2' }).device));
    expect(warn.mock.calls.map((c) => String(c[0]))).toEqual([expect.stringMatching(/primary context retain of CUDA device 0 kept: 1 registration /)]);
    warn.mockRestore();
    reports.set('released on a retry', probed(cudaDevice({ faults: 'unregister_fails=1' }).device));
    // ops that cannot be opened: the self-test never registered anything
    reports.set('no ops', probed({ ...discrete.device, withOps: () => { throw new Error('CUDA_ERROR_OUT_OF_MEMORY'); } }));
  }, 60_000);

  it('the scenarios gave the verdicts they are named after', () => {
    expect(Object.fromEntries([...reports].map(([k, p]) => [k, p.report.verdict.kind]))).toEqual({
      Usable: 'Usable',
      Too_slow: 'Too_slow',
      Wrong_bytes: 'Refused',
      'one window stuck': 'Still_registered',
      'released on a retry': 'Inconclusive',
      'no ops': 'Inconclusive',
    });
  });

  it('probe.verdict: Usable passes; Too_slow and Inconclusive warn; Wrong_bytes and Still_registered fail', () => {
    const statuses = Object.fromEntries([...reports].map(([k, p]) => [k, judge('probe.verdict', context(discrete), p).status]));
    expect(statuses).toEqual({ Usable: 'pass', Too_slow: 'warn', Wrong_bytes: 'fail', 'one window stuck': 'fail', 'released on a retry': 'warn', 'no ops': 'warn' });
    const j = judge('probe.verdict', context(discrete), reports.get('Wrong_bytes'));
    expect(observed(j)).toBe('Refused (Wrong_bytes); window 1: bytes differ at offset 1048576, window 2: bytes differ at offset 1048576');
    expect((j.o as Observation).data).toMatchObject({ verdict: { kind: 'Refused', refusal: 'Wrong_bytes' } });
    expect(observed(judge('probe.verdict', context(discrete), reports.get('no ops')))).toBe("Inconclusive (the device's ops could not be opened or closed: CUDA_ERROR_OUT_OF_MEMORY); ");
  });

  it('probe.release: passes only when both windows were registered and released at the first try', () => {
    const statuses = Object.fromEntries([...reports].map(([k, p]) => [k, judge('probe.release', context(discrete), p).status]));
    expect(statuses).toEqual({ Usable: 'pass', Too_slow: 'pass', Wrong_bytes: 'pass', 'one window stuck': 'fail', 'released on a retry': 'fail', 'no ops': 'fail' });
    expect(observed(judge('probe.release', context(discrete), reports.get('one window stuck')))).toBe('window 1: first (1 try), window 2: never (3 tries)');
    expect(observed(judge('probe.release', context(discrete), reports.get('released on a retry')))).toBe('window 1: retry (2 tries), window 2: retry (2 tries)');
  });

  it('timing.margin: through the bindings, Usable passes and Too_slow fails', () => {
    const usable = judge('timing.margin', context(discrete), reports.get('Usable'));
    expect(usable.status).toBe('pass');
    const slow = judge('timing.margin', context(discrete), reports.get('Too_slow'));
    expect(slow.status).toBe('fail');
    expect(observed(slow)).toMatch(/^registered 0\.0[23] GB\/s, staged 0\.05 GB\/s, ratio 0\.[45]\d\d$/);
    expect((slow.o as Observation).expected).toBe('registered >= 0.8 x staged, best of 7');
  });

  it('timing.margin with no timing (the self-test ended before it): warn', () => {
    for (const k of ['Wrong_bytes', 'no ops']) {
      const j = judge('timing.margin', context(discrete), reports.get(k));
      expect(j.status, k).toBe('warn');
      expect(observed(j)).toMatch(/^no timing: the self-test ended before it \((Refused|Inconclusive)\)$/);
    }
  });

  it('a device decided statically: the probe and timing checks do not apply, with the static verdict as the reason', () => {
    const integrated = cudaDevice({ faults: 'integrated' });
    for (const id of ['probe.verdict', 'probe.release', 'timing.margin', 'timing.link']) {
      expect(judge(id, context(integrated)), id).toEqual({ status: 'skip', o: 'decided statically: Refused (Integrated_gpu)' });
    }
  });
});

describe('timing.margin at the boundary (the model on the in-memory double, exact ratios)', () => {
  const device = (): DiscoveredDevice => cudaDevice({});
  it('ratio exactly 0.8 passes; 0.75 fails; the margin is the one the probe used', () => {
    const d = device();
    expect(judge('timing.margin', context(d), exactReport(10, 8))).toMatchObject({ status: 'pass' });
    expect(judge('timing.margin', context(d), exactReport(20, 15))).toMatchObject({ status: 'fail' });
    const at = exactReport(10, 8);
    expect(at.report.timing!.ratio).toBe(0.8);
  });
});

describe('timing.link: the registered GB/s against the PCIe link read from sysfs', () => {
  // readLink and linkEncoding themselves: test/pci.test.ts
  it(`the check: at least ${LINK_WARN_FRACTION * 100}% of the link passes, below warns; no link in sysfs: skip`, () => {
    const d = cudaDevice({});
    const root = mkdtempSync(join(tmpdir(), 'mapped-reg-checks-sysfs-'));
    const before = process.env.MAPPED_REG_SYSFS_ROOT;
    process.env.MAPPED_REG_SYSFS_ROOT = root;
    try {
      const dir = `${root}/bus/pci/devices/${d.pciBusId}`;
      // no link files for the double's bus id: skipped with the reason
      expect(judge('timing.link', context(d), exactReport(10, 8))).toEqual({ status: 'skip', o: `no PCIe link in sysfs for ${d.pciBusId} (${dir})` });
      mkdirSync(dir, { recursive: true });
      writeFileSync(`${dir}/current_link_speed`, '32.0 GT/s PCIe');
      writeFileSync(`${dir}/current_link_width`, '16');
      const gbps = (32 * 16 * 128) / 130 / 8;
      // a report whose registered copy is exactly 70% of the link, and one just below
      const at = (share: number): Probed => {
        const p = exactReport(10, 20);
        const t = p.report.timing!;
        return { ...p, report: { ...p.report, timing: { ...t, registeredGBps: share * gbps } } as ProbeReport };
      };
      const pass = judge('timing.link', context(d), at(LINK_WARN_FRACTION));
      expect(pass.status).toBe('pass');
      expect((pass.o as Observation).expected).toBe('registered >= 70% of the link (63.0 GB/s: 32 GT/s x16), at its maximum speed and width');
      expect(observed(pass)).toBe(`registered ${(0.7 * gbps).toFixed(2)} GB/s = 70.0% of 63.0 GB/s`);
      expect(judge('timing.link', context(d), at(0.69)).status).toBe('warn');
      expect(judge('timing.link', context(d), at(0.9)).status).toBe('pass');
      // no timing from the self-test: warn
      const none = { ...at(1), report: { ...at(1).report, timing: null } };
      expect(judge('timing.link', context(d), none)).toMatchObject({ status: 'warn', o: { observed: 'no timing from the self-test' } });
    } finally {
      if (before === undefined) delete process.env.MAPPED_REG_SYSFS_ROOT;
      else process.env.MAPPED_REG_SYSFS_ROOT = before;
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('static.verdict: the static verdict, and for a refused device the proof that no op was reached', () => {
  it('a discrete device: its static verdict, pass', () => {
    const j = judge('static.verdict', context(cudaDevice({})));
    expect(j).toMatchObject({ status: 'pass', o: { observed: 'Self_test_required', data: { kind: 'Self_test_required' } } });
  });

  it('a refused device whose probe reached no op: pass, with the count of ops opened (0)', () => {
    const j = judge('static.verdict', context(cudaDevice({ faults: 'integrated' })));
    expect(j).toMatchObject({ status: 'pass', o: { observed: 'Refused (Integrated_gpu); the driver was never called', data: { opsOpened: 0 } } });
  });

  it('a model that opens the ops of a refused device, or answers another verdict than the static one: fail', () => {
    const integrated = cudaDevice({ faults: 'integrated' });
    try {
      // a model that opens the ops before answering (and answers the right verdict)
      fake.probe = (device) => {
        try {
          device.withOps?.(1, () => 0);
        } catch {
          // the check's spy throws once it has counted
        }
        return model.Refused(model.Integrated_gpu);
      };
      const opened = judge('static.verdict', context(integrated));
      expect(opened).toMatchObject({ status: 'fail', o: { observed: "Refused (Integrated_gpu); the driver's ops were opened 1 time", data: { opsOpened: 1 } } });
      // a model that reaches no op but answers another verdict
      fake.probe = () => model.Usable;
      const other = judge('static.verdict', context(integrated));
      expect(other).toMatchObject({ status: 'fail', o: { observed: 'Usable; the driver was never called' } });
      // a model that reads the map of a refused device: the check raises (defineChecks reports it as fail)
      fake.probe = (_device, map) => {
        void (map as { bytes: Uint8Array }).bytes.length;
        return model.Refused(model.Integrated_gpu);
      };
      expect(() => judge('static.verdict', context(integrated))).toThrow('the map was read');
    } finally {
      fake.probe = undefined;
    }
  });
});
