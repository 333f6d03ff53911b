// The HIP backend: libamdhip64.so* (bindings/hip.ts), a discovery group of its own, native ops on each device.
import { type DiscoveredDevice, ask } from '../backend.js';
import { HIP_ERROR_HOST_MEMORY_NOT_REGISTERED, HIP_ERROR_INVALID_VALUE, HIP_LIBRARIES, HIP_LIBRARY_ENV, type HipDriver, loadHip, withHipOps } from '../hip.js';
import { identityFacts, registeringBackend, registeringDevice } from './registering.js';

function hipDevice(driver: HipDriver, i: number, version: string): DiscoveredDevice {
  const integrated = ask(() => driver.integrated(i));
  return registeringDevice(hip, {
    ...identityFacts(driver, i),
    integrated,
    version,
    kit: {
      contextReset: {
        call: 'hipDeviceReset',
        // hipDeviceReset resets the current device: this one first
        reset: () => {
          driver.setDevice(i);
          driver.deviceReset();
        },
      },
      attributeCall: () => {
        const attr = driver.integratedAttribute();
        return { call: 'hipDeviceGetAttribute', query: () => driver.attribute(i, attr) };
      },
    },
    withOps: (bytes, f, options) => withHipOps(driver, i, bytes, f, options),
    // HIP keeps its context for the process anyway: nothing to keep
    keepContext: () => {},
  });
}

function listHip(driver: HipDriver): { devices: DiscoveredDevice[]; note?: string } {
  const rv = driver.runtimeVersion();
  const version = `${rv.major}.${rv.minor}.${rv.patch}`;
  const { count, reason } = driver.devices();
  const devices = Array.from({ length: count }, (_, i) => hipDevice(driver, i, version));
  return { devices, ...(reason ? { note: `HIP: ${reason} (${driver.path}, HIP ${version})` } : {}) };
}

export const hip = registeringBackend({
  id: 'hip', framework: 'HIP', libraryEnv: HIP_LIBRARY_ENV, libraries: HIP_LIBRARIES, deviceNodes: ['/dev/kfd', '/dev/dxg'],
  codes: { notRegistered: [HIP_ERROR_HOST_MEMORY_NOT_REGISTERED, 'hipErrorHostMemoryNotRegistered'], invalidValue: [HIP_ERROR_INVALID_VALUE, 'hipErrorInvalidValue'] },
  // HIP counts a failed query as an integrated device
  failedQuery: 'integrated',
  load: loadHip, list: listHip,
});
