// The CUDA backend: libcuda.so.1 (bindings/cuda.ts), a discovery group of its own, native ops on each device.
import { errorText } from '../../src/fatal.js';
import { type DiscoveredDevice, ask } from '../backend.js';
import {
  CU_DEVICE_ATTRIBUTE,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
  CUDA_ERROR_INVALID_VALUE,
  CUDA_LIBRARY,
  CUDA_LIBRARY_ENV,
  cudaVersionText,
  CU_MEMHOSTREGISTER,
  type CudaDriver,
  loadCuda,
  nvidiaModuleVersion,
  withCudaCreatedContextOps,
  withCudaOps,
} from '../cuda.js';
import { identityFacts, registeringBackend, registeringDevice } from './registering.js';
import { type ReferenceAttribute, type ReferenceKit, readAttribute } from '../reference-kit.js';

/** NativeDevice.keepContext for CUDA device `ordinal`: one primary context retain, taken once, never released. */
function keepCudaContext(driver: CudaDriver, ordinal: number): () => void {
  let kept = false;
  return () => {
    if (kept) return;
    driver.primaryCtxRetain(ordinal);
    kept = true;
  };
}

/** The attributes of the facts file, by name: each its value, or the error its query gave. */
function cudaAttributes(driver: CudaDriver, ordinal: number): Record<string, number | string> {
  const attributes: Record<string, number | string> = {};
  for (const [name, id] of [
    ['CAN_MAP_HOST_MEMORY', CU_DEVICE_ATTRIBUTE.CAN_MAP_HOST_MEMORY],
    ['PAGEABLE_MEMORY_ACCESS', CU_DEVICE_ATTRIBUTE.PAGEABLE_MEMORY_ACCESS],
    ['CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM', CU_DEVICE_ATTRIBUTE.CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM],
    ['HOST_REGISTER_SUPPORTED', CU_DEVICE_ATTRIBUTE.HOST_REGISTER_SUPPORTED],
    ['PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES', CU_DEVICE_ATTRIBUTE.PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES],
    ['READ_ONLY_HOST_REGISTER_SUPPORTED', CU_DEVICE_ATTRIBUTE.READ_ONLY_HOST_REGISTER_SUPPORTED],
  ] as const) {
    try {
      attributes[name] = driver.attribute(ordinal, id);
    } catch (e) {
      attributes[name] = errorText(e);
    }
  }
  return attributes;
}

/** The CUdevice_attribute of each attribute the reference checks hold to behaviour. */
const REFERENCE_ATTRIBUTES: Readonly<Record<ReferenceAttribute, readonly [string, number]>> = {
  hostRegister: ['HOST_REGISTER_SUPPORTED', CU_DEVICE_ATTRIBUTE.HOST_REGISTER_SUPPORTED],
  readOnlyRegister: ['READ_ONLY_HOST_REGISTER_SUPPORTED', CU_DEVICE_ATTRIBUTE.READ_ONLY_HOST_REGISTER_SUPPORTED],
  hostPointer: ['CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM', CU_DEVICE_ATTRIBUTE.CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM],
  pageableAccess: ['PAGEABLE_MEMORY_ACCESS', CU_DEVICE_ATTRIBUTE.PAGEABLE_MEMORY_ACCESS],
  pageTables: ['PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES', CU_DEVICE_ATTRIBUTE.PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES],
};

/** The reference kit of CUDA device `ordinal` (bindings/reference-kit.ts): its second context is one created on it (cuCtxCreate_v2). */
function cudaReferenceKit(driver: CudaDriver, ordinal: number): ReferenceKit {
  const read = (which: ReferenceAttribute, dev: number) => {
    const [name, id] = REFERENCE_ATTRIBUTES[which];
    return readAttribute(`CU_DEVICE_ATTRIBUTE_${name} (${id})`, () => driver.attribute(dev, id));
  };
  return {
    ...(typeof driver.reference === 'string' ? { missing: driver.reference } : {}),
    portableFlag: CU_MEMHOSTREGISTER.PORTABLE,
    deviceMapFlag: CU_MEMHOSTREGISTER.DEVICEMAP,
    invalidValue: { code: CUDA_ERROR_INVALID_VALUE, name: 'CUDA_ERROR_INVALID_VALUE' },
    devicePointerCall: 'cuMemHostGetDevicePointer_v2',
    names: { async: 'cuMemcpyHtoDAsync_v2', deviceToDevice: 'cuMemcpyDtoD_v2', pointerQuery: 'cuPointerGetAttribute' },
    attribute: (which) => read(which, ordinal),
    attributeOnAll: (which) => Array.from({ length: driver.devices().count }, (_, d) => read(which, d)),
    memInfo(ops) {
      ops.synchronize(); // makes the device's context current
      return driver.memGetInfo();
    },
    devicePointer(ops, address) {
      ops.synchronize();
      return driver.memHostGetDevicePointer(address);
    },
    deviceCount: () => driver.devices().count,
    secondContext: () =>
      typeof driver.createdContexts === 'string'
        ? `no second context can be made on CUDA device ${ordinal}: ${driver.createdContexts}`
        : { what: `a context created with cuCtxCreate_v2 on CUDA device ${ordinal}`, withOps: (bytes, f, options) => withCudaCreatedContextOps(driver, ordinal, bytes, f, options) },
    withDeviceOps: (other, bytes, f, options) => withCudaOps(driver, other, bytes, f, options),
  };
}

function cudaDevice(driver: CudaDriver, i: number, version: string): DiscoveredDevice {
  const attributes = cudaAttributes(driver, i);
  const integrated = ask(() => driver.attribute(i, CU_DEVICE_ATTRIBUTE.INTEGRATED) !== 0);
  attributes.INTEGRATED = integrated.ok ? Number(integrated.value) : errorText(integrated.error);
  return registeringDevice(cuda, {
    ...identityFacts(driver, i),
    integrated,
    attributes,
    version,
    kit: {
      contextReset: {
        call: 'cuDevicePrimaryCtxReset_v2',
        reset: () => driver.primaryCtxReset(i),
        releaseKept: () => driver.primaryCtxRelease(i),
      },
      readOnlyFlag: CU_MEMHOSTREGISTER.READ_ONLY,
      attributeCall: () => ({ call: 'cuDeviceGetAttribute', query: () => driver.attribute(i, CU_DEVICE_ATTRIBUTE.INTEGRATED) }),
      reference: cudaReferenceKit(driver, i),
    },
    withOps: (bytes, f, options) => withCudaOps(driver, i, bytes, f, options),
    keepContext: keepCudaContext(driver, i),
  });
}

function listCuda(driver: CudaDriver): { devices: DiscoveredDevice[]; note?: string } {
  const v = driver.driverVersion();
  const module = nvidiaModuleVersion();
  const version = `${cudaVersionText(v)}${module ? ` (kernel module ${module})` : ''}`;
  const { count, reason } = driver.devices();
  const devices = Array.from({ length: count }, (_, i) => cudaDevice(driver, i, version));
  return { devices, ...(reason ? { note: `CUDA: ${reason}` } : {}) };
}

export const cuda = registeringBackend({
  id: 'cuda', framework: 'CUDA', libraryEnv: CUDA_LIBRARY_ENV, libraries: [CUDA_LIBRARY],
  // one /dev/nvidia<N> per GPU the kernel module drives (nvidiactl and nvidia-uvm are not GPUs)
  gpuNodes: { pattern: /^nvidia\d+$/, visibleEnv: 'CUDA_VISIBLE_DEVICES' },
  codes: { notRegistered: [CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, 'CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED'], invalidValue: [CUDA_ERROR_INVALID_VALUE, 'CUDA_ERROR_INVALID_VALUE'] },
  // a failed query says nothing about the device
  failedQuery: 'unknown',
  load: loadCuda, list: listCuda,
});
