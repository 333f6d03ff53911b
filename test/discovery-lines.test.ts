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
