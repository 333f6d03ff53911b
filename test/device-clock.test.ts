// The device's clock (bindings/device-clock.ts, src/probe.ts): uploads timed by events around each copy, against the
// driver doubles, whose events read a virtual clock that each copy advances by its modelled duration
// (test/double/README.md, "The device's clock"). Every figure asserted here is the double's own model, exact to the
// float the event API gives: the same on a loaded machine as on a quiet one. The host's clock is asserted only as
// never shorter (the double still paces its copies in wall time).
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { CudaError, loadCuda, withCudaOps, type CudaDriver, type DeviceOps } from '../bindings/cuda.js';
import { loadHip, withHipOps } from '../bindings/hip.js';
import { probeWithReport, windowSize } from '../src/probe.js';
import { bindingFixture, pattern } from './support/binding-harness.js';

const ENV_KEYS = ['MAPPED_REG_CUDA_LIBRARY', 'MAPPED_REG_DOUBLE_PROFILE', 'MAPPED_REG_DOUBLE_FAULTS', 'MAPPED_REG_DOUBLE_DEVICES', 'MAPPED_REG_DOUBLE_RATES', 'MAPPED_REG_DOUBLE_NOISE'];
const cuda = bindingFixture('cuda', ENV_KEYS);
const MiB = 1024 * 1024;
const RATES = 'registered=2,pinned=1,pageable=0.5';

/** A probe's region of 8 MiB: two windows of 4 MiB that differ. */
const region = (): Uint8Array => new Uint8Array(randomBytes(8 * MiB));

/** n bytes at G GB/s, in ms. */
const ms = (bytes: number, gbps: number): number => (bytes / (gbps * 1e9)) * 1000;

/** A separate instance of the CUDA double, configured by `env` at its cuInit. */
function freshCuda(env: Record<string, string>): CudaDriver {
  const d = loadCuda(cuda.freshCopy('libcuda_double'));
  for (const [k, v] of Object.entries(env)) process.env[k] = v;
  try {
    d.devices(); // cuInit reads the configuration now
  } finally {
    for (const k of Object.keys(env)) cuda.restoreEnv(k);
  }
  return d;
}

/** `runs` uploads of a registered file mapping of `bytes` and of a page-locked buffer, each on the device's clock. */
function deviceTimes(ops: DeviceOps, bytes: number, runs: number): { registered: number[]; pinned: number[] } {
  const m = cuda.fileMapping(pattern(bytes, 3));
  const pinned = ops.allocHost(bytes);
  ops.register(m);
  const clock = ops.deviceClock!();
  try {
    const out = { registered: [] as number[], pinned: [] as number[] };
    for (let i = 0; i < runs; i++) {
      out.registered.push(clock.timeUpload(m));
      out.pinned.push(clock.timeUpload(pinned));
    }
    return out;
  } finally {
    clock.close();
    ops.unregister(m);
    ops.freeHost(pinned);
  }
}

describe('CUDA: cuEvent* around each upload', () => {
  let driver: CudaDriver;
  beforeAll(() => {
    driver = freshCuda({ MAPPED_REG_DOUBLE_RATES: RATES });
  });

  it("an upload on the device's clock reads the double's modelled duration, registered and page-locked alike", () => {
    const bytes = 4 * MiB;
    const t = withCudaOps(driver, 0, bytes, (ops) => deviceTimes(ops, bytes, 3));
    for (const x of t.registered) expect(x).toBeCloseTo(ms(bytes, 2), 4);
    for (const x of t.pinned) expect(x).toBeCloseTo(ms(bytes, 1), 4);
  });

  it('with seeded noise the device clock reads the same durations in two instances of one seed, and others for another seed', () => {
    const bytes = 2 * MiB;
    const times = (seed: number): number[] => {
      const d = freshCuda({ MAPPED_REG_DOUBLE_RATES: RATES, MAPPED_REG_DOUBLE_NOISE: `sd=5%,drift=3%,seed=${seed}` });
      return withCudaOps(d, 0, bytes, (ops) => deviceTimes(ops, bytes, 4).registered);
    };
    const [a, b, c] = [times(11), times(11), times(12)];
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    // noisy, yet each within a few sd of the rate
    for (const x of a) expect(Math.abs(Math.log(x / ms(bytes, 2)))).toBeLessThan(0.3);
    expect(new Set(a).size).toBeGreaterThan(1);
  });

  it("the probe times on the device's clock: timing.clock device, the rates themselves, the host's ms beside them (never shorter)", () => {
    const content = region();
    const map = cuda.fileMapping(content);
    const report = withCudaOps(driver, 0, windowSize(content.length), (ops) => probeWithReport(ops, map, content, { runs: 3 }));
    expect(report.verdict).toEqual({ kind: 'Usable' });
    const t = report.timing!;
    expect(t.clock).toEqual({ clock: 'device' });
    expect(t.registeredGBps).toBeCloseTo(2, 4);
    expect(t.pageLockedGBps).toBeCloseTo(1, 4);
    expect(t.samples.hostRegisteredMs).toHaveLength(3);
    expect(t.samples.hostPageLockedMs).toHaveLength(3);
    t.samples.hostRegisteredMs!.forEach((host, i) => expect(host).toBeGreaterThanOrEqual(t.samples.registeredMs[i]! - 1e-3));
    // the staged copy: its memcpy on the host's clock plus its upload on the device's
    t.samples.stagedMs.forEach((staged, i) => expect(staged).toBeCloseTo(t.samples.hostCopyMs[i]! + ms(4 * MiB, 1), 4));
  });

  it("events that cannot be made (events_fail): the host's clock times the copies, and the results say why", () => {
    const d = freshCuda({ MAPPED_REG_DOUBLE_RATES: RATES, MAPPED_REG_DOUBLE_FAULTS: 'events_fail' });
    const content = region();
    const map = cuda.fileMapping(content);
    const log: string[] = [];
    const report = withCudaOps(d, 0, windowSize(content.length), (ops) => {
      expect(() => ops.deviceClock!()).toThrow(CudaError);
      return probeWithReport(ops, map, content, { runs: 3, log: (l) => log.push(l) });
    });
    const t = report.timing!;
    expect(t.clock).toEqual({ clock: 'host', why: expect.stringMatching(/^the device clock could not be opened: .*cuEventCreate.*801/) });
    expect(t.samples.hostRegisteredMs).toBeUndefined();
    // paced in wall time: the host's clock reads no faster than the rate
    expect(t.registeredGBps).toBeLessThanOrEqual(2);
    expect(log.some((l) => /timed on the host's clock/.test(l))).toBe(true);
  });
});

describe('HIP: hipEvent* around each upload', () => {
  it("an upload on the device's clock reads the double's modelled duration", () => {
    process.env['MAPPED_REG_DOUBLE_RATES'] = RATES;
    try {
      const hip = loadHip(cuda.state.otherDoublePath);
      hip.devices();
      const bytes = 4 * MiB;
      const t = withHipOps(hip, 0, bytes, (ops) => deviceTimes(ops, bytes, 2));
      for (const x of t.registered) expect(x).toBeCloseTo(ms(bytes, 2), 4);
      for (const x of t.pinned) expect(x).toBeCloseTo(ms(bytes, 1), 4);
    } finally {
      cuda.restoreEnv('MAPPED_REG_DOUBLE_RATES');
    }
  });
});
