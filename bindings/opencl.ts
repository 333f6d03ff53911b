// OpenCL device discovery through koffi. Discovery only: platforms and devices are listed and described;
// no context, buffer or registration call is ever made.

import koffi from 'koffi';
import type { KoffiFunc, LibraryHandle } from 'koffi';
import { type ApiLibrary, type ApiDevice, type ApiDiscovery, declareType, discoverWith, pciBusIdText } from './api-library.js';

export type { ApiDevice, ApiDiscovery } from './api-library.js';

/** Environment variable naming the OpenCL library to load instead of the defaults. */
export const OPENCL_LIBRARY_ENV = 'MAPPED_REG_OPENCL_LIBRARY';
/** Tried in this order when neither a path nor the environment variable is given. */
export const OPENCL_DEFAULT_LIBRARIES: readonly string[] = ['libOpenCL.so.1', 'libOpenCL.so'];

// ---------------------------------------------------------------------------------------------------------
// C declarations (CL/cl.h, CL/cl_ext.h)

const CL_SUCCESS = 0;
const CL_DEVICE_NOT_FOUND = -1;
const CL_PLATFORM_NOT_FOUND_KHR = -1001;

const CL_PLATFORM_NAME = 0x0902;

const CL_DEVICE_TYPE_CPU = 1n << 1n;
const CL_DEVICE_TYPE_GPU = 1n << 2n;
const CL_DEVICE_TYPE_ACCELERATOR = 1n << 3n;
const CL_DEVICE_TYPE_ALL = 0xffffffffn;

const CL_DEVICE_TYPE = 0x1000;
const CL_DEVICE_NAME = 0x102b;
const CL_DEVICE_VENDOR = 0x102c;
const CL_DRIVER_VERSION = 0x102d;
const CL_DEVICE_EXTENSIONS = 0x1030;
const CL_DEVICE_HOST_UNIFIED_MEMORY = 0x1035;
const CL_DEVICE_PCI_BUS_INFO_KHR = 0x410f; // cl_khr_pci_bus_info: struct { cl_uint domain, bus, device, function; }

const INFO_NAMES: Record<number, string> = {
  [CL_PLATFORM_NAME]: 'CL_PLATFORM_NAME',
  [CL_DEVICE_TYPE]: 'CL_DEVICE_TYPE',
  [CL_DEVICE_NAME]: 'CL_DEVICE_NAME',
  [CL_DEVICE_VENDOR]: 'CL_DEVICE_VENDOR',
  [CL_DRIVER_VERSION]: 'CL_DRIVER_VERSION',
  [CL_DEVICE_EXTENSIONS]: 'CL_DEVICE_EXTENSIONS',
  [CL_DEVICE_HOST_UNIFIED_MEMORY]: 'CL_DEVICE_HOST_UNIFIED_MEMORY',
  [CL_DEVICE_PCI_BUS_INFO_KHR]: 'CL_DEVICE_PCI_BUS_INFO_KHR',
};

const ERROR_NAMES: Record<number, string> = {
  [-1]: 'CL_DEVICE_NOT_FOUND',
  [-2]: 'CL_DEVICE_NOT_AVAILABLE',
  [-5]: 'CL_OUT_OF_RESOURCES',
  [-6]: 'CL_OUT_OF_HOST_MEMORY',
  [-30]: 'CL_INVALID_VALUE',
  [-31]: 'CL_INVALID_DEVICE_TYPE',
  [-32]: 'CL_INVALID_PLATFORM',
  [-33]: 'CL_INVALID_DEVICE',
  [-59]: 'CL_INVALID_OPERATION',
  [-1001]: 'CL_PLATFORM_NOT_FOUND_KHR',
};

declareType('cl_int', koffi.type('int32_t'));
declareType('cl_uint', koffi.type('uint32_t'));
declareType('cl_ulong', koffi.type('uint64_t'));
declareType('cl_platform_id', koffi.pointer(koffi.opaque()));
declareType('cl_device_id', koffi.pointer(koffi.opaque()));

/** Handles are BigInt addresses (koffi 3); output arrays of handles are JS arrays koffi fills in. */
type Handle = bigint;

type InfoCall = (size: number, value: Buffer | null, sizeRet: number[] | null) => number;

interface OpenCLApi {
  clGetPlatformIDs: KoffiFunc<(numEntries: number, platforms: (Handle | null)[] | null, numPlatforms: number[] | null) => number>;
  clGetPlatformInfo: KoffiFunc<(platform: Handle, param: number, size: number, value: Buffer | null, sizeRet: number[] | null) => number>;
  clGetDeviceIDs: KoffiFunc<
    (platform: Handle, type: bigint, numEntries: number, devices: (Handle | null)[] | null, numDevices: number[] | null) => number
  >;
  clGetDeviceInfo: KoffiFunc<(device: Handle, param: number, size: number, value: Buffer | null, sizeRet: number[] | null) => number>;
}

const PROTOTYPES: Record<keyof OpenCLApi, string> = {
  clGetPlatformIDs: 'cl_int clGetPlatformIDs(cl_uint num_entries, _Out_ cl_platform_id *platforms, _Out_ cl_uint *num_platforms)',
  clGetPlatformInfo:
    'cl_int clGetPlatformInfo(cl_platform_id platform, cl_uint param_name, size_t param_value_size, _Out_ void *param_value, _Out_ size_t *param_value_size_ret)',
  clGetDeviceIDs:
    'cl_int clGetDeviceIDs(cl_platform_id platform, cl_ulong device_type, cl_uint num_entries, _Out_ cl_device_id *devices, _Out_ cl_uint *num_devices)',
  clGetDeviceInfo:
    'cl_int clGetDeviceInfo(cl_device_id device, cl_uint param_name, size_t param_value_size, _Out_ void *param_value, _Out_ size_t *param_value_size_ret)',
};

function bind(lib: LibraryHandle): OpenCLApi {
  return {
    clGetPlatformIDs: lib.func(PROTOTYPES.clGetPlatformIDs),
    clGetPlatformInfo: lib.func(PROTOTYPES.clGetPlatformInfo),
    clGetDeviceIDs: lib.func(PROTOTYPES.clGetDeviceIDs),
    clGetDeviceInfo: lib.func(PROTOTYPES.clGetDeviceInfo),
  } as OpenCLApi;
}

// ---------------------------------------------------------------------------------------------------------
// Loading

const LIBRARY: ApiLibrary<OpenCLApi> = { label: 'OpenCL', what: 'an OpenCL library', env: OPENCL_LIBRARY_ENV, defaults: OPENCL_DEFAULT_LIBRARIES, bind };

// ---------------------------------------------------------------------------------------------------------
// Queries

function codeText(code: number): string {
  const name = ERROR_NAMES[code];
  return name ? `${name} (${code})` : `error ${code}`;
}

/** The two-call clGet*Info pattern: ask the size, then the bytes. Null (and an error noted) on failure. */
function infoBytes(call: InfoCall, what: string, param: number, errors: string[]): Buffer | null {
  const label = `${what}(${INFO_NAMES[param] ?? `0x${param.toString(16)}`})`;
  const size = [0];
  let rc = call(0, null, size);
  if (rc !== CL_SUCCESS) {
    errors.push(`${label} returned ${codeText(rc)}`);
    return null;
  }
  const value = Buffer.alloc(Number(size[0] ?? 0));
  if (value.length === 0) return value;
  rc = call(value.length, value, null);
  if (rc !== CL_SUCCESS) {
    errors.push(`${label} returned ${codeText(rc)}`);
    return null;
  }
  return value;
}

function decodeString(value: Buffer | null): string | null {
  if (value === null) return null;
  const end = value.indexOf(0);
  return value.toString('utf8', 0, end < 0 ? value.length : end).trim();
}

function describeDevice(api: OpenCLApi, device: Handle, where: string, errors: string[]): Omit<ApiDevice, 'index' | 'platform'> {
  const info = (param: number): Buffer | null =>
    infoBytes((size, value, sizeRet) => api.clGetDeviceInfo(device, param, size, value, sizeRet), `clGetDeviceInfo[${where}]`, param, errors);

  const name = decodeString(info(CL_DEVICE_NAME)) ?? '';
  const vendor = decodeString(info(CL_DEVICE_VENDOR)) ?? '';
  const driverVersion = decodeString(info(CL_DRIVER_VERSION)) ?? '';

  const typeBytes = info(CL_DEVICE_TYPE);
  const bits = typeBytes !== null && typeBytes.length >= 8 ? typeBytes.readBigUInt64LE(0) : 0n;
  let type: ApiDevice['type'] = 'other';
  let integrated: boolean | null = null;
  if (bits & CL_DEVICE_TYPE_GPU) {
    const unified = info(CL_DEVICE_HOST_UNIFIED_MEMORY);
    if (unified !== null && unified.length >= 4) integrated = unified.readUInt32LE(0) !== 0;
    type = integrated === true ? 'integrated-gpu' : 'gpu';
  } else if (bits & CL_DEVICE_TYPE_CPU) {
    type = 'cpu';
  } else if (bits & CL_DEVICE_TYPE_ACCELERATOR) {
    type = 'accelerator';
  }

  let pciBusId: string | null = null;
  const extensions = (decodeString(info(CL_DEVICE_EXTENSIONS)) ?? '').split(/\s+/);
  if (extensions.includes('cl_khr_pci_bus_info')) {
    const bus = info(CL_DEVICE_PCI_BUS_INFO_KHR);
    if (bus !== null && bus.length >= 16) {
      const [domain, busNumber, dev, fn] = [0, 4, 8, 12].map((offset) => bus.readUInt32LE(offset)) as [number, number, number, number];
      pciBusId = pciBusIdText(domain, busNumber, dev, fn);
    }
  }

  return { name, type, integrated, vendor, driverVersion, pciBusId };
}

/** The handles a count-then-fill enumeration call gives; an empty list for `emptyCodes`. */
function enumerate(
  call: (count: number, out: (Handle | null)[] | null, countRet: number[] | null) => number,
  label: string,
  emptyCodes: number[],
  errors: string[],
): Handle[] {
  const count = [0];
  let rc = call(0, null, count);
  if (emptyCodes.includes(rc)) return [];
  if (rc !== CL_SUCCESS) {
    errors.push(`${label} returned ${codeText(rc)}`);
    return [];
  }
  const n = count[0] ?? 0;
  if (n === 0) return [];
  const out: (Handle | null)[] = new Array<Handle | null>(n).fill(null);
  const filled = [0];
  rc = call(n, out, filled);
  if (emptyCodes.includes(rc)) return [];
  if (rc !== CL_SUCCESS) {
    errors.push(`${label} returned ${codeText(rc)}`);
    return [];
  }
  return out.slice(0, Math.min(n, filled[0] ?? n)).filter((h): h is Handle => typeof h === 'bigint' && h !== 0n);
}

/**
 * Lists the OpenCL platforms and devices. Never throws: a missing library, a library that is not OpenCL and
 * failing calls all come back in `error` (the calls that failed, named with their codes), with every device
 * that could still be described.
 */
export function discoverOpenCL(libraryPath?: string): ApiDiscovery {
  return discoverWith(LIBRARY, libraryPath, (api, devices, errors) => {
    const platforms = enumerate((n, out, ret) => api.clGetPlatformIDs(n, out, ret), 'clGetPlatformIDs', [CL_PLATFORM_NOT_FOUND_KHR], errors);
    platforms.forEach((platform, p) => {
      const platformName = decodeString(
        infoBytes((size, value, ret) => api.clGetPlatformInfo(platform, CL_PLATFORM_NAME, size, value, ret), `clGetPlatformInfo[platform ${p}]`, CL_PLATFORM_NAME, errors),
      );
      const ids = enumerate(
        (n, out, ret) => api.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, n, out, ret),
        `clGetDeviceIDs[platform ${p}](CL_DEVICE_TYPE_ALL)`,
        [CL_DEVICE_NOT_FOUND],
        errors,
      );
      ids.forEach((device, d) => {
        const described = describeDevice(api, device, `platform ${p} device ${d}`, errors);
        devices.push({ index: devices.length, ...described, ...(platformName !== null ? { platform: platformName } : {}) });
      });
    });
  });
}
