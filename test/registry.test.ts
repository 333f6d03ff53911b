// The backend registry (bindings/registry.ts): a backend is its module and one registration. Shown with a `fake`
// backend added here through the registry alone: discovery lists it, and a run's options, discovery groups and
// selection see it, with no other file edited. For its results to validate, the schema must name it too (its
// backend enum and the device id pattern): the one other place, shown last.
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { afterAll, describe, expect, it } from 'vitest';
import type { BackendModule, DiscoveredDevice } from '../bindings/backend.js';
import { apiType } from '../bindings/backends/api.js';
import { deviceFromPlain, discover, isGpuDriver, plainDiscovery } from '../bindings/discovery.js';
import { backendGroups, backendIds, backendModule, backendModules, backendRank, isBackend, registerBackend, registersHostMemory } from '../bindings/registry.js';
import { runOptions, UsageError } from '../cli/options.js';
import { discoveryGroups, keeps, mergeDiscoveries, pickDevice, selectDevices, selectionProblem, validSoFar } from '../cli/select-devices.js';
import type { Selection } from '../suites/protocol.js';
import { schemaPath, schemaProblems } from '../results/read.js';
import { type Backend, BACKENDS } from '../results/types.js';
import { staticVerdict } from '../src/device.js';

// A real backend adds 'fake' to Backend (results/types.ts) and to the schema; a test cannot grow a union.
const FAKE = 'fake' as Backend;

const fakeDevice = (): DiscoveredDevice => ({
  id: 'fake:0',
  backend: FAKE,
  name: 'Fake accelerator',
  pciBusId: '0000:42:00.0',
  driver: { name: 'Fake', version: '1.0' },
  integrated: false,
  type: 'accelerator',
  device: { id: 'fake:0', framework: 'Fake', name: 'Fake accelerator', type: 'accelerator' },
});

const fake: BackendModule = {
  id: FAKE,
  framework: 'Fake',
  libraryEnv: 'MAPPED_REG_FAKE_LIBRARY',
  group: 'fake',
  registers: false,
  discover: () => ({ devices: [fakeDevice()], report: { backend: FAKE, library: 'libfake.so', devices: 1 } }),
};

const unregister = registerBackend(fake);
afterAll(unregister);

const noHooks: Selection = { backends: [FAKE], devices: [] };

describe('the built-in backends', () => {
  it('are the Backend union, in its order, each with one module', () => {
    expect(BACKENDS.every((b) => backendModule(b)?.id === b)).toBe(true);
    expect(backendIds().slice(0, BACKENDS.length)).toEqual([...BACKENDS]);
  });

  it('say which of them register, and how their errors name "not registered"', () => {
    expect(backendModules().filter((m) => m.registers).map((m) => m.id)).toEqual(['cuda', 'hip']);
    expect(backendModule('cuda')?.errors).toEqual({ api: 'CUDA', notRegisteredName: 'CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED' });
    expect(backendModule('hip')?.errors).toEqual({ api: 'HIP', notRegisteredName: 'hipErrorHostMemoryNotRegistered' });
    expect(backendModules().map((m) => m.libraryEnv)).toEqual([
      'MAPPED_REG_CUDA_LIBRARY',
      'MAPPED_REG_HIP_LIBRARY',
      'MAPPED_REG_OPENCL_LIBRARY',
      'MAPPED_REG_VULKAN_LIBRARY',
      null,
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
});

describe('a fake backend added through the registry alone', () => {
  it('is registered after the built-in ones, once', () => {
    expect(backendIds()).toEqual([...BACKENDS, 'fake']);
    expect(isBackend('fake')).toBe(true);
    expect(backendRank('fake')).toBe(BACKENDS.length);
    expect(backendRank('nope')).toBe(BACKENDS.length + 1);
    expect(registersHostMemory('fake')).toBe(false);
    expect(() => registerBackend(fake)).toThrow(/already registered/);
  });

  it('is listed by discovery, last, and alone when asked alone', () => {
    const all = discover();
    expect(all.devices.at(-1)?.id).toBe('fake:0');
    expect(all.backends.map((b) => b.backend)).toEqual([...BACKENDS, 'fake']);
    const only = discover([FAKE]);
    expect(only.devices.map((d) => d.id)).toEqual(['fake:0']);
    expect(only.backends).toEqual([{ backend: 'fake', library: 'libfake.so', devices: 1 }]);
    expect(only.gpuDriverFound).toBe(false);
  });

  it('is a backend --backend accepts, and one of every run by default', () => {
    const args = { size: 1, device: [], runs: 1, minRelativeSpeed: 0.8, timeout: 0 };
    expect(runOptions({ ...args, backend: ['fake'] }, true, {}).backends).toEqual(['fake']);
    expect(runOptions({ ...args, backend: [] }, true, {}).backends).toEqual([...BACKENDS, 'fake']);
    expect(() => runOptions({ ...args, backend: ['nope'] }, true, {})).toThrow(UsageError);
    expect(() => runOptions({ ...args, backend: ['nope'] }, true, {})).toThrow(/known: cuda, hip, opencl, vulkan, cpu, fake/);
  });

  it('gets the discovery group its module names', () => {
    expect(discoveryGroups(['cuda', FAKE, 'cpu'])).toEqual([['cuda'], ['cpu'], ['fake']]);
    expect(discoveryGroups([FAKE])).toEqual([['fake']]);
  });

  it("is selected, offered and merged in the registry's order", () => {
    const fakeFound = plainDiscovery(discover([FAKE]));
    const cpuFound = plainDiscovery(discover(['cpu']));
    const merged = mergeDiscoveries([fakeFound, cpuFound]);
    expect(merged.devices.map((d) => d.id)).toEqual(['cpu', 'fake:0']);
    expect(merged.backends.map((b) => b.backend)).toEqual(['cpu', 'fake']);

    const s: Selection = { ...noHooks, backends: ['cpu', FAKE], devices: ['fake:0'] };
    expect(selectionProblem(merged, s, {})).toBeUndefined();
    expect(selectDevices(merged, s).map((d) => d.id)).toEqual(['fake:0']);
    expect(pickDevice(fakeFound, noHooks)?.id).toBe('fake:0');
    // it never registers: offered with no GPU, kept; beside a GPU, checked with the others later
    expect(isGpuDriver({ backend: FAKE })).toBe(false);
    expect(keeps([fakeFound.devices[0]])).toEqual([true]);
    expect(validSoFar([{ backends: [FAKE], discovery: fakeFound }], s, {})).toBe(true);
    expect(selectionProblem(merged, { ...s, devices: ['fake:1'] }, {})).toMatch(/unknown device fake:1/);
  });

  it("is decided by the model from its framework, as data from another process too", () => {
    const [plain] = plainDiscovery(discover([FAKE])).devices;
    const rebuilt = deviceFromPlain(plain!);
    expect(rebuilt.device.sharedMemoryQuery).toBeUndefined();
    expect(staticVerdict(rebuilt.device)).toEqual(staticVerdict(fakeDevice().device));
    expect(JSON.stringify(staticVerdict(rebuilt.device))).toMatch(/Not_measured/);
  });
});

describe("the fake backend's results and the schema", () => {
  const fixture = JSON.parse(readFileSync(new URL('./fixtures/cuda.json', import.meta.url), 'utf8')) as { devices: Record<string, unknown>[]; backends?: Record<string, unknown>[] };
  const withFake = (): unknown => {
    const run = structuredClone(fixture);
    run.devices = [{ ...run.devices[0]!, id: 'fake:0', backend: 'fake' }];
    return run;
  };

  it('the fixture validates as it is', () => {
    expect(schemaProblems(fixture)).toBeUndefined();
  });

  it('does not validate until the schema names the backend: its enum and the device id pattern, and nothing else', () => {
    expect(schemaProblems(withFake())).toMatch(/backend|pattern|enum/);
    const schema = JSON.parse(readFileSync(schemaPath(), 'utf8')) as {
      definitions: { backend: { enum: string[] }; device: { properties: { id: { pattern: string } } } };
    };
    schema.definitions.backend.enum.push('fake');
    schema.definitions.device.properties.id.pattern = schema.definitions.device.properties.id.pattern.replace('(cuda|hip|opencl|vulkan)', '(cuda|hip|opencl|vulkan|fake)');
    const validate = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(schema);
    expect(validate(withFake()), JSON.stringify(validate.errors)).toBe(true);
  });
});

describe('the kits of the drivers that register, against their doubles', () => {
  it('CUDA: its library variable, its 713 by the driver\'s name, its reset, the retain given back, READ_ONLY, one attribute call', async () => {
    const { loadDouble } = await import('./support/drivers.js');
    const native = loadDouble('cuda').discovery.devices.find((d) => d.backend === 'cuda')!.native!;
    const { kit } = native;
    expect(kit.libraryEnv).toBe(backendModule('cuda')?.libraryEnv);
    expect(kit.notRegisteredName).toBe(native.driver.errorName(713));
    expect(kit.notRegisteredName).toBe(backendModule('cuda')?.errors?.notRegisteredName);
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

  it('HIP: its library variable, its 713 by the runtime\'s name, hipDeviceReset, nothing kept, no read-only flag', async () => {
    const { loadDouble } = await import('./support/drivers.js');
    const native = loadDouble('hip').discovery.devices.find((d) => d.backend === 'hip')!.native!;
    const { kit } = native;
    expect(kit.libraryEnv).toBe(backendModule('hip')?.libraryEnv);
    expect(kit.notRegisteredName).toBe(native.driver.errorName(713));
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
