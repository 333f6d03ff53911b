// The hazard checks against the driver double, through the real bindings: every check passes on the `cuda`
// profile (the H200 of the facts file) and on `rocm-fixed`; on `rocm724` exactly the spec's ROCm 7.2.4 bugs fail.
// Each run also proves the discipline: no scratch file is left, and no mapping is unmapped while the model's
// table still holds part of it (save the one hazard.unmap_then_unregister unmaps on purpose).
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ROCM724_FAILS } from './support/profiles.js';
import type { Mapping } from '../bindings/libc.js';

/** Every munmap of the run: which check did it, and whether the table still held part of the range then. */
const spy = vi.hoisted(() => ({ current: '', unmaps: [] as { check: string; address: bigint; pinned: boolean }[] }));

vi.mock('../bindings/libc.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../bindings/libc.js')>();
  const { registrations } = await import('../src/ops.js');
  return {
    ...real,
    munmap: (m: Mapping): void => {
      spy.unmaps.push({ check: spy.current, address: m.address, pinned: registrations.isPinned(m) });
      real.munmap(m);
    },
  };
});

import { discover } from '../bindings/discovery.js';
import { statfs } from '../bindings/libc.js';
import { registrations } from '../src/index.js';
import type { CheckContext, Observation } from '../suites/check.js';
import { TRUNCATE_CHILD_TIMEOUT_MS, hazardChecks } from '../suites/hazards/index.js';
import { referenceChecks } from '../suites/hazards/reference.js';
import { keptMappings } from '../suites/context.js';
import { loadDouble } from './support/drivers.js';
import { diskTempDir } from './support/temp-dir.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const scratchDir = diskTempDir('mapped-reg-hazards-test-');
afterAll(() => rmSync(scratchDir, { recursive: true, force: true }));

const IDS = [
  'hazard.prot_none_refused',
  'hazard.readonly_mapping',
  'hazard.tmpfs_bytes',
  'hazard.memfd_bytes',
  'hazard.private_mapping_bytes',
  'hazard.double_registration_refused',
  'hazard.overlap_refused',
  'hazard.release_after_double_registration',
  'hazard.unregister_after_register',
  'hazard.unregister_unknown',
  'hazard.unregister_interior',
  'hazard.coherent_after_write',
  'hazard.unmap_then_unregister',
  'hazard.context_reset',
  'hazard.truncate_contained',
];

/** The reference checks run between them (before hazard.context_reset): test/reference-negatives.test.ts holds them. */
const REFERENCE = new Set(referenceChecks.map((c) => c.id));
/** The hazard checks this file runs: all but the reference checks. */
const HAZARDS = hazardChecks.filter((c) => !REFERENCE.has(c.id));

type Result = Observation & { status: 'pass' | 'warn' | 'fail' };

interface Run {
  results: Map<string, Result>;
  logs: string[];
  unmaps: typeof spy.unmaps;
  /** Entries the run left in the model's table, and mappings it kept. */
  tableGrowth: number;
  keptGrowth: number;
  /** Live registrations in the double after the run. */
  doubleCount: number;
  /** What is left in the scratch folder and of this process's folders in /dev/shm. */
  leftScratch: string[];
  leftShm: string[];
}

/** Every hazard check, in order, against a fresh copy of the double configured as asked. */
function runAll(backend: 'cuda' | 'hip', profile: string, faults?: string): Run {
  const loaded = loadDouble(backend, { profile, ...(faults ? { faults } : {}) });
  const device = loaded.discovery.devices.find((d) => d.backend === backend);
  if (!device) throw new Error(`no ${backend} device from the double: ${JSON.stringify(loaded.discovery.backends)}`);
  const logs: string[] = [];
  const ctx: CheckContext = {
    device,
    options: { device: device.id, scratchDir, sizeMiB: 4, runs: 3, minRelativeSpeed: 0.8, skip: [], quiet: { waitS: 0, maxDrop: 0.1 } },
    log: (m) => logs.push(m),
  };
  const results = new Map<string, Result>();
  const tableBefore = registrations.size;
  const keptBefore = keptMappings.length;
  spy.unmaps = [];
  // The truncation child reads the double's configuration from its environment (the library path the check passes).
  const saved = { profile: process.env.MAPPED_REG_DOUBLE_PROFILE, faults: process.env.MAPPED_REG_DOUBLE_FAULTS };
  process.env.MAPPED_REG_DOUBLE_PROFILE = profile;
  if (faults) process.env.MAPPED_REG_DOUBLE_FAULTS = faults;
  else delete process.env.MAPPED_REG_DOUBLE_FAULTS;
  try {
    for (const check of HAZARDS) {
      spy.current = check.id;
      expect(check.applies(ctx), check.id).toBe(true);
      const o = check.run(ctx);
      results.set(check.id, { ...o, status: o.status ?? 'pass' });
    }
  } finally {
    spy.current = '';
    for (const [k, v] of [
      ['MAPPED_REG_DOUBLE_PROFILE', saved.profile],
      ['MAPPED_REG_DOUBLE_FAULTS', saved.faults],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  const mine = `.mapped-reg-${process.pid}-`;
  return {
    results,
    logs,
    unmaps: spy.unmaps,
    tableGrowth: registrations.size - tableBefore,
    keptGrowth: keptMappings.length - keptBefore,
    doubleCount: loaded.registrationCount(),
    leftScratch: readdirSync(scratchDir),
    leftShm: existsSync('/dev/shm') ? readdirSync('/dev/shm').filter((n) => n.startsWith(mine)) : [],
  };
}

const statuses = (run: Run): Record<string, string> => Object.fromEntries([...run.results].map(([id, r]) => [id, r.status]));
const failing = (run: Run): string[] => [...run.results].filter(([, r]) => r.status === 'fail').map(([id]) => id);
const data = (run: Run, id: string): Record<string, unknown> => run.results.get(id)?.data ?? {};
const observed = (run: Run, id: string): string => run.results.get(id)?.observed ?? '';

/** Only hazard.unmap_then_unregister unmaps a range the table holds, once, on purpose. */
function expectDiscipline(run: Run): void {
  expect(run.leftScratch).toEqual([]);
  expect(run.leftShm).toEqual([]);
  expect(run.unmaps.filter((u) => u.pinned).map((u) => u.check)).toEqual(['hazard.unmap_then_unregister']);
}

/** Nothing registered (the table and the double's count back where they were), nothing kept, the discipline held. */
function expectNothingHeld(run: Run): void {
  expect(run.tableGrowth).toBe(0);
  expect(run.keptGrowth).toBe(0);
  expect(run.doubleCount).toBe(0);
  expectDiscipline(run);
}

/** The checks that unmapped something (all but the truncation, whose mapping lives in its child). */
const unmappers = (run: Run): string[] => [...new Set(run.unmaps.map((u) => u.check))];

beforeAll(() => {
  // The truncation child runs compiled: dist/suites/hazards/truncate-child.js, built by test/global-setup.ts.
  const js = join(root, 'dist', 'suites', 'hazards', 'truncate-child.js');
  const ts = join(root, 'suites', 'hazards', 'truncate-child.ts');
  if (!existsSync(js) || statSync(js).mtimeMs < statSync(ts).mtimeMs) throw new Error(`${js} is missing or older than ${ts}: run the tests through vitest (its global setup builds dist/)`);
  // The byte checks must see a disk file system where the test says "scratch": on tmpfs rocm724 would zero them.
  expect(statfs(scratchDir).fsName).not.toBe('tmpfs');
}, 180_000);

it('lists the checks in their stable order, all in suite hazards, context_reset after every check that uses the context, truncate_contained (its child started after the probe, in a context of its own) last', () => {
  expect(HAZARDS.map((c) => c.id)).toEqual(IDS);
  expect(hazardChecks.map((c) => c.id)).toEqual([...IDS.slice(0, -2), ...REFERENCE, 'hazard.context_reset', 'hazard.truncate_contained']);
  expect(new Set(hazardChecks.map((c) => c.suite))).toEqual(new Set(['hazards']));
  for (const c of hazardChecks) expect(c.title.length).toBeGreaterThan(10);
});

it('applies only to devices that register (CUDA, HIP); others get the reason and their static verdict', () => {
  const cpu = discover(['cpu']).devices[0]!;
  const ctx: CheckContext = { device: cpu, options: { device: 'cpu', scratchDir, sizeMiB: 4, runs: 3, minRelativeSpeed: 0.8, skip: [], quiet: { waitS: 0, maxDrop: 0.1 } }, log: () => {} };
  for (const c of hazardChecks) {
    const a = c.applies(ctx);
    expect(a).toMatch(/^no registration on cpu, static verdict Not_needed$/);
  }
});

/** runAll in a beforeAll of the describe block it is called in: the run is filled in then, so read it inside tests only. */
function runBeforeAll(backend: 'cuda' | 'hip', profile: string): Run {
  const run = {} as Run; // filled in by beforeAll, before any test reads it
  beforeAll(() => {
    Object.assign(run, runAll(backend, profile));
  }, 120_000);
  return run;
}

/** Every hazard check's status when all pass. */
const ALL_PASS = Object.fromEntries(IDS.map((id) => [id, 'pass']));

describe('CUDA double, profile cuda (the H200 of the facts file)', () => {
  const run = runBeforeAll('cuda', 'cuda');

  it('every hazard check passes', () => {
    expect(statuses(run)).toEqual(ALL_PASS);
  });

  it('observes the codes of the facts file, by number and name', () => {
    expect(data(run, 'hazard.prot_none_refused').tries).toEqual([
      { flags: 0, register: 1, registerName: 'CUDA_ERROR_INVALID_VALUE' },
      { flags: 8, register: 1, registerName: 'CUDA_ERROR_INVALID_VALUE' },
    ]);
    expect(data(run, 'hazard.readonly_mapping')).toMatchObject({ flags0: 1, flags0Name: 'CUDA_ERROR_INVALID_VALUE', flags: 8, register: 0, firstDifference: -1, unregister: 0 });
    expect(observed(run, 'hazard.readonly_mapping')).toBe('flags 0: register 1 CUDA_ERROR_INVALID_VALUE; flags 0x8: register 0; bytes equal; unregister 0');
    expect(data(run, 'hazard.tmpfs_bytes')).toMatchObject({ register: 0, firstDifference: -1, unregister: 0 });
    expect(data(run, 'hazard.memfd_bytes')).toMatchObject({ flags: 0, register: 0, firstDifference: -1, unregister: 0 });
    expect(data(run, 'hazard.private_mapping_bytes')).toMatchObject({ flags: 8, register: 0, firstDifference: -1, unregister: 0 });
    expect(observed(run, 'hazard.double_registration_refused')).toBe('register 0; again 712 CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED; unregister 0');
    expect(data(run, 'hazard.overlap_refused')).toMatchObject({ adjacent: 0, adjacentRelease: 0, overlap: 712, overlapName: 'CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED', releases: [0] });
    expect(data(run, 'hazard.release_after_double_registration')).toMatchObject({ second: 712, releases: [0] });
    expect(data(run, 'hazard.unregister_after_register')).toMatchObject({ unregister: 0, again: 713 });
    expect(observed(run, 'hazard.unregister_unknown')).toBe('unregister of a mapping never registered: 713 CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED');
    expect(data(run, 'hazard.unregister_interior')).toMatchObject({ interior: 1, interiorName: 'CUDA_ERROR_INVALID_VALUE', start: 0 });
    expect(data(run, 'hazard.coherent_after_write')).toMatchObject({ before: -1, after: -1, unregister: 0 });
    expect(data(run, 'hazard.unmap_then_unregister')).toMatchObject({ unregister: 0, again: 0, againBytes: -1, againRelease: 0 });
    expect(data(run, 'hazard.context_reset')).toMatchObject({ reset: 0, unregister: 713, unregisterName: 'CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED', again: 0, release: 0, retainRelease: 0 });
  });

  it('contains the truncation in a child: the large copy from the cut tail is refused, the small one (read by the CPU) dies of SIGBUS, as on the H200', () => {
    const d = data(run, 'hazard.truncate_contained');
    expect(d.child).toMatchObject({ status: null, signal: 'SIGBUS', timedOut: false });
    expect(d.large).toEqual({ code: 1, name: 'CUDA_ERROR_INVALID_VALUE' });
    expect(observed(run, 'hazard.truncate_contained')).toMatch(/16 MiB copy from the cut tail: 1 CUDA_ERROR_INVALID_VALUE; .*SIGBUS.*the run went on/);
    expect(run.results.get('hazard.truncate_contained')?.status).toBe('pass');
    expect((d.child as { ms: number }).ms).toBeLessThan(TRUNCATE_CHILD_TIMEOUT_MS);
  });

  it('leaves nothing registered, kept or on disk, and unmaps only what the table does not hold', () => {
    expectNothingHeld(run);
    expect(unmappers(run)).toEqual(IDS.filter((id) => id !== 'hazard.truncate_contained'));
  });
});

describe('HIP double, profile rocm724 (ROCm 7.2.4 as the spec describes it)', () => {
  const run = runBeforeAll('hip', 'rocm724');

  it('exactly the five ROCm 7.2.4 behaviours fail; the rest pass', () => {
    expect(failing(run).sort()).toEqual([...ROCM724_FAILS].sort());
    for (const id of IDS.filter((i) => !ROCM724_FAILS.includes(i))) expect(run.results.get(id)?.status, id).toBe('pass');
  });

  it('says what the driver did', () => {
    expect(observed(run, 'hazard.prot_none_refused')).toMatch(/^flags 0x0: register 0, unregister 713 hipErrorHostMemoryNotRegistered; release at the end: unregister 0x[0-9a-f]+ 713 hipErrorHostMemoryNotRegistered$/);
    // the first difference is the file's first byte that is not 0 (random: offset 0, 255 times in 256)
    expect(data(run, 'hazard.tmpfs_bytes')).toMatchObject({ register: 0, firstDifference: expect.any(Number), zeros: true, unregister: 0 });
    expect(observed(run, 'hazard.tmpfs_bytes')).toMatch(/bytes differ at offset \d+ \(all zeros\)/);
    expect(data(run, 'hazard.double_registration_refused')).toMatchObject({ second: 0, releases: [713, 713] });
    expect(data(run, 'hazard.overlap_refused')).toMatchObject({ adjacent: 0, adjacentRelease: 0, overlap: 0, releases: [713, 713] });
    expect(data(run, 'hazard.release_after_double_registration')).toMatchObject({ second: 0, releases: [713, 713], releaseNames: ['hipErrorHostMemoryNotRegistered', 'hipErrorHostMemoryNotRegistered'] });
    // flags 0 is what HIP uses: no separate read-only flag to try
    expect(data(run, 'hazard.readonly_mapping')).toMatchObject({ flags: 0, flags0: 0, register: 0, firstDifference: -1, unregister: 0 });
    expect(observed(run, 'hazard.unregister_unknown')).toBe('unregister of a mapping never registered: 713 hipErrorHostMemoryNotRegistered');
    expect(data(run, 'hazard.unregister_interior')).toMatchObject({ interior: 1, start: 0 });
    expect(data(run, 'hazard.context_reset')).toMatchObject({ reset: 0, unregister: 713, again: 0, release: 0 });
    expect(data(run, 'hazard.context_reset')).not.toHaveProperty('retainRelease');
    expect(data(run, 'hazard.truncate_contained')).toMatchObject({ child: { status: 0 }, large: { code: 1 }, small: { code: 1 }, unregister: 0 });
  });

  it('keeps every range whose release failed mapped and in the table, and leaves nothing on disk', () => {
    // prot_none (1), double registration (2), overlap (2), release after double registration (2)
    expect(run.tableGrowth).toBe(7);
    expect(run.keptGrowth).toBe(4);
    for (const m of keptMappings.slice(-4)) expect(registrations.isPinned(m)).toBe(true);
    expect(run.logs.filter((l) => l.includes('kept mapped'))).toHaveLength(4);
    // hipDeviceReset (hazard.context_reset) dropped the stuck ones in the double
    expect(run.doubleCount).toBe(0);
    expectDiscipline(run);
  });
});

describe('HIP double, profile rocm-fixed', () => {
  const run = runBeforeAll('hip', 'rocm-fixed');

  it('every hazard check passes', () => {
    expect(statuses(run)).toEqual(ALL_PASS);
    expect(data(run, 'hazard.double_registration_refused')).toMatchObject({ second: 712, secondName: 'hipErrorHostMemoryAlreadyRegistered' });
    expect(data(run, 'hazard.prot_none_refused').tries).toEqual([{ flags: 0, register: 1, registerName: 'hipErrorInvalidValue' }]);
  });

  it('leaves nothing registered, kept or on disk', () => {
    expectNothingHeld(run);
    expect(unmappers(run)).toEqual(IDS.filter((id) => id !== 'hazard.truncate_contained'));
  });
});

describe('faults: what the checks catch beyond the profiles', () => {
  it('wrong_bytes (a registered copy flips one byte): every check that compares bytes fails, the others pass', () => {
    const run = runAll('cuda', 'cuda', 'wrong_bytes');
    expect(failing(run).sort()).toEqual(['hazard.coherent_after_write', 'hazard.memfd_bytes', 'hazard.private_mapping_bytes', 'hazard.readonly_mapping', 'hazard.tmpfs_bytes'].sort());
    expect(data(run, 'hazard.readonly_mapping')).toMatchObject({ firstDifference: 512 * 1024 });
    expect(run.tableGrowth).toBe(0);
    expectDiscipline(run);
  }, 120_000);

  it('unregister_fails=1 (each release fails once): first-try releases fail, and the cleanup still releases everything', () => {
    const run = runAll('cuda', 'cuda', 'unregister_fails=1');
    // every check that holds a release at the first try fails; those that judge no release of theirs pass
    expect(failing(run)).toEqual(IDS.filter((id) => !['hazard.prot_none_refused', 'hazard.double_registration_refused', 'hazard.overlap_refused', 'hazard.unregister_unknown', 'hazard.truncate_contained'].includes(id)));
    const r = run.results.get('hazard.unregister_after_register')!;
    expect(r.status).toBe('fail');
    expect(r.observed).toContain('unregister 999 CUDA_ERROR_UNKNOWN');
    expect(data(run, 'hazard.unregister_after_register').cleanup).toEqual([expect.objectContaining({ code: 0 })]);
    expect(run.results.get('hazard.unregister_unknown')?.status).toBe('pass');
    expect(data(run, 'hazard.context_reset')).toMatchObject({ unregister: 713, again: 0, release: 999, retry: 0 });
    // every registration was released on its retry: nothing stays in the table, nothing is kept
    expectNothingHeld(run);
  }, 120_000);
});

/**
 * One fault of the CUDA double per hazard check: each breaks that check's promise alone, and the rest of the
 * double behaves as the H200 did (test/double/README.md, "Faults"; the table is in docs/spec-tests.md).
 */
const BREAKS: readonly (readonly [fault: string, check: string, observed: RegExp])[] = [
  ['accept_prot_none', 'hazard.prot_none_refused', /^flags 0x0: register 0, unregister 0; flags 0x8: register 0, unregister 0$/],
  ['readonly_flags0', 'hazard.readonly_mapping', /^flags 0: register 0, unregister 999 CUDA_ERROR_UNKNOWN; release at the end: unregister 0x[0-9a-f]+ 0$/],
  // the first difference is the file's first byte that is not 0 (random: offset 0, 255 times in 256)
  ['tmpfs_zeros', 'hazard.tmpfs_bytes', /^register 0; bytes differ at offset \d+ \(all zeros\); unregister 0$/],
  ['memfd_wrong_bytes', 'hazard.memfd_bytes', /^register 0; bytes differ at offset 524288; unregister 0$/],
  ['private_wrong_bytes', 'hazard.private_mapping_bytes', /^register 0; bytes differ at offset 524288; unregister 0$/],
  ['accept_same_range', 'hazard.double_registration_refused', /^register 0; again 0; unregister 0, 0$/],
  ['accept_overlap', 'hazard.overlap_refused', /overlapping pages 1-2: register 0; unregister 0, 0$/],
  ['duplicate_spoils_release', 'hazard.release_after_double_registration', /^register 0; again 712 CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED; 1 unregister: 999 CUDA_ERROR_UNKNOWN; release at the end: unregister 0x[0-9a-f]+ 0$/],
  ['idle_release_fails', 'hazard.unregister_after_register', /^register 0; unregister 999 CUDA_ERROR_UNKNOWN; release at the end: unregister 0x[0-9a-f]+ 0$/],
  ['unknown_unregister_invalid', 'hazard.unregister_unknown', /^unregister of a mapping never registered: 1 CUDA_ERROR_INVALID_VALUE$/],
  ['interior_unregister_succeeds', 'hazard.unregister_interior', /^register 0; unregister at \+4096: 0; unregister of the start: 0$/],
  ['stale_after_write', 'hazard.coherent_after_write', /after a pwrite of 1 MiB: stale bytes \(the old ones\); unregister 0$/],
  ['unmapped_unregister_fails', 'hazard.unmap_then_unregister', /^register 0; munmap; unregister 999 CUDA_ERROR_UNKNOWN/],
  ['reset_keeps_registrations', 'hazard.context_reset', /unregister after the reset 0; the kept context retain released 0$/],
  ['register_max=16777216', 'hazard.truncate_contained', /^the file was not cut under a registration: register 2 CUDA_ERROR_OUT_OF_MEMORY: nothing to cut under$/],
];

describe('a driver that refuses every registration (register_max=1)', () => {
  it('the checks a refusal satisfies pass; those that need a registration fail saying there was none; nothing is left', () => {
    const run = runAll('cuda', 'cuda', 'register_max=1');
    expect(statuses(run)).toEqual({
      'hazard.prot_none_refused': 'pass',
      'hazard.readonly_mapping': 'fail',
      'hazard.tmpfs_bytes': 'pass',
      'hazard.memfd_bytes': 'pass',
      'hazard.private_mapping_bytes': 'pass',
      'hazard.double_registration_refused': 'fail',
      'hazard.overlap_refused': 'fail',
      'hazard.release_after_double_registration': 'fail',
      'hazard.unregister_after_register': 'fail',
      'hazard.unregister_unknown': 'pass',
      'hazard.unregister_interior': 'fail',
      'hazard.coherent_after_write': 'fail',
      'hazard.truncate_contained': 'fail',
      'hazard.unmap_then_unregister': 'fail',
      'hazard.context_reset': 'fail',
    });
    expect(observed(run, 'hazard.tmpfs_bytes')).toBe('refused: register 2 CUDA_ERROR_OUT_OF_MEMORY');
    expect(run.results.get('hazard.readonly_mapping')?.message).toBe('a read-only mapping would not register with the read-only flag');
    for (const id of ['hazard.double_registration_refused', 'hazard.overlap_refused', 'hazard.release_after_double_registration', 'hazard.unregister_after_register', 'hazard.unregister_interior', 'hazard.coherent_after_write', 'hazard.unmap_then_unregister']) {
      expect(run.results.get(id)?.message, id).toMatch(/^nothing to /);
    }
    expect(observed(run, 'hazard.context_reset')).toBe('register 2 CUDA_ERROR_OUT_OF_MEMORY: nothing to reset under');
    expect(run.tableGrowth).toBe(0);
    expect(run.doubleCount).toBe(0);
    expect(run.leftScratch).toEqual([]);
    expect(run.leftShm).toEqual([]);
    expect(run.unmaps.filter((u) => u.pinned)).toEqual([]); // nothing registered: nothing unmapped while held
  }, 60_000);
});

describe('a registration a check does not judge, stuck: the check fails for the release at its end', () => {
  it('stuck_registration=7 (the adjacent range of hazard.overlap_refused): only that check fails, the range stays in the table and mapped', () => {
    const run = runAll('cuda', 'cuda', 'stuck_registration=7');
    expect(failing(run)).toEqual(['hazard.overlap_refused']);
    const r = run.results.get('hazard.overlap_refused')!;
    // its own judgement (the overlap refused, the adjacent range accepted) holds: the release at the end fails it
    expect(r.observed).toMatch(/^pages 0-1: register 0; adjacent pages 2-3: register 0, unregister 999 CUDA_ERROR_UNKNOWN; overlapping pages 1-2: register 712 CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED; unregister 0, 999 CUDA_ERROR_UNKNOWN; release at the end: unregister 0x[0-9a-f]+ 999 CUDA_ERROR_UNKNOWN$/);
    expect(r.message).toBe('1 registration(s) could not be released: kept in the table, mapped, until the process ends');
    expect(run.tableGrowth).toBe(1);
    expect(run.keptGrowth).toBe(1);
    expect(run.logs.filter((l) => l.includes('kept mapped'))).toHaveLength(1);
    expectDiscipline(run);
  }, 60_000);
});

describe('one fault per promise: each breaks exactly its hazard check, and the checks that follow behave', () => {
  it('covers every hazard check once', () => {
    expect(BREAKS.map(([, id]) => id)).toEqual(IDS);
  });

  for (const [fault, id, seen] of BREAKS) {
    it(`${fault}: only ${id} fails, for its own reason`, () => {
      const run = runAll('cuda', 'cuda', fault);
      expect(failing(run)).toEqual([id]);
      expect(statuses(run)).toEqual(Object.fromEntries(IDS.map((i) => [i, i === id ? 'fail' : 'pass'])));
      expect(observed(run, id)).toMatch(seen);
      expectDiscipline(run);
    }, 60_000);
  }
});
