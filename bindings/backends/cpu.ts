// The CPU: always one device, host memory read directly; no library.
import { cpus, release } from 'node:os';
import type { BackendModule, DiscoveredDevice } from '../backend.js';

function cpuDevice(): DiscoveredDevice {
  const name = cpus()[0]?.model.trim() || 'CPU';
  return {
    id: 'cpu',
    backend: 'cpu',
    name,
    pciBusId: null,
    driver: { name: 'none (host memory)', version: `Linux ${release()}` },
    integrated: null,
    type: 'cpu',
    device: { id: 'cpu', framework: 'Native', name, type: 'cpu' },
  };
}

export const cpu = {
  id: 'cpu',
  framework: 'Native',
  libraryEnv: null,
  group: 'discovery-only',
  deviceId: 'cpu',
  registers: false,
  discover: () => ({ devices: [cpuDevice()], report: { backend: 'cpu', library: null, devices: 1 } }),
} as const satisfies BackendModule;
