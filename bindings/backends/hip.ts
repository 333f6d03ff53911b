// The HIP backend: libamdhip64.so* (bindings/hip.ts), a discovery group of its own, native ops on each device.
import { type DiscoveredDevice, ask } from '../backend.js';
import {
  HIP_CAN_USE_HOST_POINTER_ATTRIBUTE,
  HIP_ERROR_HOST_MEMORY_NOT_REGISTERED,
  HIP_ERROR_INVALID_VALUE,
  HIP_LIBRARY_ENV,
  HIP_PAGEABLE_MEMORY_ACCESS_ATTRIBUTE,
  HOST_REGISTER_MAPPED,
  HOST_REGISTER_PORTABLE,
  type HipDriver,
  loadHip,
  withHipOps,
} from '../hip.js';
import { errorText } from '../../src/fatal.js';
import type { ReferenceKit } from '../reference-kit.js';
import { identityFacts, registeringBackend, registeringDevice } from './registering.js';

/** An attribute of the HIP 5.x-7.x layout, or why there is none (a 4.x runtime numbers them otherwise). */
function attributeOrWhy(driver: HipDriver, ordinal: number, attribute: number, name: string): number | string {
  const { major, minor } = driver.runtimeVersion();
  if (major < 5) return `not asked: HIP ${major}.${minor} numbers ${name} otherwise`;
  try {
    return driver.attribute(ordinal, attribute);
  } catch (e) {
    return errorText(e);
  }
}

/**
 * The reference checks' kit of HIP device `ordinal`. HIP has one context per device (hipSetDevice makes it current):
 * its second context is another device's, where this process has one.
 */
function hipReferenceKit(driver: HipDriver, ordinal: number): ReferenceKit {
  return {
    ...(typeof driver.reference === 'string' ? { missing: driver.reference } : {}),
    portableFlag: HOST_REGISTER_PORTABLE,
    deviceMapFlag: HOST_REGISTER_MAPPED,
    names: { async: 'hipMemcpyAsync', devicePointer: 'hipHostGetDevicePointer', deviceToDevice: 'hipMemcpy(hipMemcpyDeviceToDevice)', pointerQuery: 'hipPointerGetAttribute' },
    canUseHostPointer: () => attributeOrWhy(driver, ordinal, HIP_CAN_USE_HOST_POINTER_ATTRIBUTE, 'hipDeviceAttributeCanUseHostPointerForRegisteredMem'),
    pageableMemoryAccess: () => attributeOrWhy(driver, ordinal, HIP_PAGEABLE_MEMORY_ACCESS_ATTRIBUTE, 'hipDeviceAttributePageableMemoryAccess'),
    deviceCount: () => driver.devices().count,
    secondContext: () => {
      const count = driver.devices().count;
      if (count < 2) return `HIP has one context per device and this process has one HIP device: no second context can be made`;
      const other = (ordinal + 1) % count;
      return { what: `HIP device ${other} (HIP has one context per device)`, withOps: (bytes, f, options) => withHipOps(driver, other, bytes, f, options) };
    },
    withDeviceOps: (other, bytes, f, options) => withHipOps(driver, other, bytes, f, options),
  };
}

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
      reference: hipReferenceKit(driver, i),
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
  id: 'hip', framework: 'HIP', libraryEnv: HIP_LIBRARY_ENV,
  codes: { notRegistered: [HIP_ERROR_HOST_MEMORY_NOT_REGISTERED, 'hipErrorHostMemoryNotRegistered'], invalidValue: [HIP_ERROR_INVALID_VALUE, 'hipErrorInvalidValue'] },
  // HIP counts a failed query as an integrated device
  failedQuery: 'integrated',
  load: loadHip, list: listHip,
});
