// What the OpenCL and Vulkan modules share: their devices as discovery lists them. Neither registers host memory.
import type { DeviceType } from '../../src/device.js';
import type { Backend } from '../../results/types.js';
import type { ApiDevice, ApiDiscovery } from '../api-library.js';
import type { BackendDiscovery, DiscoveredDevice } from '../backend.js';

export function apiType(t: ApiDevice['type']): DeviceType {
  switch (t) {
    case 'cpu':
      return 'cpu';
    case 'accelerator':
      return 'accelerator';
    case 'other':
      return 'other';
    case 'gpu':
    case 'integrated-gpu':
    case 'virtual-gpu':
      return 'gpu';
    default: {
      const never: never = t;
      throw new Error(`unknown device type ${String(never)}`);
    }
  }
}

/** The devices `found` of a discovery-only API, as `backend`'s, the model told `framework`. */
export function apiDiscovery(backend: Backend, framework: string, found: ApiDiscovery): BackendDiscovery {
  const devices = found.devices.map((d): DiscoveredDevice => {
    const id = `${backend}:${d.index}`;
    const type = apiType(d.type);
    // Neither backend registers host memory: no query hook and no ops, whatever the device.
    return {
      id,
      backend,
      name: d.name,
      pciBusId: d.pciBusId,
      driver: { name: d.platform ? `${framework} (${d.platform})` : framework, version: d.driverVersion },
      integrated: d.integrated,
      type,
      device: { id, framework, name: d.name, type },
    };
  });
  return { devices, report: { backend, library: found.library, devices: devices.length, ...(found.error ? { note: found.error } : {}) } };
}
