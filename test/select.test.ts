// Which devices a run checks and which process checks which (cli/select-devices.ts): decided from discoveries as data.
import { describe, expect, it } from 'vitest';
import type { Backend, PlainDevice, PlainDiscovery } from '../bindings/discovery.js';
import { deviceFromPlain } from '../bindings/discovery.js';
import { DISCOVERY_GROUPS, deviceOptions, discoveryGroups, earlyOthers, hookFor, keeps, mergeDiscoveries, pickDevice, selectDevices, selectionProblem, validSoFar } from '../cli/select-devices.js';
import type { Selection } from '../suites/protocol.js';
import { staticVerdict } from '../src/index.js';

const dev = (id: string, extra: Partial<PlainDevice> = {}): PlainDevice => {
  const backend = id.split(':')[0] as Backend;
  const framework = { cuda: 'CUDA', hip: 'HIP', opencl: 'OpenCL', vulkan: 'Vulkan', cpu: 'Native' }[backend];
  return { id, backend, name: id, pciBusId: null, driver: { name: framework, version: '1' }, integrated: backend === 'cpu' ? null : false, type: backend === 'cpu' ? 'cpu' : 'gpu', framework, ...extra };
};
const report = (backend: Backend, devices: number, library: string | null = `lib${backend}.so`) => ({ backend, library, devices });
const gpu: PlainDiscovery = { devices: [dev('cuda:0'), dev('cuda:1')], backends: [report('cuda', 2), report('hip', 0, null)], gpuDriverFound: true };
const rest: PlainDiscovery = { devices: [dev('opencl:0', { type: 'cpu' }), dev('vulkan:0'), dev('cpu')], backends: [report('opencl', 1), report('vulkan', 1), report('cpu', 1, null)], gpuDriverFound: false };
const all: Selection = { backends: ['cuda', 'hip', 'opencl', 'vulkan', 'cpu'], devices: [] };

describe('discovery groups', () => {
  it('each GPU driver in a group of its own, the rest in another, covering every backend once, in order', () => {
    expect(DISCOVERY_GROUPS.flat()).toEqual(['cuda', 'hip', 'opencl', 'vulkan', 'cpu']);
    expect(discoveryGroups(['cuda', 'hip', 'opencl', 'vulkan', 'cpu'])).toEqual([['cuda'], ['hip'], ['opencl', 'vulkan', 'cpu']]);
    expect(discoveryGroups(['cpu'])).toEqual([['cpu']]);
    expect(discoveryGroups(['hip', 'vulkan'])).toEqual([['hip'], ['vulkan']]);
  });

  it('mergeDiscoveries puts the groups back in backend order, whatever order they arrive in', () => {
    const merged = mergeDiscoveries([rest, gpu]);
    expect(merged.devices.map((d) => d.id)).toEqual(['cuda:0', 'cuda:1', 'opencl:0', 'vulkan:0', 'cpu']);
    expect(merged.backends.map((b) => b.backend)).toEqual(['cuda', 'hip', 'opencl', 'vulkan', 'cpu']);
    expect(merged.gpuDriverFound).toBe(true);
    expect(mergeDiscoveries([rest]).gpuDriverFound).toBe(false);
  });
});

describe('the device a discovering runner keeps', () => {
  it('the first CUDA/HIP device selected, else the first selected, else none', () => {
    expect(pickDevice(gpu, all)?.id).toBe('cuda:0');
    expect(pickDevice(gpu, { ...all, devices: ['cuda:1', 'cpu'] })?.id).toBe('cuda:1');
    expect(pickDevice(rest, all)?.id).toBe('opencl:0');
    expect(pickDevice(rest, { ...all, devices: ['cpu', 'cuda:0'] })?.id).toBe('cpu');
    expect(pickDevice(gpu, { ...all, devices: ['cpu'] })).toBeUndefined();
    expect(pickDevice({ devices: [], backends: [], gpuDriverFound: false }, all)).toBeUndefined();
  });
});

describe('earlyOthers: the GPUs a group\'s discovery starts in processes of their own', () => {
  it('every chosen GPU but the one its process offered; never a device that does not register', () => {
    expect(earlyOthers(selectDevices(gpu, all), gpu.devices[0]).map((d) => d.id)).toEqual(['cuda:1']);
    expect(earlyOthers(selectDevices(gpu, { ...all, devices: ['cuda:1'] }), gpu.devices[1])).toEqual([]);
    expect(earlyOthers(selectDevices(gpu, all), undefined).map((d) => d.id)).toEqual(['cuda:0', 'cuda:1']);
    expect(earlyOthers(selectDevices(rest, all), rest.devices[0])).toEqual([]);
  });
});

describe('validSoFar: may a GPU start before every group has reported?', () => {
  const cudaG = { backends: ['cuda'] as Backend[], discovery: gpu };
  const hipG = { backends: ['hip'] as Backend[], discovery: { devices: [], backends: [report('hip', 0, null)], gpuDriverFound: false } };
  const restG = { backends: ['opencl', 'vulkan', 'cpu'] as Backend[], discovery: rest };
  const waiting = <T extends { backends: Backend[] }>(g: T) => ({ backends: g.backends });
  it('a default run: at once, whatever is still discovering', () => {
    expect(validSoFar([cudaG, waiting(hipG), waiting(restG)], all, {})).toBe(true);
  });
  it('with --device: once the groups of those ids have reported, and only if they were found', () => {
    const s = { ...all, devices: ['cuda:1', 'opencl:0'] };
    expect(validSoFar([cudaG, hipG, waiting(restG)], s, {})).toBe(false);
    expect(validSoFar([cudaG, waiting(hipG), restG], s, {})).toBe(true);
    expect(validSoFar([cudaG, hipG, restG], { ...all, devices: ['cuda:1', 'opencl:4'] }, {})).toBe(false);
    expect(validSoFar([cudaG, waiting(hipG), waiting(restG)], { ...all, devices: ['cuda:0', 'cpu'] }, {})).toBe(false);
    expect(validSoFar([cudaG, waiting(hipG), restG], { ...all, devices: ['cuda:0', 'cpu'] }, {})).toBe(true);
  });
  it('an id of no group waits for the end (it is refused there)', () => {
    expect(validSoFar([cudaG, hipG, restG], { ...all, devices: ['cuda:0', 'metal:0'] }, {})).toBe(false);
  });
  it('a driver library named in the environment: once its group has reported that it loaded', () => {
    expect(validSoFar([cudaG, waiting(hipG), waiting(restG)], all, { MAPPED_REG_HIP_LIBRARY: '/h.so' })).toBe(false);
    expect(validSoFar([cudaG, hipG, waiting(restG)], all, { MAPPED_REG_HIP_LIBRARY: '/h.so' })).toBe(false); // hip's library is null: refused
    expect(validSoFar([cudaG, waiting(hipG), waiting(restG)], all, { MAPPED_REG_CUDA_LIBRARY: '/c.so' })).toBe(true);
  });
});

describe('which offers the command takes', () => {
  it('every GPU; another device only when no GPU is checked', () => {
    const [c, h, o] = [dev('cuda:0'), dev('hip:0'), dev('opencl:0')];
    expect(keeps([c, h, o])).toEqual([true, true, false]);
    expect(keeps([c, undefined, o])).toEqual([true, false, false]);
    expect(keeps([undefined, undefined, o])).toEqual([false, false, true]);
    expect(keeps([undefined, undefined, undefined])).toEqual([false, false, false]);
    expect(keeps([])).toEqual([]);
  });
});

describe('selection problems (the command decides, from every group)', () => {
  const found = mergeDiscoveries([gpu, rest]);
  it('none for every device, or for devices that were all found', () => {
    expect(selectionProblem(found, all, {})).toBeUndefined();
    expect(selectionProblem(found, { ...all, devices: ['cuda:1', 'cpu'] }, {})).toBeUndefined();
    expect(selectDevices(found, { ...all, devices: ['cpu', 'cuda:1'] }).map((d) => d.id)).toEqual(['cuda:1', 'cpu']);
  });
  it('an unknown device, listing what was found', () => {
    expect(selectionProblem(found, { ...all, devices: ['cuda:0', 'opencl:9', 'metal:0'] }, {})).toBe(
      'unknown device opencl:9, metal:0 (found: cuda:0, cuda:1, opencl:0, vulkan:0, cpu)',
    );
    expect(selectionProblem({ devices: [], backends: [], gpuDriverFound: false }, { ...all, devices: ['cpu'] }, {})).toBe('unknown device cpu (found: none)');
  });
  it('a driver library named in the environment that did not load', () => {
    const broken: PlainDiscovery = { ...found, backends: [{ backend: 'cuda', library: null, devices: 0, note: 'CUDA: /x.so not found' }] };
    expect(selectionProblem(broken, all, { MAPPED_REG_CUDA_LIBRARY: '/x.so' })).toBe('MAPPED_REG_CUDA_LIBRARY=/x.so: CUDA: /x.so not found');
    expect(selectionProblem(broken, all, {})).toBeUndefined(); // not named: a missing library is a note
    expect(selectionProblem(found, all, { MAPPED_REG_HIP_LIBRARY: '/y.so' })).toBe('MAPPED_REG_HIP_LIBRARY=/y.so: not loaded');
  });
  it("discovery's libraries named in the environment that did not load: bad input too (not only a GPU driver's)", () => {
    const noOpenCL: PlainDiscovery = { ...found, backends: [{ backend: 'opencl', library: null, devices: 0, note: 'OpenCL: /o.so not found' }] };
    expect(selectionProblem(noOpenCL, all, { MAPPED_REG_OPENCL_LIBRARY: '/o.so' })).toBe('MAPPED_REG_OPENCL_LIBRARY=/o.so: OpenCL: /o.so not found');
    const noVulkan: PlainDiscovery = { ...found, backends: [{ backend: 'vulkan', library: null, devices: 0 }] };
    expect(selectionProblem(noVulkan, all, { MAPPED_REG_VULKAN_LIBRARY: '/v.so' })).toBe('MAPPED_REG_VULKAN_LIBRARY=/v.so: not loaded');
    // a backend the run did not ask for (no report of it) is not judged by its variable
    expect(selectionProblem({ ...found, backends: [] }, all, { MAPPED_REG_OPENCL_LIBRARY: '/o.so' })).toBeUndefined();
  });
});

describe('a device rebuilt from its data', () => {
  it('keeps its static verdict: the integrated answer replayed, a failed query as an error', () => {
    expect(staticVerdict(deviceFromPlain(dev('cuda:0')).device).kind).toBe('Self_test_required');
    expect(staticVerdict(deviceFromPlain(dev('cuda:0', { integrated: true })).device)).toEqual({ kind: 'Decided', verdict: { kind: 'Refused', refusal: { kind: 'Integrated_gpu' } } });
    expect(staticVerdict(deviceFromPlain(dev('cuda:0', { integrated: null, integratedError: 'boom' })).device)).toEqual({ kind: 'Decided', verdict: { kind: 'Refused', refusal: { kind: 'Device_kind_unknown' } } });
    expect(staticVerdict(deviceFromPlain(dev('hip:0', { integrated: null })).device)).toEqual({ kind: 'Decided', verdict: { kind: 'Refused', refusal: { kind: 'Integrated_gpu' } } });
    expect(staticVerdict(deviceFromPlain(dev('vulkan:0')).device).kind).toBe('Decided');
    expect(deviceFromPlain(dev('cuda:0')).native).toBeUndefined();
    expect(deviceFromPlain(dev('cuda:0')).device.withOps).toBeUndefined();
  });
});

describe('hooks and the options of a device', () => {
  it('a device/check hook applies to that device only, a bare one to every device', () => {
    expect(hookFor('cuda:0/hazard.x', 'cuda:0')).toBe('hazard.x');
    expect(hookFor('cuda:0/hazard.x', 'cuda:1')).toBeUndefined();
    expect(hookFor('hazard.x', 'cpu')).toBe('hazard.x');
    expect(hookFor(undefined, 'cpu')).toBeUndefined();
  });
  it('deviceOptions carries the run options, the device and its hooks, and never `discover`', () => {
    const quiet = { waitS: 7, maxDrop: 0.25 };
    const o = deviceOptions(dev('cuda:1'), { scratchDir: '/s', sizeMiB: 8, runs: 3, minRelativeSpeed: 0.9, quiet }, { ...all, forceCrash: 'cuda:1/probe.verdict', forceHang: '@runner' });
    expect(o).toEqual({ device: 'cuda:1', discovered: dev('cuda:1'), scratchDir: '/s', sizeMiB: 8, runs: 3, minRelativeSpeed: 0.9, skip: [], quiet, forceCrash: 'probe.verdict', forceHang: '@runner' });
  });
});
