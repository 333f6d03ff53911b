// What the modules of the drivers that register host memory (cuda.ts, hip.ts, one added to the registry) do
// alike: discovery around loading the driver (a library not there is a note, a driver that then fails is the
// run's error), and each device as discovery lists it, carrying its module's policy, codes and kit.
import { errorText } from '../../src/fatal.js';
import type { Backend } from '../../results/types.js';
import type { RegistrationPolicy } from '../../src/device.js';
import {
  type Answer,
  type BackendDiscovery,
  type BackendModule,
  type DriverCode,
  type DiscoveredDevice,
  type NativeKit,
  type RegisteringDriver,
  failedToStart,
  notLoaded,
  replay,
} from '../backend.js';
import type { DeviceOps, WithOpsOptions } from '../device-ops.js';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { LibraryNotFoundError } from '../errors.js';
import { mayBeFound } from '../library-search.js';
import { libraryCandidates } from '../driver-kit.js';

/**
 * The root under which /dev is read for the count of a driver's GPUs (expectedDevices); default /. The tests and the
 * bench set it to a folder whose dev/ holds as many nvidia<N> files as the driver double has devices.
 */
export const DEV_ROOT_ENV = 'MAPPED_REG_DEV_ROOT';

/** What a registering backend's devices carry of its module. */
export interface RegisteringBackend {
  readonly id: Backend;
  readonly framework: string;
  readonly libraryEnv: string;
  readonly driver: RegisteringDriver;
}

/** One device of a driver that registers, as its module reads it from the driver. */
export interface RegisteringDeviceFacts {
  readonly ordinal: number;
  readonly name: string;
  readonly pciBusId: string;
  readonly totalMemBytes: number;
  /** The integrated query, asked once here and replayed to the model. */
  readonly integrated: Answer;
  readonly attributes?: Readonly<Record<string, number | string>>;
  /** The driver's version, as the report shows it. */
  readonly version: string;
  /** The library loaded. */
  readonly library: string;
  /** The kit, but what the module states for every device (its library variable, its "not registered"). */
  readonly kit: Omit<NativeKit, 'libraryEnv' | 'notRegistered'>;
  withOps<T>(bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T;
  keepContext(): void;
}

/** What every registering driver object answers of a device by its ordinal, and the library it loaded. */
export interface DeviceIdentity {
  readonly path: string;
  name(ordinal: number): string;
  pciBusId(ordinal: number): string;
  totalMem(ordinal: number): number;
}

/** The facts each registering module reads alike: device `ordinal`'s name, PCI bus id and memory, and the library. */
export function identityFacts(driver: DeviceIdentity, ordinal: number): Pick<RegisteringDeviceFacts, 'ordinal' | 'name' | 'pciBusId' | 'totalMemBytes' | 'library'> {
  return { ordinal, name: driver.name(ordinal), pciBusId: driver.pciBusId(ordinal), totalMemBytes: driver.totalMem(ordinal), library: driver.path };
}

/** The device `f` of backend `b`: its id `<backend>:<ordinal>`, the model's Device and its native ops. */
export function registeringDevice(b: RegisteringBackend, f: RegisteringDeviceFacts): DiscoveredDevice {
  const id = `${b.id}:${f.ordinal}`;
  const withOps = <T>(bytes: number, g: (ops: DeviceOps) => T, options?: WithOpsOptions): T => f.withOps(bytes, g, options);
  const kit: NativeKit = { ...f.kit, libraryEnv: b.libraryEnv, notRegistered: b.driver.notRegistered };
  return {
    id,
    backend: b.id,
    name: f.name,
    pciBusId: f.pciBusId.toLowerCase(),
    driver: { name: b.framework, version: f.version },
    integrated: f.integrated.ok ? f.integrated.value : null,
    ...(f.integrated.ok ? {} : { integratedError: errorText(f.integrated.error) }),
    type: 'gpu',
    totalMemBytes: f.totalMemBytes,
    ...(f.attributes ? { attributes: f.attributes } : {}),
    device: { id, framework: b.framework, name: f.name, type: 'gpu', sharedMemoryQuery: replay(f.integrated), withOps, registration: b.driver.policy },
    native: { api: b.driver.api, library: f.library, ordinal: f.ordinal, kit, withOps, keepContext: () => f.keepContext() },
  };
}

/**
 * The discovery of backend `id`: its driver loaded (`load` throwing: not loaded, a note), then its devices
 * listed (`list` throwing: the run's error, naming the library).
 */
export function discoverRegistering<D extends { readonly path: string }>(
  id: Backend,
  load: () => D,
  list: (driver: D) => { devices: DiscoveredDevice[]; note?: string },
): BackendDiscovery {
  let driver: D;
  try {
    driver = load();
  } catch (e) {
    return notLoaded(id, e);
  }
  try {
    const { devices, note } = list(driver);
    return { devices, report: { backend: id, library: driver.path, devices: devices.length, ...(note ? { note } : {}) } };
  } catch (e) {
    return { devices: [], report: failedToStart(id, driver.path, e) };
  }
}

/** What a registering backend's module states; the rest follows from its id (its group and device ids). */
export interface RegisteringBackendSpec<I extends Backend, D extends { readonly path: string }> {
  readonly id: I;
  /** The framework name, which its driver's messages also carry ('CUDA', 'HIP'). */
  readonly framework: string;
  readonly libraryEnv: string;
  /** The library's names, tried in order when libraryEnv is not set (as its loader tries them). */
  readonly libraries: readonly string[];
  /**
   * The device nodes without one of which its library finds no device (HIP: /dev/kfd, the interface of AMD's
   * kernel driver that the HIP runtime opens, or /dev/dxg, ROCm's under WSL): where none exists, a library found
   * under a default name is not loaded, and no process is started for it (HIP's start alone took 0.42 s on the
   * H200, which had a ROCm package's libamdhip64.so.5 and no AMD GPU).
   */
  readonly deviceNodes?: readonly string[];
  /**
   * A device node each of its GPUs has in /dev (CUDA: nvidia0, nvidia1, ...), and the variable that hides devices
   * from its driver (CUDA_VISIBLE_DEVICES): expectedDevices counts them. Absent: the count is not told.
   */
  readonly gpuNodes?: { readonly pattern: RegExp; readonly visibleEnv?: string };
  /** [code, name] of "host memory not registered" and of "invalid value". */
  readonly codes: { readonly notRegistered: readonly [number, string]; readonly invalidValue: readonly [number, string] };
  readonly failedQuery: RegistrationPolicy['failedQuery'];
  readonly load: () => D;
  readonly list: (driver: D) => { devices: DiscoveredDevice[]; note?: string };
}

/**
 * The module of a backend whose driver registers host memory: a discovery group of its own (its process keeps its
 * device), device ids `<id>:<ordinal>`.
 */
export function registeringBackend<I extends Backend, D extends { readonly path: string }>(s: RegisteringBackendSpec<I, D>): BackendModule & RegisteringBackend & { readonly id: I; readonly registers: true } {
  const code = ([c, name]: readonly [number, string]): DriverCode => ({ code: c, name });
  return {
    id: s.id,
    framework: s.framework,
    libraryEnv: s.libraryEnv,
    group: s.id,
    deviceId: `${s.id}:\\d+`,
    registers: true,
    driver: { api: s.framework, notRegistered: code(s.codes.notRegistered), invalidValue: code(s.codes.invalidValue), policy: { failedQuery: s.failedQuery } },
    discover: () => discoverRegistering(s.id, s.load, s.list),
    expectedDevices: (env = process.env, root = env[DEV_ROOT_ENV] || '/') => {
      if (!s.gpuNodes) return undefined;
      let nodes: number;
      try {
        nodes = readdirSync(join(root, 'dev')).filter((name) => s.gpuNodes!.pattern.test(name)).length;
      } catch {
        return undefined;
      }
      // the variable's entries bound the count (an entry it cannot use ends the list for the driver: fewer still)
      const visible = s.gpuNodes.visibleEnv ? env[s.gpuNodes.visibleEnv] : undefined;
      return visible === undefined ? nodes : Math.min(nodes, visible.trim() === '' ? 0 : visible.split(',').length);
    },
    notFound: (env = process.env, root = '/') => {
      // the candidates of its loader: the variable's path, else the names
      const candidates = libraryCandidates({ env: s.libraryEnv, defaults: s.libraries }, undefined, env);
      const found = candidates.find((c) => mayBeFound(c, env));
      if (found === undefined) return notLoaded(s.id, new LibraryNotFoundError(s.framework, [...candidates])).report;
      // a library the variable names is loaded as asked; a default one with no device node to drive is not
      const nodes = s.deviceNodes ?? [];
      if (env[s.libraryEnv] || nodes.length === 0 || nodes.some((n) => existsSync(join(root, n)))) return undefined;
      return { backend: s.id, library: null, devices: 0, note: `${s.framework}: no device here: no ${nodes.join(' or ')} (its kernel driver is not loaded); ${found} not loaded` };
    },
  };
}
