// One list of devices across backends, with stable ids (cuda:0, hip:0, opencl:0, vulkan:0, cpu), each carrying
// the model's Device (its integrated query and registration ops). A missing library is a note, not an error.
import { readFileSync } from 'node:fs';
import { cpus, release } from 'node:os';
import type { Device, DeviceType } from '../src/device.js';
import { errorText } from '../src/fatal.js';
import {
  CAN_MAP_HOST_MEMORY,
  HOST_REGISTER_SUPPORTED,
  INTEGRATED,
  PAGEABLE_MEMORY_ACCESS,
  READ_ONLY_HOST_REGISTER_SUPPORTED,
  type CudaDriver,
  loadCuda,
  withCudaOps,
} from './cuda.js';
import type { DeviceOps, WithOpsOptions } from './device-ops.js';
import { DriverError } from './errors.js';
import { type HipDriver, loadHip, withHipOps } from './hip.js';
import { discoverOpenCL, type DiscoveredDevice as ApiDevice } from './opencl.js';
import { discoverVulkan } from './vulkan.js';

import { type Backend, BACKENDS, type BackendReport } from '../results/types.js';

export { type Backend, BACKENDS, type BackendReport };

export interface DiscoveredDevice {
  readonly id: string;
  readonly backend: Backend;
  readonly name: string;
  readonly pciBusId: string | null;
  readonly driver: { readonly name: string; readonly version: string };
  /** The integrated answer: null when the backend does not say or the query failed (see integratedError). */
  readonly integrated: boolean | null;
  readonly integratedError?: string;
  readonly type: DeviceType;
  readonly totalMemBytes?: number;
  /** Backend attributes read at discovery (CUDA: the five of the facts file), by name. */
  readonly attributes?: Readonly<Record<string, number | string>>;
  /** The model's view of the device: what staticVerdict and probe take. */
  readonly device: Device;
  /**
   * CUDA and HIP only: the driver and the device's raw ops, with the extras the hazard checks need
   * (registerWithFlags, raw addresses). Registrations made through these are NOT recorded in the model's table:
   * the caller records them.
   */
  readonly native?: NativeDevice;
}

export type NativeDevice = ({ readonly api: 'CUDA'; readonly driver: CudaDriver } | { readonly api: 'HIP'; readonly driver: HipDriver }) & {
  readonly ordinal: number;
  /** options.log: where a failed or deliberately skipped release goes (default: a process warning). */
  withOps<T>(bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T;
  /**
   * Keeps the device's context for the rest of the process, so that each withOps does not create it again
   * (CUDA: one primary context retain, never released: the last release destroys the context, and making it
   * again cost about 0.2 s on the H200, once per check; HIP keeps its context for the process anyway: nothing
   * to do). Idempotent. For a process that uses the device until it exits, such as a device's runner.
   */
  keepContext(): void;
};

export interface Discovery {
  readonly devices: DiscoveredDevice[];
  readonly backends: BackendReport[];
  /** True when a CUDA or HIP driver library was loaded. */
  readonly gpuDriverFound: boolean;
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

/** A query answered once, at discovery, and replayed to the model (which asks the backend's hook once). */
type Answer = { ok: true; value: boolean } | { ok: false; error: unknown };

function ask(q: () => boolean): Answer {
  try {
    return { ok: true, value: q() };
  } catch (error) {
    return { ok: false, error };
  }
}

const replay = (a: Answer) => (): boolean => {
  if (!a.ok) throw a.error;
  return a.value;
};

function nvidiaModuleVersion(): string | undefined {
  try {
    return readFileSync('/sys/module/nvidia/version', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * The report of a GPU driver library that loaded and then failed (its init returned anything but "no device",
 * or a later call of the discovery failed): the run's error, said once (DriverError's text already names the
 * API, the call and the code).
 */
function failedToStart(backend: 'cuda' | 'hip', path: string, e: unknown): BackendReport {
  const message = errorText(e);
  const initError = e instanceof DriverError ? { message, call: e.call, code: e.code, codeName: e.codeName } : { message };
  return { backend, library: path, devices: 0, note: message, initError };
}

function discoverCuda(): { devices: DiscoveredDevice[]; report: BackendReport } {
  let driver;
  try {
    driver = loadCuda();
  } catch (e) {
    return { devices: [], report: { backend: 'cuda', library: null, devices: 0, note: errorText(e) } };
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
        native: { api: 'CUDA', driver, ordinal: i, withOps, keepContext: keepCudaContext(driver, i) },
      });
    }
    return { devices, report: { backend: 'cuda', library: driver.path, devices: count, ...(reason ? { note: `CUDA: ${reason}` } : {}) } };
  } catch (e) {
    return { devices: [], report: failedToStart('cuda', driver.path, e) };
  }
}

function discoverHip(): { devices: DiscoveredDevice[]; report: BackendReport } {
  let driver;
  try {
    driver = loadHip();
  } catch (e) {
    return { devices: [], report: { backend: 'hip', library: null, devices: 0, note: errorText(e) } };
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
        native: { api: 'HIP', driver, ordinal: i, withOps, keepContext: () => {} },
      });
    }
    const note = reason ? `HIP: ${reason} (${driver.path}, HIP ${version})` : undefined;
    return { devices, report: { backend: 'hip', library: driver.path, devices: count, ...(note ? { note } : {}) } };
  } catch (e) {
    return { devices: [], report: failedToStart('hip', driver.path, e) };
  }
}

const apiType = (t: ApiDevice['type']): DeviceType => (t === 'cpu' ? 'cpu' : t === 'accelerator' ? 'accelerator' : t === 'other' ? 'other' : 'gpu');

function discoverApi(backend: 'opencl' | 'vulkan'): { devices: DiscoveredDevice[]; report: BackendReport } {
  const found = backend === 'opencl' ? discoverOpenCL() : discoverVulkan();
  const framework = backend === 'opencl' ? 'OpenCL' : 'Vulkan';
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

/** Every device of the backends asked for (all by default), in backend order. */
export function discover(backends: readonly Backend[] = BACKENDS): Discovery {
  const devices: DiscoveredDevice[] = [];
  const reports: BackendReport[] = [];
  let gpuDriverFound = false;
  for (const b of BACKENDS) {
    if (!backends.includes(b)) continue;
    if (b === 'cpu') {
      devices.push(cpuDevice());
      reports.push({ backend: 'cpu', library: null, devices: 1 });
      continue;
    }
    const r = b === 'cuda' ? discoverCuda() : b === 'hip' ? discoverHip() : discoverApi(b);
    devices.push(...r.devices);
    reports.push(r.report);
    // a GPU driver was found when its library loaded (its report names it), whatever it then said
    gpuDriverFound ||= isGpuDriver({ backend: b }) && r.report.library !== null;
  }
  return { devices, backends: reports, gpuDriverFound };
}

// ---- discovery as data: what one process found, handed to another ----

/** True for a device of a GPU driver (CUDA, HIP): one that registers host memory, and whose process runs the probe. */
export const isGpuDriver = (d: Pick<DiscoveredDevice, 'backend'>): boolean => d.backend === 'cuda' || d.backend === 'hip';

/** The JSON-safe part of a discovered device, with its framework. */
export type PlainDevice = Omit<DiscoveredDevice, 'device' | 'native'> & { framework: string };

/** A Discovery as data (no driver handles, no hooks): what the discovering process reports to the command. */
export interface PlainDiscovery {
  readonly devices: PlainDevice[];
  readonly backends: BackendReport[];
  readonly gpuDriverFound: boolean;
}

export function plainDevice(d: DiscoveredDevice): PlainDevice {
  const { device, native: _native, ...plain } = d;
  return { ...plain, framework: device.framework };
}

export function plainDiscovery(found: Discovery): PlainDiscovery {
  return { devices: found.devices.map(plainDevice), backends: found.backends, gpuDriverFound: found.gpuDriverFound };
}

/**
 * A device rebuilt from its data, for what needs no driver: the static verdict (the integrated answer given at
 * discovery is replayed, a failed query as the error it gave) and the reports. It has no ops.
 */
export function deviceFromPlain(p: PlainDevice): DiscoveredDevice {
  const { framework, ...rest } = p;
  const asked = isGpuDriver(p);
  const sharedMemoryQuery = (): boolean => {
    if (p.integrated === null) throw new Error(p.integratedError ?? `${p.id}: the integrated query failed at discovery`);
    return p.integrated;
  };
  return { ...rest, device: { id: p.id, framework, name: p.name, type: p.type, ...(asked ? { sharedMemoryQuery } : {}) } };
}
