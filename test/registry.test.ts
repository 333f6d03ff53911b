// The backend registry (bindings/registry.ts): a backend is its module. Shown with two backends added here through
// the registry's test extension point alone: `lister`, whose devices are only listed (it never registers), and
// `fake`, a driver that registers (test/support/fake-backend.ts; the end-to-end run of the model and the hazard
// checks on it is test/fake-backend.test.ts): discovery lists them, and a run's options, discovery groups and
// selection see them, with no other file edited. Their results do not validate: the schema names the product's
// backends, BACKENDS, and this file holds the two equal.
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { BackendModule, DiscoveredDevice } from '../bindings/backend.js';
import { apiType } from '../bindings/backends/api.js';
import { cuda } from '../bindings/backends/cuda.js';
import { hip } from '../bindings/backends/hip.js';
import { deviceFromPlain, discover, isGpuDriver, plainDiscovery } from '../bindings/discovery.js';
import { loadCuda } from '../bindings/cuda.js';
import { loadHip } from '../bindings/hip.js';
import { backendGroups, backendIds, backendModule, backendModules, backendOfDevice, backendRank, isBackend, registerTestBackend, registersHostMemory } from '../bindings/registry.js';
import { runCommandOptions, UsageError } from '../cli/options.js';
import { discoveryGroups, keeps, mergeDiscoveries, pickDevice, selectDevices, selectionProblem, validSoFar } from '../cli/select-devices.js';
import type { Selection } from '../suites/protocol.js';
import { schemaPath, schemaProblems } from '../results/read.js';
import { type Backend, BACKENDS } from '../results/types.js';
import { staticVerdict } from '../src/device.js';
import { loadDouble } from './support/drivers.js';
import { FAKE, fakeBackend } from './support/fake-backend.js';

// Not a member of Backend: that list is the product's (the schema's); a test cannot grow a union.
const LISTER = 'lister' as Backend;

const listerDevice = (): DiscoveredDevice => ({
  id: 'lister:0',
  backend: LISTER,
  name: 'Lister accelerator',
  pciBusId: '0000:42:00.0',
  driver: { name: 'Lister', version: '1.0' },
  integrated: false,
  type: 'accelerator',
  device: { id: 'lister:0', framework: 'Lister', name: 'Lister accelerator', type: 'accelerator' },
});

const lister: BackendModule = {
  id: LISTER,
  framework: 'Lister',
  libraryEnv: 'MAPPED_REG_LISTER_LIBRARY',
  group: 'lister',
  deviceId: 'lister:\\d+',
  registers: false,
  discover: () => ({ devices: [listerDevice()], report: { backend: LISTER, library: 'liblister.so', devices: 1 } }),
};

const undo = [registerTestBackend(lister), registerTestBackend(fakeBackend)];
// with no library named, the fake finds none: a note
const savedLibrary = process.env.MAPPED_REG_FAKE_LIBRARY;
delete process.env.MAPPED_REG_FAKE_LIBRARY;
afterAll(() => {
  for (const u of undo) u();
  if (savedLibrary !== undefined) process.env.MAPPED_REG_FAKE_LIBRARY = savedLibrary;
});

const noHooks: Selection = { backends: [LISTER], devices: [] };

describe('the built-in backends', () => {
  it('are the Backend union, in its order, each with one module', () => {
    expect(BACKENDS.every((b) => backendModule(b)?.id === b)).toBe(true);
    expect(backendIds().slice(0, BACKENDS.length)).toEqual([...BACKENDS]);
  });

  it('say which of them register, and what their drivers call "not registered" and "invalid value"', () => {
    expect(backendModules().filter((m) => m.registers).map((m) => m.id)).toEqual(['cuda', 'hip', 'fake']);
    const driverOf = (id: string) => {
      const m = backendModule(id);
      return m?.registers ? m.driver : undefined;
    };
    expect(driverOf('cuda')).toEqual({
      api: 'CUDA',
      notRegistered: { code: 713, name: 'CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED' },
      invalidValue: { code: 1, name: 'CUDA_ERROR_INVALID_VALUE' },
      policy: { failedQuery: 'unknown' },
    });
    expect(driverOf('hip')).toEqual({
      api: 'HIP',
      notRegistered: { code: 713, name: 'hipErrorHostMemoryNotRegistered' },
      invalidValue: { code: 1, name: 'hipErrorInvalidValue' },
      policy: { failedQuery: 'integrated' },
    });
    expect(backendModules().map((m) => m.libraryEnv)).toEqual([
      'MAPPED_REG_CUDA_LIBRARY',
      'MAPPED_REG_HIP_LIBRARY',
      'MAPPED_REG_OPENCL_LIBRARY',
      'MAPPED_REG_VULKAN_LIBRARY',
      null,
      'MAPPED_REG_LISTER_LIBRARY',
      'MAPPED_REG_FAKE_LIBRARY',
    ]);
  });

  it('OpenCL and Vulkan: every device type of the APIs is one of the model', () => {
    const types = ['cpu', 'gpu', 'integrated-gpu', 'virtual-gpu', 'accelerator', 'other'] as const;
    expect(types.map(apiType)).toEqual(['cpu', 'gpu', 'gpu', 'gpu', 'accelerator', 'other']);
  });

  it('are discovered in three groups: each GPU driver alone, the rest together', () => {
    expect(backendGroups([...BACKENDS])).toEqual([['cuda'], ['hip'], ['opencl', 'vulkan', 'cpu']]);
  });

  it('own their device ids, each by its form', () => {
    expect(['cuda:0', 'hip:12', 'opencl:3', 'vulkan:1', 'cpu', 'lister:0', 'fake:2'].map((id) => backendOfDevice(id)?.id)).toEqual(['cuda', 'hip', 'opencl', 'vulkan', 'cpu', 'lister', 'fake']);
    for (const id of ['cuda', 'cuda:', 'cuda:x', 'cpu:0', 'hipx:0', 'nope:0']) expect(backendOfDevice(id), id).toBeUndefined();
  });
});

describe('the schema names the backends BACKENDS lists, by the forms of their modules', () => {
  const schema = JSON.parse(readFileSync(schemaPath(), 'utf8')) as {
    definitions: { backend: { enum: string[] }; device: { properties: { id: { pattern: string } } } };
  };

  it('its backend enum is BACKENDS, in order', () => {
    expect(schema.definitions.backend.enum).toEqual([...BACKENDS]);
  });

  it("its device id pattern is the built-in modules' forms", () => {
    expect(schema.definitions.device.properties.id.pattern).toBe(`^(${BACKENDS.map((b) => backendModule(b)!.deviceId).join('|')})$`);
  });
});

describe('a backend that only lists, added through the registry alone', () => {
  it('is registered after the built-in ones, once', () => {
    expect(backendIds()).toEqual([...BACKENDS, 'lister', 'fake']);
    expect(isBackend('lister')).toBe(true);
    expect(backendRank('lister')).toBe(BACKENDS.length);
    expect(backendRank('nope')).toBe(BACKENDS.length + 2);
    expect(registersHostMemory('lister')).toBe(false);
    expect(() => registerTestBackend(lister)).toThrow(/already registered/);
  });

  it('is listed by discovery, in its place, and alone when asked alone', () => {
    const all = discover();
    expect(all.devices.map((d) => d.id)).toContain('lister:0');
    expect(all.backends.map((b) => b.backend)).toEqual([...BACKENDS, 'lister', 'fake']);
    const only = discover([LISTER]);
    expect(only.devices.map((d) => d.id)).toEqual(['lister:0']);
    expect(only.backends).toEqual([{ backend: 'lister', library: 'liblister.so', devices: 1 }]);
    expect(only.gpuDriverFound).toBe(false);
  });

  it('is a backend --backend accepts, and one of every run by default', async () => {
    const args = { device: [], check: [], skip: [] };
    expect((await runCommandOptions({ ...args, backend: ['lister'] }, true, {})).backends).toEqual(['lister']);
    expect((await runCommandOptions({ ...args, backend: [] }, true, {})).backends).toEqual([...BACKENDS, 'lister', 'fake']);
    await expect(runCommandOptions({ ...args, backend: ['nope'] }, true, {})).rejects.toThrow(UsageError);
    await expect(runCommandOptions({ ...args, backend: ['nope'] }, true, {})).rejects.toThrow(/known: cuda, hip, opencl, vulkan, cpu, lister, fake/);
  });

  it('gets the discovery group its module names', () => {
    expect(discoveryGroups(['cuda', LISTER, 'cpu'])).toEqual([['cuda'], ['cpu'], ['lister']]);
    expect(discoveryGroups([LISTER])).toEqual([['lister']]);
  });

  it("is selected, offered and merged in the registry's order", () => {
    const listerFound = plainDiscovery(discover([LISTER]));
    const cpuFound = plainDiscovery(discover(['cpu']));
    const merged = mergeDiscoveries([listerFound, cpuFound]);
    expect(merged.devices.map((d) => d.id)).toEqual(['cpu', 'lister:0']);
    expect(merged.backends.map((b) => b.backend)).toEqual(['cpu', 'lister']);

    const s: Selection = { ...noHooks, backends: ['cpu', LISTER], devices: ['lister:0'] };
    expect(selectionProblem(merged, s, {})).toBeUndefined();
    expect(selectDevices(merged, s).map((d) => d.id)).toEqual(['lister:0']);
    expect(pickDevice(listerFound, noHooks)?.id).toBe('lister:0');
    // it never registers: offered with no GPU, kept; beside a GPU, checked with the others later
    expect(isGpuDriver({ backend: LISTER })).toBe(false);
    expect(keeps([listerFound.devices[0]])).toEqual([true]);
    expect(validSoFar([{ backends: [LISTER], discovery: listerFound }], s, {})).toBe(true);
    expect(selectionProblem(merged, { ...s, devices: ['lister:1'] }, {})).toMatch(/unknown device lister:1/);
  });

  it('is decided by the model from its framework, as data from another process too', () => {
    const [plain] = plainDiscovery(discover([LISTER])).devices;
    const rebuilt = deviceFromPlain(plain!);
    expect(rebuilt.device.sharedMemoryQuery).toBeUndefined();
    expect(staticVerdict(rebuilt.device)).toEqual(staticVerdict(listerDevice().device));
    expect(JSON.stringify(staticVerdict(rebuilt.device))).toMatch(/Not_measured/);
  });

  it('does not validate: the schema names the product backends only', () => {
    const fixture = JSON.parse(readFileSync(new URL('./fixtures/cuda.json', import.meta.url), 'utf8')) as { devices: Record<string, unknown>[] };
    expect(schemaProblems(fixture)).toBeUndefined();
    const run = structuredClone(fixture);
    run.devices = [{ ...run.devices[0]!, id: 'lister:0', backend: 'lister' }];
    expect(schemaProblems(run)).toMatch(/backend|pattern|enum/);
  });
});

describe('a backend that registers, added through the registry alone', () => {
  it('registers host memory: a discovery group of its own, its devices probed in their own process', () => {
    expect(registersHostMemory(FAKE)).toBe(true);
    expect(isGpuDriver({ backend: FAKE })).toBe(true);
    expect(discoveryGroups(['cuda', FAKE, 'cpu', LISTER])).toEqual([['cuda'], ['cpu'], ['lister'], ['fake']]);
  });

  it('with no library there: a note, and no GPU driver found', () => {
    const found = discover([FAKE]);
    expect(found.devices).toEqual([]);
    expect(found.backends[0]?.note).toMatch(/^Fake: libfake_double\.so not found/);
    expect(found.gpuDriverFound).toBe(false);
  });
});

describe('the kits of the drivers that register, against their doubles', () => {
  const drivers = { cuda: { module: cuda, errorName: (library: string, code: number) => loadCuda(library).errorName(code) }, hip: { module: hip, errorName: (library: string, code: number) => loadHip(library).errorName(code) } };
  /** The double's device of `backend`, its kit checked for what each driver's says alike: its library variable, its not-registered and invalid-value codes by the driver's own names. */
  function checkedNative(backend: 'cuda' | 'hip'): NonNullable<DiscoveredDevice['native']> {
    const native = loadDouble(backend).discovery.devices.find((d) => d.backend === backend)!.native!;
    const { module, errorName } = drivers[backend];
    expect(native.kit.libraryEnv).toBe(backendModule(backend)?.libraryEnv);
    expect(native.kit.notRegistered.name).toBe(errorName(native.library, native.kit.notRegistered.code));
    expect(native.kit.notRegistered).toEqual(module.driver.notRegistered);
    expect(errorName(native.library, module.driver.invalidValue.code)).toBe(module.driver.invalidValue.name);
    return native;
  }

  it('CUDA: its library variable, its not-registered code by the driver\'s name, its reset, the retain given back, READ_ONLY, one attribute call', async () => {
    const native = checkedNative('cuda');
    const { kit } = native;
    expect(kit.readOnlyFlag).toBe(0x08);
    const { call, query } = kit.attributeCall();
    expect(call).toBe('cuDeviceGetAttribute');
    expect(query()).toBe(0); // the double's H200: discrete
    expect(kit.contextReset.call).toBe('cuDevicePrimaryCtxReset_v2');
    native.keepContext();
    expect(() => kit.contextReset.reset()).not.toThrow();
    expect(() => kit.contextReset.releaseKept?.()).not.toThrow();
    expect(native.withOps(4096, (ops) => ops.bytes)).toBe(4096);
  });

  it('HIP: its library variable, its not-registered code by the runtime\'s name, hipDeviceReset, nothing kept, no read-only flag', async () => {
    const native = checkedNative('hip');
    const { kit } = native;
    expect(kit.readOnlyFlag).toBeUndefined();
    expect(kit.contextReset.releaseKept).toBeUndefined();
    const { call, query } = kit.attributeCall();
    expect(call).toBe('hipDeviceGetAttribute');
    expect(query()).toBe(0);
    expect(kit.contextReset.call).toBe('hipDeviceReset');
    expect(() => kit.contextReset.reset()).not.toThrow();
    expect(native.withOps(4096, (ops) => ops.bytes)).toBe(4096);
  });
});
