// The HIP backend: libamdhip64.so* (bindings/hip.ts), a discovery group of its own, native ops on each device.
import { errorText } from '../../src/fatal.js';
import { type BackendModule, type DiscoveredDevice, type NativeKit, ask, failedToStart, notLoaded, replay } from '../backend.js';
import type { DeviceOps, WithOpsOptions } from '../device-ops.js';
import { HIP_LIBRARY_ENV, type HipDriver, loadHip, withHipOps } from '../hip.js';

const NOT_REGISTERED_NAME = 'hipErrorHostMemoryNotRegistered';

function hipKit(driver: HipDriver, ordinal: number): NativeKit {
  return {
    libraryEnv: HIP_LIBRARY_ENV,
    notRegisteredName: NOT_REGISTERED_NAME,
    contextReset: {
      call: 'hipDeviceReset',
      // hipDeviceReset resets the current device: this one first
      reset: () => {
        driver.setDevice(ordinal);
        driver.deviceReset();
      },
    },
    attributeCall: () => {
      const attr = driver.integratedAttribute();
      return { call: 'hipDeviceGetAttribute', query: () => driver.attribute(ordinal, attr) };
    },
  };
}

function discoverHip(): ReturnType<BackendModule['discover']> {
  let driver: HipDriver;
  try {
    driver = loadHip();
  } catch (e) {
    return notLoaded('hip', e);
  }
  try {
    const rv = driver.runtimeVersion();
    const version = `${rv.major}.${rv.minor}.${rv.patch}`;
    const { count, reason } = driver.devices();
    const devices: DiscoveredDevice[] = [];
    for (let i = 0; i < count; i++) {
      const integrated = ask(() => driver.integrated(i));
      const name = driver.name(i);
      const withOps = <T>(bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T => withHipOps(driver, i, bytes, f, options);
      devices.push({
        id: `hip:${i}`,
        backend: 'hip',
        name,
        pciBusId: driver.pciBusId(i).toLowerCase(),
        driver: { name: 'HIP', version },
        integrated: integrated.ok ? integrated.value : null,
        ...(integrated.ok ? {} : { integratedError: errorText(integrated.error) }),
        type: 'gpu',
        totalMemBytes: driver.totalMem(i),
        device: {
          id: `hip:${i}`,
          framework: 'HIP',
          name,
          type: 'gpu',
          sharedMemoryQuery: replay(integrated),
          withOps,
        },
        // HIP keeps its context for the process anyway: nothing to keep
        native: { api: 'HIP', driver, ordinal: i, kit: hipKit(driver, i), withOps, keepContext: () => {} },
      });
    }
    const note = reason ? `HIP: ${reason} (${driver.path}, HIP ${version})` : undefined;
    return { devices, report: { backend: 'hip', library: driver.path, devices: count, ...(note ? { note } : {}) } };
  } catch (e) {
    return { devices: [], report: failedToStart('hip', driver.path, e) };
  }
}

export const hip = {
  id: 'hip',
  framework: 'HIP',
  libraryEnv: HIP_LIBRARY_ENV,
  group: 'hip',
  registers: true,
  errors: { api: 'HIP', notRegisteredName: NOT_REGISTERED_NAME },
  discover: discoverHip,
} as const satisfies BackendModule;
