// The CUDA backend: libcuda.so.1 (bindings/cuda.ts), a discovery group of its own, native ops on each device.
import { readFileSync } from 'node:fs';
import { errorText } from '../../src/fatal.js';
import { type BackendModule, type DiscoveredDevice, type NativeKit, ask, failedToStart, notLoaded, replay } from '../backend.js';
import {
  CAN_MAP_HOST_MEMORY,
  CUDA_LIBRARY_ENV,
  HOST_REGISTER_SUPPORTED,
  INTEGRATED,
  PAGEABLE_MEMORY_ACCESS,
  READ_ONLY,
  READ_ONLY_HOST_REGISTER_SUPPORTED,
  type CudaDriver,
  loadCuda,
  withCudaOps,
} from '../cuda.js';
import type { DeviceOps, WithOpsOptions } from '../device-ops.js';

const NOT_REGISTERED_NAME = 'CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED';

function nvidiaModuleVersion(): string | undefined {
  try {
    return readFileSync('/sys/module/nvidia/version', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** NativeDevice.keepContext for CUDA device `ordinal`: one primary context retain, taken once, never released. */
function keepCudaContext(driver: CudaDriver, ordinal: number): () => void {
  let kept = false;
  return () => {
    if (kept) return;
    driver.primaryCtxRetain(ordinal);
    kept = true;
  };
}

function cudaKit(driver: CudaDriver, ordinal: number): NativeKit {
  return {
    libraryEnv: CUDA_LIBRARY_ENV,
    notRegisteredName: NOT_REGISTERED_NAME,
    contextReset: {
      call: 'cuDevicePrimaryCtxReset_v2',
      reset: () => driver.primaryCtxReset(ordinal),
      releaseKept: () => driver.primaryCtxRelease(ordinal),
    },
    readOnlyFlag: READ_ONLY,
    attributeCall: () => ({ call: 'cuDeviceGetAttribute', query: () => driver.attribute(ordinal, INTEGRATED) }),
  };
}

function discoverCuda(): ReturnType<BackendModule['discover']> {
  let driver: CudaDriver;
  try {
    driver = loadCuda();
  } catch (e) {
    return notLoaded('cuda', e);
  }
  try {
    const v = driver.driverVersion();
    const module = nvidiaModuleVersion();
    const version = `${Math.floor(v / 1000)}.${(v % 1000) / 10}${module ? ` (kernel module ${module})` : ''}`;
    const { count, reason } = driver.devices();
    const devices: DiscoveredDevice[] = [];
    for (let i = 0; i < count; i++) {
      const attributes: Record<string, number | string> = {};
      for (const [name, id] of [
        ['CAN_MAP_HOST_MEMORY', CAN_MAP_HOST_MEMORY],
        ['PAGEABLE_MEMORY_ACCESS', PAGEABLE_MEMORY_ACCESS],
        ['HOST_REGISTER_SUPPORTED', HOST_REGISTER_SUPPORTED],
        ['READ_ONLY_HOST_REGISTER_SUPPORTED', READ_ONLY_HOST_REGISTER_SUPPORTED],
      ] as const) {
        try {
          attributes[name] = driver.attribute(i, id);
        } catch (e) {
          attributes[name] = errorText(e);
        }
      }
      const integrated = ask(() => driver.attribute(i, INTEGRATED) !== 0);
      attributes.INTEGRATED = integrated.ok ? Number(integrated.value) : errorText(integrated.error);
      const name = driver.name(i);
      const withOps = <T>(bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T => withCudaOps(driver, i, bytes, f, options);
      devices.push({
        id: `cuda:${i}`,
        backend: 'cuda',
        name,
        pciBusId: driver.pciBusId(i).toLowerCase(),
        driver: { name: 'CUDA', version },
        integrated: integrated.ok ? integrated.value : null,
        ...(integrated.ok ? {} : { integratedError: errorText(integrated.error) }),
        type: 'gpu',
        totalMemBytes: driver.totalMem(i),
        attributes,
        device: {
          id: `cuda:${i}`,
          framework: 'CUDA',
          name,
          type: 'gpu',
          sharedMemoryQuery: replay(integrated),
          withOps,
        },
        native: { api: 'CUDA', driver, ordinal: i, kit: cudaKit(driver, i), withOps, keepContext: keepCudaContext(driver, i) },
      });
    }
    return { devices, report: { backend: 'cuda', library: driver.path, devices: count, ...(reason ? { note: `CUDA: ${reason}` } : {}) } };
  } catch (e) {
    return { devices: [], report: failedToStart('cuda', driver.path, e) };
  }
}

export const cuda = {
  id: 'cuda',
  framework: 'CUDA',
  libraryEnv: CUDA_LIBRARY_ENV,
  group: 'cuda',
  registers: true,
  errors: { api: 'CUDA', notRegisteredName: NOT_REGISTERED_NAME },
  discover: discoverCuda,
} as const satisfies BackendModule;
