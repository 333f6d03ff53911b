// A backend is data: a fake third driver that registers host memory (test/support/fake-backend.ts, its double
// test/double/fake_double.c), added through the registry's test extension point alone, is discovered, given a
// verdict by the model and checked by the hazard suite in this process, as CUDA and HIP are. Its framework name is
// none the model lists and its codes are not CUDA's or HIP's (not registered 4040, invalid value 22): a verdict or
// a check still decided by a family name or by 713/1 would come out wrong here.
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import koffi from 'koffi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discover, deviceFromPlain, isGpuDriver, plainDevice, type DiscoveredDevice } from '../bindings/discovery.js';
import { backendOfDevice, registerTestBackend, registeringBackendIds } from '../bindings/registry.js';
import { makeScratchRegion } from '../bindings/scratch.js';
import { probe, registrations, staticVerdict } from '../src/index.js';
import type { CheckContext, Observation } from '../suites/check.js';
import { hazardChecks } from '../suites/hazards/index.js';
import { referenceChecks } from '../suites/hazards/reference.js';
import { buildDoubles } from './double/build.js';
import { FAKE, FAKE_LIBRARY_ENV, FAKE_NOT_REGISTERED, fakeBackend } from './support/fake-backend.js';
import { diskTempDir } from './support/temp-dir.js';

const MiB = 1024 * 1024;
const copies = mkdtempSync(join(tmpdir(), 'mapped-reg-fake-'));
const scratchDir = diskTempDir('mapped-reg-fake-scratch-');
const ENV = [FAKE_LIBRARY_ENV, 'MAPPED_REG_DOUBLE_PROFILE', 'MAPPED_REG_DOUBLE_FAULTS', 'MAPPED_REG_DOUBLE_DEVICES'] as const;
const saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));
let serial = 0;
let undo: () => void = () => {};

/** The fake's device through discovery, from a fresh copy of its double (its own driver state), configured as asked. */
function fakeDevice(faults?: string): { device: DiscoveredDevice; registrationCount: () => number } {
  const path = join(copies, `fake-${serial++}.so`);
  copyFileSync(buildDoubles().fake, path);
  process.env[FAKE_LIBRARY_ENV] = path;
  process.env.MAPPED_REG_DOUBLE_PROFILE = 'fake';
  if (faults) process.env.MAPPED_REG_DOUBLE_FAULTS = faults;
  else delete process.env.MAPPED_REG_DOUBLE_FAULTS;
  const found = discover([FAKE]);
  const device = found.devices.find((d) => d.id === 'fake:0');
  if (!device) throw new Error(`no fake device: ${JSON.stringify(found.backends)}`);
  const count = koffi.load(path).func('int double_registration_count(void)') as () => number;
  return { device, registrationCount: () => count() };
}

beforeAll(() => {
  delete process.env.MAPPED_REG_DOUBLE_DEVICES;
  undo = registerTestBackend(fakeBackend);
});

afterAll(() => {
  undo();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(copies, { recursive: true, force: true });
  rmSync(scratchDir, { recursive: true, force: true });
});

type Result = Observation & { status: 'pass' | 'warn' | 'fail' };

/** Every hazard check, in order, on `device`, in this process (as test/hazards.test.ts runs them on CUDA and HIP). */
function runHazards(device: DiscoveredDevice): Map<string, Result> {
  const ctx: CheckContext = { device, options: { device: device.id, scratchDir, sizeMiB: 4, runs: 3, minRelativeSpeed: 0.8, skip: [], quiet: { waitS: 0, maxDrop: 0.1 } }, log: () => {} };
  const results = new Map<string, Result>();
  const reference = new Set(referenceChecks.map((c) => c.id));
  for (const check of hazardChecks) {
    // a module that states no reference kit (bindings/reference-kit.ts) has the reference checks skipped, saying so
    if (reference.has(check.id)) {
      expect(check.applies(ctx), check.id).toBe(`${FAKE}'s module states no reference kit`);
      continue;
    }
    expect(check.applies(ctx), check.id).toBe(true);
    const o = check.run(ctx);
    results.set(check.id, { ...o, status: o.status ?? 'pass' });
  }
  return results;
}

describe('the fake backend, added through the registry alone', () => {
  it('registers host memory, by its module: the registry, discovery and the device id form say so', () => {
    expect(registeringBackendIds()).toEqual(['cuda', 'hip', FAKE]);
    expect(backendOfDevice('fake:3')?.id).toBe(FAKE);
    expect(backendOfDevice('fakex:3')).toBeUndefined();
    const { device } = fakeDevice();
    expect(isGpuDriver(device)).toBe(true);
    expect(device).toMatchObject({ id: 'fake:0', backend: FAKE, name: 'Double Fake Device', pciBusId: '0000:00:00.0', driver: { name: 'Fake', version: '301' }, integrated: false });
    expect(device.native?.api).toBe('Fake');
    expect(device.native?.kit.notRegistered).toEqual({ code: FAKE_NOT_REGISTERED, name: 'FAKE_ERROR_NOT_REGISTERED' });
    expect(device.native?.kit.libraryEnv).toBe(FAKE_LIBRARY_ENV);
  });

  it('is Self_test_required, then Usable through its own ops, with nothing left registered', () => {
    const { device, registrationCount } = fakeDevice();
    expect(staticVerdict(device.device)).toEqual({ kind: 'Self_test_required' });
    const region = makeScratchRegion(scratchDir, 4 * MiB);
    try {
      expect(probe(device.device, region.map, region.reference).kind).toBe('Usable');
    } finally {
      region.close();
    }
    expect(registrationCount()).toBe(0);
  });

  it("reads a failed integrated query by its module's policy (Device_kind_unknown), in this process and rebuilt from data", () => {
    const { device } = fakeDevice('integrated_query_fails');
    const refused = { kind: 'Decided', verdict: { kind: 'Refused', refusal: { kind: 'Device_kind_unknown' } } };
    expect(staticVerdict(device.device)).toEqual(refused);
    expect(staticVerdict(deviceFromPlain(plainDevice(device)).device)).toEqual(refused);
    const integrated = fakeDevice('integrated');
    expect(staticVerdict(deviceFromPlain(plainDevice(integrated.device)).device)).toEqual({ kind: 'Decided', verdict: { kind: 'Refused', refusal: { kind: 'Integrated_gpu' } } });
  });
});

describe('the hazard checks on the fake', () => {
  let results: Map<string, Result>;
  let left: number;
  const tableBefore = registrations.size;
  beforeAll(() => {
    const fake = fakeDevice();
    results = runHazards(fake.device);
    left = fake.registrationCount();
  }, 120_000);

  it('pass, but the truncation, whose child process knows the built-in backends only', () => {
    const statuses = Object.fromEntries([...results].map(([id, r]) => [id, r.status]));
    expect(statuses).toEqual({
      'hazard.prot_none_refused': 'pass',
      'hazard.readonly_mapping': 'pass',
      'hazard.tmpfs_bytes': 'pass',
      'hazard.memfd_bytes': 'pass',
      'hazard.private_mapping_bytes': 'pass',
      'hazard.double_registration_refused': 'pass',
      'hazard.overlap_refused': 'pass',
      'hazard.release_after_double_registration': 'pass',
      'hazard.unregister_after_register': 'pass',
      'hazard.unregister_unknown': 'pass',
      'hazard.unregister_interior': 'pass',
      'hazard.coherent_after_write': 'pass',
      'hazard.truncate_contained': 'fail',
      'hazard.unmap_then_unregister': 'pass',
      'hazard.context_reset': 'pass',
    });
    expect(results.get('hazard.truncate_contained')?.observed).toMatch(/unknown backend in device id fake:0/);
  });

  it("compare with the fake's own codes, by number and name", () => {
    expect(results.get('hazard.unregister_unknown')?.expected).toBe('4040 (FAKE_ERROR_NOT_REGISTERED)');
    expect(results.get('hazard.unregister_unknown')?.observed).toBe('unregister of a mapping never registered: 4040 FAKE_ERROR_NOT_REGISTERED');
    expect(results.get('hazard.unregister_interior')?.data).toMatchObject({ interior: 22, interiorName: 'FAKE_ERROR_INVALID_VALUE', start: 0 });
    expect(results.get('hazard.context_reset')?.expected).toMatch(/^after fakeDeviceReset while registered, unregister says not registered \(4040\)/);
    expect(results.get('hazard.context_reset')?.data).toMatchObject({ reset: 0, unregister: 4040, unregisterName: 'FAKE_ERROR_NOT_REGISTERED', again: 0, release: 0 });
    expect(results.get('hazard.double_registration_refused')?.data).toMatchObject({ second: 4041, secondName: 'FAKE_ERROR_ALREADY_REGISTERED' });
  });

  it('leave nothing registered, in the table or on disk', () => {
    expect(left).toBe(0);
    expect(registrations.size).toBe(tableBefore);
    expect(readdirSync(scratchDir)).toEqual([]);
  });
});
