import { describe, expect, it } from 'vitest';
import type { PlainDevice, PlainDiscovery } from '../bindings/discovery.js';
import { discoveryLines } from '../reporters/terminal.js';

const cpu: PlainDevice = { id: 'cpu', backend: 'cpu', name: 'Host CPU', pciBusId: null, driver: { name: 'Native', version: '1' }, integrated: null, type: 'cpu', framework: 'Native' };

describe('the discovery lines: no GPU driver', () => {
  const found = (devices: PlainDevice[]): PlainDiscovery => ({ devices, backends: [{ backend: 'opencl', library: null, devices: 0, note: 'OpenCL: /x.so not found' }], gpuDriverFound: false });
  it('with no device selected, it does not point to a list "above" that is empty', () => {
    const lines = discoveryLines({ ms: 5, inProcesses: [], found: found([]), selected: [], interrupted: false });
    expect(lines.at(-1)).toBe('  no GPU driver was found (neither CUDA nor HIP): no device to check');
  });
  it('with devices selected, those above are the ones checked', () => {
    const d = cpu;
    const lines = discoveryLines({ ms: 5, inProcesses: [], found: found([d]), selected: [d], interrupted: false });
    expect(lines.at(-1)).toBe('  no GPU driver was found (neither CUDA nor HIP): only the devices above are checked');
  });
});

describe('the discovery lines: each device', () => {
  const found: PlainDiscovery = { devices: [], backends: [], gpuDriverFound: true };
  const gpu: PlainDevice = { ...cpu, id: 'cuda:0', backend: 'cuda', name: 'GPU', type: 'gpu', integrated: false, framework: 'CUDA' };
  const line = (d: PlainDevice): string => discoveryLines({ ms: 5, inProcesses: [], found, selected: [d], interrupted: false }).find((l) => l.startsWith(`  ${d.id}: `))!;
  it('a CPU device is said to be one, not an integrated GPU of unknown kind', () => {
    expect(line(cpu)).toBe('  cpu: Host CPU [Native 1] a CPU');
    expect(line({ ...cpu, id: 'opencl:0', backend: 'opencl' })).toMatch(/\] a CPU$/);
  });
  it('a GPU says whether it is integrated, unknown where the driver would not say, and why', () => {
    expect(line(gpu)).toMatch(/\] integrated=false$/);
    expect(line({ ...gpu, integrated: null })).toMatch(/\] integrated=unknown$/);
    expect(line({ ...gpu, integrated: null, integratedError: 'CUDA_ERROR_UNKNOWN' })).toMatch(/\] integrated=unknown \(CUDA_ERROR_UNKNOWN\)$/);
    // a CPU whose query failed says so too
    expect(line({ ...cpu, integratedError: 'boom' })).toMatch(/\] integrated=unknown \(boom\)$/);
  });
});
