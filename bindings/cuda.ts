// The CUDA driver API (libcuda.so.1) through koffi: the calls the suite needs, every result code checked.
// Nothing is loaded until loadCuda() is called.
//
// Host memory goes to the driver by address (Host.address, a bigint, for `void *` parameters); see
// hostAddress() in device-ops.ts for why, and for the check that the Host's bytes really live there.

import type { Host } from '../src/ops.js';
import { type DeviceOps, type WithOpsOptions, checkOrdinal, checkSize } from './device-ops.js';
import { type Checker, type Held, type IntLike, type MemInfo, type OpsDriver, type Out, type Pointer, driverCalls, driverErrorClass, driverLoader, hostCalls, memInfo, outPointer, pointerQuery, readyCall, withDriverOps } from './driver-kit.js';
import { type DeviceCount, type DriverCommon, type ErrorTexts, deviceQueries, driverBase, driverCommon, errorTexts, outNumber } from './driver-queries.js';
import type { DriverError } from './errors.js';
import type { LibraryHandle } from 'koffi';
import { type ReferenceCalls, declareOptional } from './reference-ops.js';
import type { EventCalls } from './device-clock.js';
import { hostAddress } from './device-ops.js';
import { sysfsRoot } from './pci.js';
import { readSmallFile } from './small-file.js';

export type { DeviceOps, WithOpsOptions } from './device-ops.js';
export { DriverError, LibraryNotFoundError, NotADriverError } from './errors.js';

export const CUDA_LIBRARY = 'libcuda.so.1';
export const CUDA_LIBRARY_ENV = 'MAPPED_REG_CUDA_LIBRARY';

/** cuDriverGetVersion's number as CUDA names its versions: 13000 is 13.0, 12080 is 12.8. */
export function cudaVersionText(raw: number): string {
  return `${Math.floor(raw / 1000)}.${(raw % 1000) / 10}`;
}

/** The NVIDIA kernel module's version (`<sysfs>/module/nvidia/version`), read without blocking; undefined when it cannot be. */
export function nvidiaModuleVersion(): string | undefined {
  const read = readSmallFile(`${sysfsRoot()}/module/nvidia/version`);
  return 'text' in read ? read.text.trim() || undefined : undefined;
}

/** The CUdevice_attribute values the suite asks for (cuda.h: CU_DEVICE_ATTRIBUTE_*). */
export const CU_DEVICE_ATTRIBUTE = {
  INTEGRATED: 18,
  CAN_MAP_HOST_MEMORY: 19,
  PAGEABLE_MEMORY_ACCESS: 88,
  CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: 91,
  HOST_REGISTER_SUPPORTED: 99,
  PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: 100,
  READ_ONLY_HOST_REGISTER_SUPPORTED: 113,
} as const;

/** cuMemHostRegister flags (cuda.h: CU_MEMHOSTREGISTER_*). */
export const CU_MEMHOSTREGISTER = {
  PORTABLE: 0x01,
  /** Maps the range into the device's address space: cuMemHostGetDevicePointer gives its device address. */
  DEVICEMAP: 0x02,
  /** Required for read-only file mappings: without it the driver asks for a writable pin and gets 1 (measured, H200). */
  READ_ONLY: 0x08,
} as const;

const CUDA_SUCCESS = 0;
export const CUDA_ERROR_INVALID_VALUE = 1;
export const CUDA_ERROR_NO_DEVICE = 100;
export const CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712;
export const CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713;

/** Names for codes cuGetErrorName may not know (an older driver, a double). From cuda.h's CUresult. */
const CUDA_ERROR_NAMES: ReadonlyMap<number, string> = new Map([
  [0, 'CUDA_SUCCESS'],
  [1, 'CUDA_ERROR_INVALID_VALUE'],
  [2, 'CUDA_ERROR_OUT_OF_MEMORY'],
  [3, 'CUDA_ERROR_NOT_INITIALIZED'],
  [4, 'CUDA_ERROR_DEINITIALIZED'],
  [34, 'CUDA_ERROR_STUB_LIBRARY'],
  [46, 'CUDA_ERROR_DEVICE_UNAVAILABLE'],
  [100, 'CUDA_ERROR_NO_DEVICE'],
  [101, 'CUDA_ERROR_INVALID_DEVICE'],
  [102, 'CUDA_ERROR_DEVICE_NOT_LICENSED'],
  [200, 'CUDA_ERROR_INVALID_IMAGE'],
  [201, 'CUDA_ERROR_INVALID_CONTEXT'],
  [205, 'CUDA_ERROR_MAP_FAILED'],
  [206, 'CUDA_ERROR_UNMAP_FAILED'],
  [208, 'CUDA_ERROR_ALREADY_MAPPED'],
  [214, 'CUDA_ERROR_ECC_UNCORRECTABLE'],
  [216, 'CUDA_ERROR_CONTEXT_ALREADY_IN_USE'],
  [304, 'CUDA_ERROR_OPERATING_SYSTEM'],
  [400, 'CUDA_ERROR_INVALID_HANDLE'],
  [401, 'CUDA_ERROR_ILLEGAL_STATE'],
  [500, 'CUDA_ERROR_NOT_FOUND'],
  [600, 'CUDA_ERROR_NOT_READY'],
  [700, 'CUDA_ERROR_ILLEGAL_ADDRESS'],
  [708, 'CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE'],
  [709, 'CUDA_ERROR_CONTEXT_IS_DESTROYED'],
  [712, 'CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED'],
  [713, 'CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED'],
  [719, 'CUDA_ERROR_LAUNCH_FAILED'],
  [800, 'CUDA_ERROR_NOT_PERMITTED'],
  [801, 'CUDA_ERROR_NOT_SUPPORTED'],
  [802, 'CUDA_ERROR_SYSTEM_NOT_READY'],
  [803, 'CUDA_ERROR_SYSTEM_DRIVER_MISMATCH'],
  [804, 'CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE'],
  [999, 'CUDA_ERROR_UNKNOWN'],
]);

/** A CUDA driver call failed. `code` is the CUresult as returned (712 and 713 stay apart). */
export const CudaError = driverErrorClass('CUDA', 'CudaError');
export type CudaError = DriverError;

// ---- the C side: prototypes declared once, as strings ----

// CUresult is an enum (int); CUdevice is int; CUcontext is an opaque pointer; CUdeviceptr is unsigned long long.
const PROTOTYPES = {
  cuInit: 'int cuInit(unsigned int flags)',
  cuDriverGetVersion: 'int cuDriverGetVersion(_Out_ int *driverVersion)',
  cuDeviceGetCount: 'int cuDeviceGetCount(_Out_ int *count)',
  cuDeviceGet: 'int cuDeviceGet(_Out_ int *device, int ordinal)',
  cuDeviceGetName: 'int cuDeviceGetName(char *name, int len, int dev)',
  cuDeviceGetPCIBusId: 'int cuDeviceGetPCIBusId(char *pciBusId, int len, int dev)',
  cuDeviceTotalMem_v2: 'int cuDeviceTotalMem_v2(_Out_ size_t *bytes, int dev)',
  cuDeviceGetAttribute: 'int cuDeviceGetAttribute(_Out_ int *pi, int attrib, int dev)',
  cuDevicePrimaryCtxRetain: 'int cuDevicePrimaryCtxRetain(_Out_ void **pctx, int dev)',
  cuDevicePrimaryCtxRelease_v2: 'int cuDevicePrimaryCtxRelease_v2(int dev)',
  cuDevicePrimaryCtxReset_v2: 'int cuDevicePrimaryCtxReset_v2(int dev)',
  cuCtxSetCurrent: 'int cuCtxSetCurrent(void *ctx)',
  cuCtxSynchronize: 'int cuCtxSynchronize(void)',
  cuMemAlloc_v2: 'int cuMemAlloc_v2(_Out_ unsigned long long *dptr, size_t bytesize)',
  cuMemFree_v2: 'int cuMemFree_v2(unsigned long long dptr)',
  cuMemHostAlloc: 'int cuMemHostAlloc(_Out_ void **pp, size_t bytesize, unsigned int flags)',
  cuMemFreeHost: 'int cuMemFreeHost(void *p)',
  cuMemHostRegister_v2: 'int cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags)',
  cuMemHostUnregister: 'int cuMemHostUnregister(void *p)',
  cuMemcpyHtoD_v2: 'int cuMemcpyHtoD_v2(unsigned long long dstDevice, const void *srcHost, size_t byteCount)',
  cuMemcpyDtoH_v2: 'int cuMemcpyDtoH_v2(void *dstHost, unsigned long long srcDevice, size_t byteCount)',
  cuGetErrorName: 'int cuGetErrorName(int error, _Out_ const char **pStr)',
  // the reference checks (suites/hazards/reference-*.ts): the device's free memory and a registration's device address
  cuMemGetInfo_v2: 'int cuMemGetInfo_v2(_Out_ size_t *free, _Out_ size_t *total)',
  cuMemHostGetDevicePointer_v2: 'int cuMemHostGetDevicePointer_v2(_Out_ unsigned long long *pdptr, void *p, unsigned int flags)',
  cuGetErrorString: 'int cuGetErrorString(int error, _Out_ const char **pStr)',
} as const;

/**
 * The calls of the reference checks (bindings/reference-ops.ts), declared apart: a driver without them still loads.
 * CUstream is an opaque pointer. cuMemHostGetDevicePointer_v2 is in the driver's own table (PROTOTYPES): one binding.
 */
const REFERENCE_PROTOTYPES = {
  cuCtxCreate_v2: 'int cuCtxCreate_v2(_Out_ void **pctx, unsigned int flags, int dev)',
  cuCtxDestroy_v2: 'int cuCtxDestroy_v2(void *ctx)',
  cuStreamCreate: 'int cuStreamCreate(_Out_ void **phStream, unsigned int flags)',
  cuStreamSynchronize: 'int cuStreamSynchronize(void *hStream)',
  cuStreamDestroy_v2: 'int cuStreamDestroy_v2(void *hStream)',
  cuMemcpyHtoDAsync_v2: 'int cuMemcpyHtoDAsync_v2(unsigned long long dstDevice, const void *srcHost, size_t byteCount, void *hStream)',
  cuMemcpyDtoD_v2: 'int cuMemcpyDtoD_v2(unsigned long long dstDevice, unsigned long long srcDevice, size_t byteCount)',
  cuPointerGetAttribute: 'int cuPointerGetAttribute(void *data, int attribute, unsigned long long ptr)',
} as const;

/**
 * The events that time a copy on the device's clock (bindings/device-clock.ts), declared apart: a driver without
 * them still loads, its copies timed on the host's clock. CUevent and CUstream are opaque pointers.
 */
const EVENT_PROTOTYPES = {
  cuEventCreate: 'int cuEventCreate(_Out_ void **phEvent, unsigned int flags)',
  cuEventRecord: 'int cuEventRecord(void *hEvent, void *hStream)',
  cuEventSynchronize: 'int cuEventSynchronize(void *hEvent)',
  cuEventElapsedTime: 'int cuEventElapsedTime(_Out_ float *pMilliseconds, void *hStart, void *hEnd)',
  cuEventDestroy_v2: 'int cuEventDestroy_v2(void *hEvent)',
} as const;

interface CudaEventFunctions {
  cuEventCreate(out: Out<Pointer>, flags: number): number;
  cuEventRecord(event: bigint, stream: bigint | null): number;
  cuEventSynchronize(event: bigint): number;
  cuEventElapsedTime(ms: Out<number>, start: bigint, end: bigint): number;
  cuEventDestroy_v2(event: bigint): number;
}

/** The event calls of the driver in `lib`, each result checked, or why it has none. */
function cudaEventCalls(lib: LibraryHandle, checks: Checker, ready: () => void): EventCalls | string {
  const declared = declareOptional<CudaEventFunctions>(lib, EVENT_PROTOTYPES);
  if ('missing' in declared) return declared.missing;
  const e = declared.functions;
  const call = readyCall(checks, ready);
  return {
    create: () => {
      ready();
      return outPointer('CUDA', checks, 'cuEventCreate', (out) => e.cuEventCreate(out, 0), 'event');
    },
    record: (event, stream) => call('cuEventRecord', () => e.cuEventRecord(event, stream)),
    synchronize: (event) => call('cuEventSynchronize', () => e.cuEventSynchronize(event)),
    elapsedMs: (start, end) => {
      ready();
      return outNumber(checks, 'cuEventElapsedTime', (out) => e.cuEventElapsedTime(out, start, end));
    },
    destroy: (event) => call('cuEventDestroy_v2', () => e.cuEventDestroy_v2(event)),
  };
}

/** cuda.h CUpointer_attribute: CU_POINTER_ATTRIBUTE_DEVICE_POINTER. */
const CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3;

interface CudaReferenceFunctions {
  cuCtxCreate_v2(out: Out<Pointer>, flags: number, dev: number): number;
  cuCtxDestroy_v2(ctx: bigint): number;
  cuStreamCreate(out: Out<Pointer>, flags: number): number;
  cuStreamSynchronize(stream: bigint): number;
  cuStreamDestroy_v2(stream: bigint): number;
  cuMemcpyHtoDAsync_v2(dst: bigint, src: bigint, bytes: number, stream: bigint): number;
  cuMemcpyDtoD_v2(dst: bigint, src: bigint, bytes: number): number;
  cuPointerGetAttribute(data: Buffer, attribute: number, ptr: bigint): number;
}

/** Typed views of the koffi functions (koffi's own type for them is `(...args: any[]) => any`). */
interface CudaFunctions {
  cuInit(flags: number): number;
  cuDriverGetVersion(out: Out<number>): number;
  cuDeviceGetCount(out: Out<number>): number;
  cuDeviceGet(out: Out<number>, ordinal: number): number;
  cuDeviceGetName(name: Buffer, len: number, dev: number): number;
  cuDeviceGetPCIBusId(busId: Buffer, len: number, dev: number): number;
  cuDeviceTotalMem_v2(out: Out<IntLike>, dev: number): number;
  cuDeviceGetAttribute(out: Out<number>, attrib: number, dev: number): number;
  cuDevicePrimaryCtxRetain(out: Out<Pointer>, dev: number): number;
  cuDevicePrimaryCtxRelease_v2(dev: number): number;
  cuDevicePrimaryCtxReset_v2(dev: number): number;
  cuCtxSetCurrent(ctx: Pointer): number;
  cuCtxSynchronize(): number;
  cuMemAlloc_v2(out: Out<IntLike>, bytes: number): number;
  cuMemFree_v2(dptr: bigint): number;
  cuMemHostAlloc(out: Out<Pointer>, bytes: number, flags: number): number;
  cuMemFreeHost(p: bigint): number;
  cuMemHostRegister_v2(p: bigint, bytes: number, flags: number): number;
  cuMemHostUnregister(p: bigint): number;
  cuMemcpyHtoD_v2(dst: bigint, src: bigint, bytes: number): number;
  cuMemcpyDtoH_v2(dst: bigint, src: bigint, bytes: number): number;
  cuGetErrorName(error: number, out: Out<string | null>): number;
  cuMemGetInfo_v2(free: Out<IntLike>, total: Out<IntLike>): number;
  cuMemHostGetDevicePointer_v2(out: Out<IntLike>, p: bigint, flags: number): number;
  cuGetErrorString(error: number, out: Out<string | null>): number;
}

// ---- the driver ----

/** What cuInit said about this machine: devices, or none with the reason. */
export type CudaDevices = DeviceCount;

export interface CudaDriver extends DriverCommon<'CUDA'> {
  /** cuDriverGetVersion, e.g. 13000 for 13.0 (needs no cuInit). */
  driverVersion(): number;
  /** cuInit(0) once (cached). Result 100 is not an error: it means there is no CUDA device here. */
  devices(): CudaDevices;
  /** cuDevicePrimaryCtxRetain; returns the CUcontext. Each retain needs one release. */
  primaryCtxRetain(ordinal: number): bigint;
  primaryCtxRelease(ordinal: number): void;
  /** Destroys the primary context's state, registrations included (they come back 713 afterwards). */
  primaryCtxReset(ordinal: number): void;
  ctxSetCurrent(ctx: bigint | null): void;
  ctxSynchronize(): void;
  memAlloc(bytes: number): bigint;
  memFree(dptr: bigint): void;
  /** Page-locked host memory; `bytes` is a zero-copy view of it. Must not be touched after memFreeHost. */
  memHostAlloc(bytes: number, flags?: number): Host;
  memFreeHost(host: Host): void;
  /** The reference checks' calls (streams, device pointers, the pointer query), or why the driver has none. */
  readonly reference: ReferenceCalls | string;
  /** The events that time a copy on the device's clock, or why the driver has none. */
  readonly events: EventCalls | string;
  /** cuCtxCreate_v2 (the context made current) and cuCtxDestroy_v2, or why the driver has none. */
  readonly createdContexts: { create(ordinal: number): bigint; destroy(ctx: bigint): void } | string;
  /** cuMemGetInfo_v2 in the current context: the device's free and total memory, in bytes. */
  memGetInfo(): MemInfo;
  /** cuMemHostGetDevicePointer_v2 (flags 0) in the current context: the device address of a registered host address. */
  memHostGetDevicePointer(address: bigint): bigint;
}

/**
 * Load the CUDA driver from `path`, else from $MAPPED_REG_CUDA_LIBRARY, else libcuda.so.1 (one driver per
 * name, cached). Throws LibraryNotFoundError when there is no such file, NotADriverError when it does not
 * load or lacks one of the symbols above.
 */
export const loadCuda: (path?: string) => CudaDriver = driverLoader<CudaFunctions, CudaDriver>(
  { api: 'CUDA', env: CUDA_LIBRARY_ENV, defaults: [CUDA_LIBRARY], prototypes: PROTOTYPES },
  (path, c, lib) => makeDriver(path, c, lib),
);

/** cuGetErrorName, else the table, else `UNKNOWN_<code>`; and cuGetErrorString. */
function cudaErrorTexts(c: CudaFunctions): ErrorTexts {
  /** The text a cuGetError* call fills in, when it succeeds with one. */
  const text = (fn: (error: number, out: Out<string | null>) => number) => (code: number): string | undefined => {
    const out: Out<string | null> = [null];
    return fn(code, out) === CUDA_SUCCESS && out[0] ? out[0] : undefined;
  };
  return errorTexts(CUDA_ERROR_NAMES, text(c.cuGetErrorName), text(c.cuGetErrorString));
}

/** The CUdevice of an ordinal (cuDeviceGet, cached), after cuInit. */
function deviceHandles(c: CudaFunctions, { check }: Checker, ready: () => void): (ordinal: number) => number {
  const handles = new Map<number, number>();
  return (ordinal) => {
    checkOrdinal('CUDA', ordinal);
    ready();
    let handle = handles.get(ordinal);
    if (handle === undefined) {
      const out: Out<number> = [0];
      check('cuDeviceGet', c.cuDeviceGet(out, ordinal));
      handle = out[0];
      handles.set(ordinal, handle);
    }
    return handle;
  };
}

/** The primary context and the device memory. */
function contextCalls(c: CudaFunctions, checks: Checker, ready: () => void, dev: (ordinal: number) => number) {
  const { check } = checks;
  const call = readyCall(checks, ready);
  return {
    primaryCtxRetain: (ordinal: number): bigint =>
      outPointer('CUDA', checks, 'cuDevicePrimaryCtxRetain', (out) => c.cuDevicePrimaryCtxRetain(out, dev(ordinal)), 'context'),
    primaryCtxRelease: (ordinal: number): void => check('cuDevicePrimaryCtxRelease_v2', c.cuDevicePrimaryCtxRelease_v2(dev(ordinal))),
    primaryCtxReset: (ordinal: number): void => check('cuDevicePrimaryCtxReset_v2', c.cuDevicePrimaryCtxReset_v2(dev(ordinal))),
    ctxSetCurrent: (ctx: bigint | null): void => call('cuCtxSetCurrent', () => c.cuCtxSetCurrent(ctx)),
    ctxSynchronize: (): void => call('cuCtxSynchronize', () => c.cuCtxSynchronize()),
    memAlloc(bytes: number): bigint {
      ready();
      const out: Out<IntLike> = [0];
      check('cuMemAlloc_v2', c.cuMemAlloc_v2(out, checkSize('cuMemAlloc_v2 size', bytes)));
      return BigInt(out[0]);
    },
    memFree: (dptr: bigint): void => call('cuMemFree_v2', () => c.cuMemFree_v2(dptr)),
  };
}

/** The reference calls of `r`, each result checked; `devicePointer` is the driver's cuMemHostGetDevicePointer_v2. */
function cudaReferenceCalls(r: CudaReferenceFunctions, devicePointer: (address: bigint) => bigint, checks: Checker, ready: () => void): ReferenceCalls {
  const call = readyCall(checks, ready);
  return {
    streamCreate: () => {
      ready();
      return outPointer('CUDA', checks, 'cuStreamCreate', (out) => r.cuStreamCreate(out, 0), 'stream');
    },
    streamSynchronize: (stream) => call('cuStreamSynchronize', () => r.cuStreamSynchronize(stream)),
    streamDestroy: (stream) => call('cuStreamDestroy_v2', () => r.cuStreamDestroy_v2(stream)),
    memcpyHtoDAsync: (dst, src, stream) => call('cuMemcpyHtoDAsync_v2', () => r.cuMemcpyHtoDAsync_v2(dst, hostAddress('CUDA', 'cuMemcpyHtoDAsync_v2', src), src.bytes.length, stream)),
    hostDevicePointer: (host) => devicePointer(hostAddress('CUDA', 'cuMemHostGetDevicePointer_v2', host)),
    memcpyDtoD: (dst, src, bytes) => call('cuMemcpyDtoD_v2', () => r.cuMemcpyDtoD_v2(dst, src, checkSize('cuMemcpyDtoD_v2 size', bytes))),
    pointerDevicePointer: (address) => pointerQuery(checks, ready, 'cuPointerGetAttribute', (data) => r.cuPointerGetAttribute(data, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, address)),
  };
}

function makeDriver(path: string, c: CudaFunctions, lib: LibraryHandle): CudaDriver {
  const base = driverBase('CUDA', CudaError, cudaErrorTexts(c), { init: ['cuInit', () => c.cuInit(0)], count: ['cuDeviceGetCount', (out) => c.cuDeviceGetCount(out)], noDeviceCode: CUDA_ERROR_NO_DEVICE, noDeviceFrom: ['cuInit'] });
  const { checks, ready } = base;
  const dev = deviceHandles(c, checks, ready);
  const host = hostCalls('CUDA', checks, ready, {
    register: ['cuMemHostRegister_v2', c.cuMemHostRegister_v2],
    unregister: ['cuMemHostUnregister', c.cuMemHostUnregister],
    alloc: ['cuMemHostAlloc', c.cuMemHostAlloc],
    free: ['cuMemFreeHost', c.cuMemFreeHost],
    htod: ['cuMemcpyHtoD_v2', c.cuMemcpyHtoD_v2],
    dtoh: ['cuMemcpyDtoH_v2', c.cuMemcpyDtoH_v2],
  });
  const queries = deviceQueries(checks, dev, {
    name: ['cuDeviceGetName', c.cuDeviceGetName],
    pciBusId: ['cuDeviceGetPCIBusId', c.cuDeviceGetPCIBusId],
    totalMem: ['cuDeviceTotalMem_v2', c.cuDeviceTotalMem_v2],
    attribute: ['cuDeviceGetAttribute', c.cuDeviceGetAttribute],
  });
  return {
    ...driverCommon('CUDA', path, base, queries, host),
    driverVersion: () => outNumber(checks, 'cuDriverGetVersion', (out) => c.cuDriverGetVersion(out)),
    ...contextCalls(c, checks, ready, dev),
    memHostAlloc: host.alloc,
    memFreeHost: host.free,
    ...referenceCalls(c, checks, ready),
    ...referenceDriver(c, lib, checks, ready, dev),
    events: cudaEventCalls(lib, checks, ready),
  };
}

/** The calls only the reference checks make (suites/hazards/reference-*.ts): free memory, a registration's device address. */
function referenceCalls(c: CudaFunctions, checks: Checker, ready: () => void): Pick<CudaDriver, 'memGetInfo' | 'memHostGetDevicePointer'> {
  const { check } = checks;
  return {
    memGetInfo: () => memInfo(checks, ready, 'cuMemGetInfo_v2', (free, total) => c.cuMemGetInfo_v2(free, total)),
    memHostGetDevicePointer: (address: bigint): bigint => memHostGetDevicePointer(c, check, ready, address),
  };
}

/** cuMemHostGetDevicePointer_v2 (flags 0), the one binding of it: the device address of registered host memory. */
function memHostGetDevicePointer(c: CudaFunctions, check: Checker['check'], ready: () => void, address: bigint): bigint {
  ready();
  const out: Out<IntLike> = [0];
  check('cuMemHostGetDevicePointer_v2', c.cuMemHostGetDevicePointer_v2(out, address, 0));
  return BigInt(out[0]);
}

/** The reference calls and the created contexts of the driver in `lib`, or why it has none. */
function referenceDriver(c: CudaFunctions, lib: LibraryHandle, checks: Checker, ready: () => void, dev: (ordinal: number) => number): Pick<CudaDriver, 'reference' | 'createdContexts'> {
  const declared = declareOptional<CudaReferenceFunctions>(lib, REFERENCE_PROTOTYPES);
  if ('missing' in declared) return { reference: declared.missing, createdContexts: declared.missing };
  const r = declared.functions;
  return {
    reference: cudaReferenceCalls(r, (address) => memHostGetDevicePointer(c, checks.check, ready, address), checks, ready),
    createdContexts: {
      create: (ordinal) => outPointer('CUDA', checks, 'cuCtxCreate_v2', (out) => r.cuCtxCreate_v2(out, 0, dev(ordinal)), 'context'),
      destroy: (ctx) => readyCall(checks, ready)('cuCtxDestroy_v2', () => r.cuCtxDestroy_v2(ctx)),
    },
  };
}

// ---- Ops for one device ----

/**
 * Run f on ops backed by device `ordinal`: its primary context (retained, made current before every call,
 * so ops of several devices can be interleaved on one thread) and a device buffer of `bytes` bytes.
 * `register` passes READ_ONLY when the device reports READ_ONLY_HOST_REGISTER_SUPPORTED = 1 (needed for
 * read-only file mappings), else 0. allocHost is cuMemHostAlloc. When f returns or throws (or its promise
 * settles), the page-locked buffers not yet freed, the device buffer and the context retain are released;
 * a failure there goes to options.log and never replaces f's result or exception (driver-kit.ts: withDriverOps).
 * Registrations are left alone: one f did not release may still be held by the driver, and only the
 * caller knows what to do about it. Releasing the last retain of the primary context would destroy the
 * context and its registrations with it (measured on the H200: a registration left when the last retain
 * went, with no reset, unregisters afterwards with 713), so while a registration made through these ops is
 * outstanding (its unregister never succeeded) the retain is kept, for the rest of the process, and
 * options.log says so. The ops must not be used after f returns.
 */
export function withCudaOps<T>(driver: CudaDriver, ordinal: number, bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T {
  return withDriverOps(
    cudaOpsDriver(driver, 'withCudaOps', (ordinal) => driver.primaryCtxRetain(ordinal), (ordinal) => ({
      currentWhat: `making the context of CUDA device ${ordinal} current`,
      release(left) {
        const what = `the primary context retain of CUDA device ${ordinal}`;
        return left === 0
          ? { what, run: () => driver.primaryCtxRelease(ordinal) }
          : {
              what,
              kept: `${left} registration${left === 1 ? '' : 's'} made through these ops ${left === 1 ? 'is' : 'are'} not released, and the last release of the context would drop ${left === 1 ? 'it' : 'them'} behind the caller's back`,
            };
      },
    })),
    ordinal,
    bytes,
    f,
    options,
  );
}

/**
 * The ops' driver of a CUDA context that `take` gives (retained or created): held from then on, so that a context
 * that will not become current is still given back as `held` says; `register` passes cudaRegisterFlags.
 */
function cudaOpsDriver(driver: CudaDriver, owner: string, take: (ordinal: number) => bigint, held: (ordinal: number, ctx: bigint) => Omit<Held, 'makeCurrent'>): OpsDriver {
  return {
    api: 'CUDA',
    owner,
    open(ordinal, hold) {
      const ctx = take(ordinal);
      const h: Held = { makeCurrent: () => driver.ctxSetCurrent(ctx), ...held(ordinal, ctx) };
      hold(h);
      driver.ctxSetCurrent(ctx);
      return h;
    },
    registerFlags: (ordinal) => cudaRegisterFlags(driver, ordinal),
    malloc: (n) => driver.memAlloc(n),
    free: (buffer) => driver.memFree(buffer),
    calls: driverCalls(driver, { alloc: (n) => driver.memHostAlloc(n), free: (host) => driver.memFreeHost(host) }, () => driver.ctxSynchronize(), driver.reference, driver.events),
  };
}

/** READ_ONLY when the device reports READ_ONLY_HOST_REGISTER_SUPPORTED = 1, else 0. */
function cudaRegisterFlags(driver: CudaDriver, ordinal: number): number {
  try {
    if (driver.attribute(ordinal, CU_DEVICE_ATTRIBUTE.READ_ONLY_HOST_REGISTER_SUPPORTED) === 1) return CU_MEMHOSTREGISTER.READ_ONLY;
  } catch (e) {
    // A driver older than the attribute answers INVALID_VALUE: it has no READ_ONLY flag either.
    if (!(e instanceof CudaError && e.code === CUDA_ERROR_INVALID_VALUE)) throw e;
  }
  return 0;
}

/**
 * withCudaOps in a context of its own on device `ordinal` (cuCtxCreate_v2), destroyed when f returns (cuCtxDestroy_v2):
 * for the reference checks, which copy from it what the device's primary context registered. Registrations are
 * not made here. Throws when the driver cannot create contexts (driver.createdContexts says why).
 */
export function withCudaCreatedContextOps<T>(driver: CudaDriver, ordinal: number, bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T {
  const contexts = driver.createdContexts;
  if (typeof contexts === 'string') throw new Error(`CUDA: no created context: ${contexts}`);
  return withDriverOps(
    cudaOpsDriver(driver, 'withCudaCreatedContextOps', (ordinal) => contexts.create(ordinal), (ordinal, ctx) => ({
      currentWhat: `making the created context on CUDA device ${ordinal} current`,
      release: () => ({ what: `the context created on CUDA device ${ordinal}`, run: () => contexts.destroy(ctx) }),
    })),
    ordinal,
    bytes,
    f,
    options,
  );
}
