// The reference checks (suites/hazards/reference*.ts; docs/reference-checks.md) through the built command, against
// the driver double: the honest double passes every check; each of the double's reference faults (a lying
// attribute, a leak per cycle, an unknown flag or a NULL accepted, an unregister of NULL that crashes) makes exactly
// its check fail, by name, in the JSON, in JUnit and in the gate; and the double's attributes, set otherwise and
// honestly (MAPPED_REG_DOUBLE_ATTRIBUTES), still pass the checks that hold them.
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { parseLockedMemory } from '../bindings/locked-memory.js';
import { resultsValidator } from '../results/read.js';
import { registrations } from '../src/index.js';
import { keptMappings } from '../suites/context.js';
import type { CheckContext } from '../suites/check.js';
import { zeroSizeRefused } from '../suites/hazards/reference-negatives.js';
import { loadDouble } from './support/drivers.js';
import { diskTempDir } from './support/temp-dir.js';
import type { CheckResult, RunResult } from '../results/types.js';
import { referenceChecks } from '../suites/hazards/reference.js';
import { referenceCopyChecks } from '../suites/hazards/reference-copies.js';
import { hazardChecks } from '../suites/hazards/index.js';
import { runCommand, workspace } from './support/workspace.js';
import { allElements, childElement, parseXml } from './support/xml.js';
import { validateJunit } from './support/junit-xsd.js';

const { work, doubles } = workspace('mapped-reg-reference-', 'now');

const REFERENCE_IDS = [
  'hazard.host_register_attribute',
  'hazard.readonly_register_attribute',
  'hazard.host_pointer_attribute',
  'hazard.page_tables_attribute',
  'hazard.register_cycles',
  'hazard.unknown_flags_refused',
  'hazard.null_pointer_refused',
  'hazard.zero_size_refused',
  'hazard.unregister_null_refused',
];

interface Ran {
  code: number | null;
  json: RunResult;
  junit: string;
  checks: Map<string, CheckResult>;
}

/**
 * The double's copies at set rates: on the device's clock they read the model, so the timed checks (the margin, the
 * portable check's ratio) never turn on how loaded this machine is (unpaced, a copy is the double's memcpy, and a
 * fresh clone's CI run under load once failed the honest double here).
 */
const RATES = 'registered=2,pinned=2,pageable=0.5';

/** The command on the CUDA (or HIP) double with `env`: every check, one device. */
function run(env: Record<string, string>, backend: 'cuda' | 'hip' = 'cuda'): Ran {
  const r = runCommand(
    work,
    (out) => ['--backend', backend, '--size', '4', '--runs', '3', '--junit', out('xml')],
    () => ({
      MAPPED_REG_DOUBLE_RATES: RATES,
      ...(backend === 'cuda' ? { MAPPED_REG_CUDA_LIBRARY: doubles.cuda } : { MAPPED_REG_HIP_LIBRARY: doubles.hip, MAPPED_REG_DOUBLE_PROFILE: 'rocm-fixed' }),
      ...env,
    }),
  );
  const json = JSON.parse(r.read('json')) as RunResult;
  expect(json.devices, r.stderr).toHaveLength(1);
  return { code: r.code, json, junit: r.read('xml'), checks: new Map(json.devices[0]!.checks.map((c) => [c.id, c])) };
}

/** The ids of the checks whose status is not pass or skip. */
const notPassing = (r: Ran): string[] => [...r.checks.values()].filter((c) => c.status !== 'pass' && c.status !== 'skip').map((c) => c.id);

/** JUnit's testcases with a <failure> (or, for `kind` 'error', an <error>), by name, in the device's suite. */
function junitFailing(r: Ran, kind: 'failure' | 'error' = 'failure'): string[] {
  const v = validateJunit(r.junit);
  expect(v.ok, v.output).toBe(true);
  const suite = allElements(parseXml(r.junit), 'testsuite').find((s) => s.attrs.name?.startsWith('cuda:0') || s.attrs.name?.startsWith('hip:0'))!;
  // a testcase's title is `<device> > <check>` (reporters/junit-cases.ts: caseTitle): the check's id after the device
  return allElements(suite, 'testcase').filter((t) => childElement(t, kind)).map((t) => t.attrs.name!.replace(/^\S+ > /, ''));
}

it('the catalog holds the reference checks in their order, in suite hazards, before hazard.context_reset and hazard.truncate_contained', () => {
  // this file's nine, then the copies (test/reference-checks.test.ts)
  const all = [...REFERENCE_IDS, ...referenceCopyChecks.map((c) => c.id)];
  expect(referenceChecks.map((c) => c.id)).toEqual(all);
  const ids = hazardChecks.map((c) => c.id);
  expect(ids.slice(-all.length - 2)).toEqual([...all, 'hazard.context_reset', 'hazard.truncate_contained']);
  for (const c of referenceChecks) expect(c.suite).toBe('hazards');
});

describe('the honest double', () => {
  it('CUDA (the H200 of the facts file): every reference check passes, with what the driver returned kept', () => {
    const r = run({});
    expect(notPassing(r)).toEqual([]);
    expect(r.code).toBe(0);
    for (const id of REFERENCE_IDS) expect(r.checks.get(id)?.status, id).toBe('pass');
    expect(r.checks.get('hazard.unknown_flags_refused')?.observed).toBe('flags 0x8: register 0, unregister 0; flags 0xf8: register 1 CUDA_ERROR_INVALID_VALUE; flags 0xfffa: register 1 CUDA_ERROR_INVALID_VALUE; flags 0xffffffff: register 1 CUDA_ERROR_INVALID_VALUE');
    expect(r.checks.get('hazard.null_pointer_refused')?.data).toEqual({ register: 1, registerName: 'CUDA_ERROR_INVALID_VALUE' });
    expect(r.checks.get('hazard.zero_size_refused')?.data).toEqual({ register: 1, registerName: 'CUDA_ERROR_INVALID_VALUE' });
    expect(r.checks.get('hazard.unregister_null_refused')?.data).toEqual({ unregister: 1, unregisterName: 'CUDA_ERROR_INVALID_VALUE' });
    const cycles = r.checks.get('hazard.register_cycles')!;
    expect(cycles.data).toMatchObject({ cycles: 100, freeBefore: expect.any(Number), freeAfter: cycles.data?.freeBefore, freeHalves: [cycles.data?.freeBefore, cycles.data?.freeBefore], lockedBefore: cycles.data?.lockedAfter });
    expect(cycles.observed).toMatch(/^100 cycles in [\d.]+ ms \(\d+ us a cycle\); free device memory (\d+) -> \1 -> \1 bytes; VmLck \d+ kB, VmPin \d+ kB -> VmLck \d+ kB, VmPin \d+ kB; the last copy: bytes equal$/);
    expect(r.checks.get('hazard.host_pointer_attribute')?.data).toMatchObject({ value: 1, allDevices: [1], same: true });
    expect(r.checks.get('hazard.page_tables_attribute')?.observed).toMatch(/USES_HOST_PAGE_TABLES \(100\) = 0; .*registration is what lets it copy straight from the file$/);
    expect(junitFailing(r)).toEqual([]);
    expect(r.json.gate?.pass).toBe(true);
    const validate = resultsValidator();
    expect(validate(r.json), JSON.stringify(validate.errors)).toBe(true);
  }, 60_000);

  it('HIP (rocm-fixed, HIP 7.2): the reference checks pass, the read-only attribute (HIP has none) is skipped with its reason', () => {
    const r = run({}, 'hip');
    for (const id of REFERENCE_IDS.filter((i) => i !== 'hazard.readonly_register_attribute')) expect(r.checks.get(id)?.status, id).toBe('pass');
    expect(r.checks.get('hazard.readonly_register_attribute')).toMatchObject({ status: 'skip', message: expect.stringMatching(/^HIP has no read-only registration attribute/) });
    expect(r.checks.get('hazard.host_register_attribute')?.observed).toMatch(/^hipDeviceAttributeHostRegisterSupported \(90\) = 1; register 0; bytes equal; unregister 0$/);
    expect(r.checks.get('hazard.unregister_null_refused')?.observed).toBe('unregister of NULL: 1 hipErrorInvalidValue');
  }, 60_000);

  it('attributes set otherwise, honestly: a device address that is not the host\'s where the attribute says 0; pageable memory read through the host page tables', () => {
    const r = run({ MAPPED_REG_DOUBLE_ATTRIBUTES: 'host_pointer=0,pageable_access=1,page_tables=1' });
    expect(notPassing(r)).toEqual([]);
    expect(r.checks.get('hazard.host_pointer_attribute')?.data).toMatchObject({ value: 0, same: false });
    expect(r.checks.get('hazard.page_tables_attribute')?.observed).toMatch(/\(100\) = 1; .*\(88\) = 1; register 0; bytes equal; unregister 0; the device reads pageable host memory through the host page tables: registration is not what lets it read the file, and .* it does not page-lock the range there/);
  }, 60_000);

  it('host registration unsupported, and so said: the attribute check passes (refused as it says) while the checks that need a registration fail', () => {
    const r = run({ MAPPED_REG_DOUBLE_ATTRIBUTES: 'host_register=0' });
    expect(r.checks.get('hazard.host_register_attribute')).toMatchObject({ status: 'pass', observed: 'CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED (99) = 0; register 801 CUDA_ERROR_NOT_SUPPORTED' });
    expect(r.checks.get('hazard.register_cycles')?.status).toBe('fail');
    // the negatives need no registration that works
    for (const id of ['hazard.null_pointer_refused', 'hazard.zero_size_refused', 'hazard.unregister_null_refused']) expect(r.checks.get(id)?.status, id).toBe('pass');
  }, 60_000);
});

/**
 * Each reference fault of the double, the check it breaks, and what that check then says. One run each: only that
 * check fails (JSON, JUnit, gate), save attr_readonly_lies (below).
 */
const BREAKS: readonly (readonly [fault: string, check: string, message: RegExp])[] = [
  ['attr_register_lies', 'hazard.host_register_attribute', /^CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED \(99\) = 0 says host registration is not supported, and the driver accepted it \(register 0\)$/],
  ['attr_host_pointer_lies', 'hazard.host_pointer_attribute', /^CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM \(91\) = 1 says the device reads a registration at the host's address, and the driver gave another \(0x[0-9a-f]+, not 0x[0-9a-f]+\)$/],
  ['attr_page_tables_lies', 'hazard.page_tables_attribute', /^CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES \(100\) = 1 says .* and CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS \(88\) = 0 says it cannot read pageable memory$/],
  ['leak_device_per_cycle', 'hazard.register_cycles', /^free device memory fell 6\.25 MiB over 100 cycles, in both halves \(3\.13 MiB, 3\.13 MiB; 65536 bytes a cycle\)$/],
  ['leak_locked_per_cycle', 'hazard.register_cycles', /^VmLck grew 400 kB over 100 cycles$/],
  ['accepts_unknown_flags', 'hazard.unknown_flags_refused', /^the driver accepted flags it does not know \(a false success\)$/],
  ['accepts_null', 'hazard.null_pointer_refused', /^the driver accepted a NULL pointer of \d+ bytes \(a false success\), and would not release it/],
  ['accepts_zero_size', 'hazard.zero_size_refused', /^the driver accepted a size of 0 \(a false success\), and would not release it/],
  ['accepts_unregister_null', 'hazard.unregister_null_refused', /^the driver said it released NULL \(a false success\)$/],
];

describe('one fault per reference promise: exactly its check fails, by name, in the JSON, JUnit and the gate', () => {
  for (const [fault, id, message] of BREAKS) {
    it(`${fault}: only ${id} fails`, () => {
      const r = run({ MAPPED_REG_DOUBLE_FAULTS: fault });
      expect(r.code).toBe(1);
      expect(notPassing(r)).toEqual([id]);
      expect(r.checks.get(id)).toMatchObject({ status: 'fail', message: expect.stringMatching(message) });
      expect(junitFailing(r)).toEqual([id]);
      expect(r.json.gate?.pass).toBe(false);
      expect(r.json.gate?.reasons.map((x) => x.check)).toEqual([id]);
      expect(r.json.gate?.headline).toContain(id);
    }, 60_000);
  }

  it('unregister_null_crashes: hazard.unregister_null_refused is a crash (the device\'s process died of SIGSEGV), the check after it runs in a new process', () => {
    const r = run({ MAPPED_REG_DOUBLE_FAULTS: 'unregister_null_crashes' });
    expect(r.code).toBe(1);
    expect(notPassing(r)).toEqual(['hazard.unregister_null_refused']);
    expect(r.checks.get('hazard.unregister_null_refused')).toMatchObject({ status: 'crash', message: expect.stringMatching(/SIGSEGV/) });
    expect(r.checks.get('hazard.context_reset')?.status).toBe('pass');
    expect(junitFailing(r, 'error')).toEqual(['hazard.unregister_null_refused']);
    expect(r.json.gate?.pass).toBe(false);
    expect(r.json.gate?.headline).toContain('hazard.unregister_null_refused crash');
  }, 60_000);

  it('other_process_allocates (the host, not the driver: 8 MiB taken once, in one half of the cycles): hazard.register_cycles runs the cycles again and passes on the second run, the first named; never a warn or a fail the gate could blame on the driver', () => {
    const r = run({ MAPPED_REG_DOUBLE_FAULTS: 'other_process_allocates' });
    expect(r.code).toBe(0);
    expect(notPassing(r)).toEqual([]);
    const cycles = r.checks.get('hazard.register_cycles')!;
    expect(cycles.status).toBe('pass');
    expect(cycles.observed).toMatch(/; before them, 100 cycles whose free device memory fell 8\.00 MiB then 0\.00 MiB over the two halves \(in one half only: run again\)$/);
    expect(cycles.data).toMatchObject({ cycles: 100, runAgain: { cycles: 100, freeHalves: [expect.any(Number), expect.any(Number)] } });
    expect(junitFailing(r)).toEqual([]);
    expect(junitFailing(r, 'error')).toEqual([]);
  }, 60_000);

  it('other_process_keeps_allocating (the host, not the driver: 8 MiB taken in one half of each run of the cycles): hazard.register_cycles is an error, the host\'s, in JSON, JUnit and the gate; not a pass, never the driver\'s', () => {
    const r = run({ MAPPED_REG_DOUBLE_FAULTS: 'other_process_keeps_allocating' });
    expect(r.code).toBe(1);
    expect(notPassing(r)).toEqual(['hazard.register_cycles']);
    expect(r.checks.get('hazard.register_cycles')).toMatchObject({
      status: 'error',
      message: expect.stringMatching(
        /^the host: free device memory fell (8\.00 MiB then 0\.00 MiB|0\.00 MiB then 8\.00 MiB), then in the cycles run again (8\.00 MiB then 0\.00 MiB|0\.00 MiB then 8\.00 MiB), over the two halves of each: in one half only each time, not steady as a leak is: another process allocating on this GPU at the same time; a leak per cycle could not be judged \(free device memory \d+( -> \d+){2}, then \d+( -> \d+){2} bytes\)$/,
      ),
    });
    expect(junitFailing(r)).toEqual([]);
    expect(junitFailing(r, 'error')).toEqual(['hazard.register_cycles']);
    expect(r.json.gate?.pass).toBe(false);
    expect(r.json.gate?.headline).toContain('the host, not the driver');
  }, 60_000);

  it('attr_readonly_lies: the attribute check names both sides; the tool takes its register flag from that attribute, so every check that registers the read-only mapping fails with it', () => {
    const r = run({ MAPPED_REG_DOUBLE_FAULTS: 'attr_readonly_lies' });
    expect(r.checks.get('hazard.readonly_register_attribute')).toMatchObject({
      status: 'fail',
      message: 'CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED (113) = 0 says registration with the read-only flag 0x8 is not supported, and the driver accepted it (register 0); the tool takes its register flag from this attribute',
    });
    // flags 0 on the read-only mapping: refused, which the host-register attribute (1) is held to, both sides named
    expect(r.checks.get('hazard.host_register_attribute')).toMatchObject({ status: 'fail', message: 'CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED (99) = 1 says host registration is supported, and the driver refused it (register 1 CUDA_ERROR_INVALID_VALUE)' });
    // the negatives that need no registration still pass
    for (const i of ['hazard.null_pointer_refused', 'hazard.zero_size_refused', 'hazard.unregister_null_refused']) expect(r.checks.get(i)?.status, i).toBe('pass');
    expect(junitFailing(r)).toContain('hazard.readonly_register_attribute');
    expect(r.json.gate?.pass).toBe(false);
  }, 60_000);
});

describe('in this process', () => {
  const scratchDir = diskTempDir('mapped-reg-reference-scratch-');
  afterAll(() => rmSync(scratchDir, { recursive: true, force: true }));

  it('a size of 0 accepted and not released (accepts_zero_size): the whole mapping stays in the table, held, and mapped', () => {
    const loaded = loadDouble('cuda', { faults: 'accepts_zero_size' });
    const device = loaded.discovery.devices.find((d) => d.backend === 'cuda')!;
    const ctx: CheckContext = { device, options: { device: device.id, scratchDir, sizeMiB: 4, runs: 3, minRelativeSpeed: 0.8, skip: [], quiet: { waitS: 0, maxDrop: 0.1 } }, log: () => {} };
    const held = registrations.held().length;
    const kept = keptMappings.length;
    const o = zeroSizeRefused.run(ctx);
    expect(o).toMatchObject({ status: 'fail', observed: expect.stringMatching(/^register 0x[0-9a-f]+ \(\+0\) flags 0x8: 0; unregister 713 CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED$/) });
    // one held entry, the mapping's whole range (not the empty one, which pins nothing)
    expect(registrations.held().slice(held)).toEqual([expect.objectContaining({ length: 4096, releaseFailures: 1 })]);
    expect(keptMappings.length).toBe(kept + 1);
  });

  it('VmLck and VmPin are read from /proc/self/status, in kB; a text without VmLck is a reason', () => {
    expect(parseLockedMemory('Name:\tnode\nVmLck:\t     480 kB\nVmPin:\t       8 kB\n')).toEqual({ lockedKiB: 480, pinnedKiB: 8 });
    expect(parseLockedMemory('VmLck:\t 0 kB\n')).toEqual({ lockedKiB: 0, pinnedKiB: null });
    expect(parseLockedMemory('VmPin:\t 4 kB\n')).toEqual({ reason: 'no VmLck line' });
  });
});
