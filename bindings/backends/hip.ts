// The HIP backend: libamdhip64.so* (bindings/hip.ts), a discovery group of its own, native ops on each device.
import { type DiscoveredDevice, ask } from '../backend.js';
import {
  HIP_ERROR_HOST_MEMORY_NOT_REGISTERED,
  HIP_ERROR_INVALID_VALUE,
  HIP_LIBRARIES,
  HIP_LIBRARY_ENV,
  HIP_REFERENCE_ATTRIBUTE,
  HOST_REGISTER_MAPPED,
  HOST_REGISTER_PORTABLE,
  type HipDriver,
  hipVersionText,
  loadHip,
  withHipOps,
} from '../hip.js';
import { identityFacts, registeringBackend, registeringDevice } from './registering.js';
import { type AttributeReading, type ReferenceAttribute, type ReferenceKit, readAttribute } from '../reference-kit.js';

/** The hipDeviceAttribute_t of each attribute the reference checks hold to behaviour, and the HIP major version it is new in. */
const REFERENCE_ATTRIBUTES: Readonly<Record<ReferenceAttribute, readonly [string, number, number] | string>> = {
  hostRegister: ['HostRegisterSupported', HIP_REFERENCE_ATTRIBUTE.HOST_REGISTER_SUPPORTED, 6],
  // HIP has no attribute for it: its read-only flag (0x8) is ignored on AMD devices (bindings/hip.ts: withHipOps)
  readOnlyRegister: 'HIP has no read-only registration attribute (hipHostRegisterReadOnly is ignored on AMD devices)',
  hostPointer: ['CanUseHostPointerForRegisteredMem', HIP_REFERENCE_ATTRIBUTE.CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 5],
  pageableAccess: ['PageableMemoryAccess', HIP_REFERENCE_ATTRIBUTE.PAGEABLE_MEMORY_ACCESS, 5],
  pageTables: ['PageableMemoryAccessUsesHostPageTables', HIP_REFERENCE_ATTRIBUTE.PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 5],
};

/**
 * The reference kit of HIP device `ordinal` (bindings/reference-kit.ts). HIP has one context per device (hipSetDevice
 * makes it current): its second context is another device's, where this process has one.
 */
function hipReferenceKit(driver: HipDriver, ordinal: number): ReferenceKit {
  const read = (which: ReferenceAttribute, dev: number): AttributeReading => {
    const known = REFERENCE_ATTRIBUTES[which];
    if (typeof known === 'string') return { absent: known };
    const [name, id, since] = known;
    const { major, minor } = driver.runtimeVersion();
    // the numbers are those of HIP 5.x to 7.x (4.x numbered otherwise); an attribute newer than the runtime is not asked
    if (major < since || major > 7) return { absent: `hipDeviceAttribute${name} is not known for HIP ${major}.${minor}` };
    return readAttribute(`hipDeviceAttribute${name} (${id})`, () => driver.attribute(dev, id));
  };
  return {
    ...(typeof driver.reference === 'string' ? { missing: driver.reference } : {}),
    portableFlag: HOST_REGISTER_PORTABLE,
    deviceMapFlag: HOST_REGISTER_MAPPED,
    invalidValue: { code: HIP_ERROR_INVALID_VALUE, name: 'hipErrorInvalidValue' },
    devicePointerCall: 'hipHostGetDevicePointer',
    names: { async: 'hipMemcpyAsync', deviceToDevice: 'hipMemcpy(hipMemcpyDeviceToDevice)', pointerQuery: 'hipPointerGetAttribute' },
    attribute: (which) => read(which, ordinal),
    attributeOnAll: (which) => Array.from({ length: driver.devices().count }, (_, d) => read(which, d)),
    memInfo(ops) {
      ops.synchronize(); // makes the device current
      return driver.memGetInfo();
    },
    devicePointer(ops, address) {
      ops.synchronize();
      return driver.hostGetDevicePointer(address);
    },
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
  const version = hipVersionText(rv);
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
